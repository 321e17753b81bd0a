/* SPDX-License-Identifier: MIT */
/*
 * copygen test fixture: the layout of arch/riscv/lib/uaccess.S in kernels
 * from 2017 to 2020, written for copygen from the algorithm in
 * docs/strategies.md (it is not taken from a kernel tree).
 *
 * What makes the layout: ENTRY/ENDPROC, two ENTRY lines giving the copy
 * both names, a `fixup` macro under .altmacro that names each access with
 * a LOCAL label and writes its __ex_table entry by hand as a pair of
 * absolute addresses (RISCV_PTR insn, fixup), SUM set and cleared with
 * csrs/csrc on sstatus by name, and the fault code in .fixup.
 *
 * The copy is the design of those years: when src and dst agree modulo
 * SZREG, bytes up to the first aligned source word, then one word at a
 * time; every other byte on its own.  Its fault return is exact (a word
 * access is aligned on both sides, so a fault takes the whole word): the
 * fault code returns end - a0, where a0 is the first byte not stored.
 */

#include <linux/linkage.h>
#include <asm-generic/export.h>
#include <asm/asm.h>
#include <asm/csr.h>

	.altmacro
	.macro fixup op reg addr lbl
	LOCAL _epc
_epc:
	\op \reg, \addr
	.section __ex_table,"a"
	.balign RISCV_SZPTR
	RISCV_PTR _epc, \lbl
	.previous
	.endm

	.text

ENTRY(__asm_copy_to_user)
ENTRY(__asm_copy_from_user)

	/* S-mode may touch user pages from here on. */
	li	t6, SR_SUM
	csrs	sstatus, t6

	/*
	 * a3: end of src (the loops walk the source), t5: end of dst (the
	 * fault code counts from it).  Words only when both pointers have
	 * the same offset in their word.
	 */
	add	a3, a1, a2
	add	t5, a0, a2
	xor	t0, a0, a1
	andi	t0, t0, SZREG-1
	bnez	t0, 2f

	/*
	 * t0: the first aligned source address, t1: the end of the last
	 * whole source word.  No whole word between them: bytes only.
	 */
	addi	t0, a1, SZREG-1
	andi	t0, t0, ~(SZREG-1)
	andi	t1, a3, ~(SZREG-1)
	bgeu	t0, t1, 2f
	bltu	a1, t0, 4f
1:
	/* One word a turn, both pointers aligned. */
	fixup REG_L, t2, (a1), 10f
	fixup REG_S, t2, (a0), 10f
	addi	a1, a1, SZREG
	addi	a0, a0, SZREG
	bltu	a1, t1, 1b
2:
	bltu	a1, a3, 5f
3:
	/* Done: user pages out of reach again. */
	csrc	sstatus, t6
	li	a0, 0
	ret
4:
	/* Head: bytes up to the first aligned source word. */
	fixup lbu, t2, (a1), 10f
	fixup sb, t2, (a0), 10f
	addi	a1, a1, 1
	addi	a0, a0, 1
	bltu	a1, t0, 4b
	j	1b
5:
	/* Tail, or a copy that cannot use words: bytes up to a3. */
	fixup lbu, t2, (a1), 10f
	fixup sb, t2, (a0), 10f
	addi	a1, a1, 1
	addi	a0, a0, 1
	bltu	a1, a3, 5b
	j	3b
ENDPROC(__asm_copy_to_user)
ENDPROC(__asm_copy_from_user)
EXPORT_SYMBOL(__asm_copy_to_user)
EXPORT_SYMBOL(__asm_copy_from_user)


ENTRY(__clear_user)

	/* S-mode may touch user pages from here on. */
	li	t6, SR_SUM
	csrs	sstatus, t6

	/*
	 * a3: end of dst; t0: dst rounded up and t1: a3 rounded down to
	 * SZREG.  Words fill [t0, t1) when it holds one.
	 */
	add	a3, a0, a1
	addi	t0, a0, SZREG-1
	andi	t0, t0, ~(SZREG-1)
	andi	t1, a3, ~(SZREG-1)
	bgeu	t0, t1, 2f
	bltu	a0, t0, 4f
1:
	fixup REG_S, zero, (a0), 11f
	addi	a0, a0, SZREG
	bltu	a0, t1, 1b
2:
	bltu	a0, a3, 5f
3:
	/* Done: user pages out of reach again. */
	csrc	sstatus, t6
	li	a0, 0
	ret
4:
	/* Head: bytes up to t0. */
	fixup sb, zero, (a0), 11f
	addi	a0, a0, 1
	bltu	a0, t0, 4b
	j	1b
5:
	/* Tail: bytes up to a3. */
	fixup sb, zero, (a0), 11f
	addi	a0, a0, 1
	bltu	a0, a3, 5b
	j	3b
ENDPROC(__clear_user)
EXPORT_SYMBOL(__clear_user)


	/*
	 * Fault code: the trap resumed here with sstatus as it was, SUM
	 * set.  Clear it, and return the bytes not copied (cleared).
	 */
	.section .fixup,"ax"
	.balign 4
10:
	csrc	sstatus, t6
	sub	a0, t5, a0
	ret
11:
	csrc	sstatus, t6
	sub	a0, a3, a0
	ret
	.previous
