/* SPDX-License-Identifier: MIT */
/*
 * copygen test fixture: the layout of arch/riscv/lib/uaccess.S in 2021
 * kernel trees (and vendor trees since), written for copygen from the
 * algorithm in docs/strategies.md (it is not taken from a kernel tree).
 *
 * What makes the layout: ENTRY/END instead of SYM_FUNC_*, two ENTRY lines
 * giving the copy both names, EXPORT_SYMBOL from <asm-generic/export.h>, a
 * `fixup` macro of the file's own that writes each __ex_table entry by
 * hand as a pair of absolute addresses (RISCV_PTR insn, fixup: 16 bytes on
 * RV64), and the fault code in a section of its own, .fixup.
 *
 * The copy is the 2021 design (below 9*SZREG-1 bytes copy bytes, else a
 * dst head, an 8-word block loop with every load before any store or a
 * one-word shift copy, a byte tail) with exact fault returns: a word
 * access that faults moves a0/a1 to the first byte not stored and resumes
 * the byte tail, which copies up to the faulting byte.
 */

#include <linux/linkage.h>
#include <asm-generic/export.h>
#include <asm/asm.h>
#include <asm/csr.h>

/* One user access; a fault in it resumes at \lbl. */
	.macro fixup op reg addr lbl
100:
	\op \reg, \addr
	.section __ex_table,"a"
	.balign RISCV_SZPTR
	RISCV_PTR 100b, \lbl
	.previous
	.endm

	.text

ENTRY(__asm_copy_to_user)
ENTRY(__asm_copy_from_user)

	/* User pages in reach until we return. */
	li	t6, SR_SUM
	csrs	CSR_STATUS, t6

	/*
	 * a3: one past the last byte of dst, what every return counts from.
	 * Fewer than 9*SZREG-1 bytes (a head of up to SZREG-1 and one whole
	 * block) are copied a byte at a time.
	 */
	add	a3, a0, a2
	li	t0, 9*SZREG-1
	bltu	a2, t0, .Lcopy_tail

	/* Head: bytes until dst is SZREG-aligned (t1: dst rounded up). */
	addi	t1, a0, SZREG-1
	andi	t1, t1, ~(SZREG-1)
	beq	a0, t1, 2f
1:
	fixup lbu, t0, 0(a1), 10f
	fixup sb, t0, 0(a0), 10f
	addi	a1, a1, 1
	addi	a0, a0, 1
	bltu	a0, t1, 1b
2:
	/* dst aligned; an unaligned source takes the shift copy. */
	andi	t3, a1, SZREG-1
	bnez	t3, .Lcopy_shift

	/*
	 * Blocks of eight words, loads first.  t4: the last a0 with a whole
	 * block before a3.  A load fault stored nothing of the block (retry
	 * from a0: 12f); a store fault after k words retries k words on
	 * (13f + k).
	 */
	addi	t4, a3, -8*SZREG
3:
	fixup REG_L, a4, 0(a1), 12f
	fixup REG_L, a5, SZREG(a1), 12f
	fixup REG_L, a6, 2*SZREG(a1), 12f
	fixup REG_L, a7, 3*SZREG(a1), 12f
	fixup REG_L, t0, 4*SZREG(a1), 12f
	fixup REG_L, t1, 5*SZREG(a1), 12f
	fixup REG_L, t2, 6*SZREG(a1), 12f
	fixup REG_L, t5, 7*SZREG(a1), 12f
	fixup REG_S, a4, 0(a0), 12f
	fixup REG_S, a5, SZREG(a0), 13f
	fixup REG_S, a6, 2*SZREG(a0), 14f
	fixup REG_S, a7, 3*SZREG(a0), 15f
	fixup REG_S, t0, 4*SZREG(a0), 16f
	fixup REG_S, t1, 5*SZREG(a0), 17f
	fixup REG_S, t2, 6*SZREG(a0), 18f
	fixup REG_S, t5, 7*SZREG(a0), 19f
	addi	a1, a1, 8*SZREG
	addi	a0, a0, 8*SZREG
	bleu	a0, t4, 3b
	j	.Lcopy_tail

.Lcopy_shift:
	/*
	 * Shift copy: aligned source words only, each destination word
	 *	(prev >> t1) | (next << t2)
	 * with t1 = 8 * (src & (SZREG-1)) and t2 = 64 - t1 (the shifts read
	 * six bits).  t3 = src & (SZREG-1) puts a1 back on the first source
	 * byte not copied, after the loop or a fault (12f after 11f).
	 */
	slli	t1, t3, 3
	li	t2, 8*SZREG
	sub	t2, t2, t1
	andi	a1, a1, ~(SZREG-1)
	fixup REG_L, a5, 0(a1), 11f
	addi	t4, a3, -SZREG
4:
	fixup REG_L, a6, SZREG(a1), 11f
	srl	a4, a5, t1
	sll	a7, a6, t2
	or	a4, a4, a7
	fixup REG_S, a4, 0(a0), 11f
	mv	a5, a6
	addi	a1, a1, SZREG
	addi	a0, a0, SZREG
	bleu	a0, t4, 4b
	add	a1, a1, t3

.Lcopy_tail:
	/* Bytes: short copies, what the loops left, every retry. */
	bgeu	a0, a3, 6f
5:
	fixup lbu, t0, 0(a1), 10f
	fixup sb, t0, 0(a0), 10f
	addi	a1, a1, 1
	addi	a0, a0, 1
	bltu	a0, a3, 5b
6:
	csrc	CSR_STATUS, t6
	li	a0, 0
	ret
END(__asm_copy_to_user)
END(__asm_copy_from_user)
EXPORT_SYMBOL(__asm_copy_to_user)
EXPORT_SYMBOL(__asm_copy_from_user)


ENTRY(__clear_user)

	li	t6, SR_SUM
	csrs	CSR_STATUS, t6

	/*
	 * a3: one past the last byte; t0: dst rounded up, t1: a3 rounded
	 * down to SZREG.  Words go to [t0, t1) when it holds one.
	 */
	add	a3, a0, a1
	addi	t0, a0, SZREG-1
	andi	t0, t0, ~(SZREG-1)
	andi	t1, a3, ~(SZREG-1)
	bgeu	t0, t1, 3f
	bgeu	a0, t0, 2f
1:
	fixup sb, zero, 0(a0), 20f
	addi	a0, a0, 1
	bltu	a0, t0, 1b
2:
	fixup REG_S, zero, 0(a0), 20f
	addi	a0, a0, SZREG
	bltu	a0, t1, 2b
3:
	bgeu	a0, a3, 5f
4:
	fixup sb, zero, 0(a0), 20f
	addi	a0, a0, 1
	bltu	a0, a3, 4b
5:
	csrc	CSR_STATUS, t6
	li	a0, 0
	ret
END(__clear_user)
EXPORT_SYMBOL(__clear_user)


	/*
	 * Fault code.  The trap resumed here with sstatus as it was: SUM is
	 * still set, and every way out of here clears it.
	 */
	.section .fixup,"ax"
	.balign 4
10:
	/* A byte access of the copy faulted at a0. */
	csrc	CSR_STATUS, t6
	sub	a0, a3, a0
	ret
11:
	/* The shift copy faulted: a1 back on the byte that goes to a0. */
	add	a1, a1, t3
12:
	j	.Lcopy_tail
13:
	/* Store k of a block faulted: words 0..k-1 were stored. */
	addi	a0, a0, SZREG
	addi	a1, a1, SZREG
	j	.Lcopy_tail
14:
	addi	a0, a0, 2*SZREG
	addi	a1, a1, 2*SZREG
	j	.Lcopy_tail
15:
	addi	a0, a0, 3*SZREG
	addi	a1, a1, 3*SZREG
	j	.Lcopy_tail
16:
	addi	a0, a0, 4*SZREG
	addi	a1, a1, 4*SZREG
	j	.Lcopy_tail
17:
	addi	a0, a0, 5*SZREG
	addi	a1, a1, 5*SZREG
	j	.Lcopy_tail
18:
	addi	a0, a0, 6*SZREG
	addi	a1, a1, 6*SZREG
	j	.Lcopy_tail
19:
	addi	a0, a0, 7*SZREG
	addi	a1, a1, 7*SZREG
	j	.Lcopy_tail
20:
	/* A store of __clear_user faulted at a0. */
	csrc	CSR_STATUS, t6
	sub	a0, a3, a0
	ret
	.previous
