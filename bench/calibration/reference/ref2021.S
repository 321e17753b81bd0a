/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Calibration reference (bench/calibration/calibrate.py), written for copygen: the 2021
 * copy_to_user algorithm of docs/strategies.md with the loop *shapes* of the
 * routine that was measured (section 5), so the u74 model can be checked
 * against the hardware figures independently of copygen's own scheduling.
 *
 * It differs from examples/kernel2021.copy's generated code in one place: the
 * shift loop shifts `prev` right *before* the next aligned word is loaded into
 * the same register, so no `mv prev, next` is needed (8 instructions per word,
 * not 9).  On the u74 model that is 5 cycles per word instead of 6.
 *
 * Parameters: a0 - dst, a1 - src, a2 - n.  Returns: a0 - bytes not copied.
 */

#include <linux/linkage.h>
#include <asm/asm.h>
#include <asm/asm-extable.h>
#include <asm/csr.h>

	.macro fixup op reg addr lbl
.Lref_access_\@:
	\op \reg, \addr
	_asm_extable	.Lref_access_\@, \lbl
	.endm

	.text
SYM_FUNC_START(__asm_copy_to_user)
	li	t6, SR_SUM
	csrs	CSR_STATUS, t6
	add	t5, a0, a2			/* t5: end of dst, for the fault return */
	li	a3, 71				/* 9*SZREG - 1 */
	bltu	a2, a3, .Lref_bytes

	/* byte head until dst is aligned */
	addi	t1, a0, SZREG-1
	andi	t1, t1, -SZREG
	beq	a0, t1, .Lref_head_done
1:
	fixup lbu, a5, 0(a1), .Lref_fault
	addi	a1, a1, 1
	fixup sb, a5, 0(a0), .Lref_fault
	addi	a0, a0, 1
	bltu	a0, t1, 1b
.Lref_head_done:
	andi	a3, a1, SZREG-1
	bnez	a3, .Lref_shift

	/* co-aligned: 8 words per iteration, all loads then all stores */
	addi	t0, t5, -8*SZREG
2:
	fixup REG_L, a4, 0(a1), .Lref_fault
	fixup REG_L, a5, SZREG(a1), .Lref_fault
	fixup REG_L, a6, 2*SZREG(a1), .Lref_fault
	fixup REG_L, a7, 3*SZREG(a1), .Lref_fault
	fixup REG_L, t1, 4*SZREG(a1), .Lref_fault
	fixup REG_L, t2, 5*SZREG(a1), .Lref_fault
	fixup REG_L, t3, 6*SZREG(a1), .Lref_fault
	fixup REG_L, t4, 7*SZREG(a1), .Lref_fault
	fixup REG_S, a4, 0(a0), .Lref_fault
	fixup REG_S, a5, SZREG(a0), .Lref_fault
	fixup REG_S, a6, 2*SZREG(a0), .Lref_fault
	fixup REG_S, a7, 3*SZREG(a0), .Lref_fault
	fixup REG_S, t1, 4*SZREG(a0), .Lref_fault
	fixup REG_S, t2, 5*SZREG(a0), .Lref_fault
	fixup REG_S, t3, 6*SZREG(a0), .Lref_fault
	fixup REG_S, t4, 7*SZREG(a0), .Lref_fault
	addi	a0, a0, 8*SZREG
	addi	a1, a1, 8*SZREG
	bleu	a0, t0, 2b
	j	.Lref_bytes

	/* misaligned source: aligned loads, each dst word from two neighbours */
.Lref_shift:
	andi	t1, t5, -SZREG			/* t1: end of the aligned part of dst */
	andi	a1, a1, -SZREG
	slli	t3, a3, 3			/* t3: shr = 8 * (src & 7) */
	neg	t4, t3				/* t4: shl = 64 - shr (mod 64) */
	fixup REG_L, a5, 0(a1), .Lref_fault
3:
	srl	a4, a5, t3			/* prev >> shr, before a5 is reloaded */
	fixup REG_L, a5, SZREG(a1), .Lref_fault
	addi	a1, a1, SZREG
	sll	a2, a5, t4
	or	a2, a2, a4
	fixup REG_S, a2, 0(a0), .Lref_fault
	addi	a0, a0, SZREG
	bltu	a0, t1, 3b
	add	a1, a1, a3			/* back to the first source byte not copied */

	/* byte tail (and small sizes) */
.Lref_bytes:
	bgeu	a0, t5, .Lref_done
4:
	fixup lbu, a5, 0(a1), .Lref_fault
	addi	a1, a1, 1
	fixup sb, a5, 0(a0), .Lref_fault
	addi	a0, a0, 1
	bltu	a0, t5, 4b
.Lref_done:
	csrc	CSR_STATUS, t6
	li	a0, 0
	ret
.Lref_fault:
	csrc	CSR_STATUS, t6
	sub	a0, t5, a0
	ret
SYM_FUNC_END(__asm_copy_to_user)
