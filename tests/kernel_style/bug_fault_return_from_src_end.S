/* SPDX-License-Identifier: MIT */
/*
 * BUG (docs/contract.md; before 2018): the copy's fault exit computes
 * its return from the end of the *source* minus the *destination*
 * pointer, a meaningless number (often larger than the size, or
 * negative).  __clear_user is unaffected.  Clauses: C2 (N outside
 * [0, n]), and C3/C4 when it happens to fall inside.
 *
 * Otherwise identical to uaccess_2021_ok.S, whose notes follow; README.md
 * next to it lists the clause a verifier must report.
 *
 * copygen test fixture: a hand-written user-copy routine in the style of
 * arch/riscv/lib/uaccess.S, written for copygen from the algorithm described
 * in docs/strategies.md (it is not taken from a kernel tree).
 *
 * The 2021 design: below 9*SZREG-1 bytes copy bytes; otherwise align dst
 * with a byte head, then either an 8-word block loop (all loads, then all
 * stores) when src is aligned too, or a one-word shift copy when it is not;
 * finish with bytes.  Every user access has an exception-table entry; the
 * fixup returns end - a0 with a0 at the start of the block in flight (the
 * "block" policy: a store fault inside a block counts the block's earlier
 * stores as not copied).
 */

#include <linux/linkage.h>
#include <linux/export.h>
#include <asm/asm.h>
#include <asm/asm-extable.h>
#include <asm/csr.h>

/* One user access, resumed at \lbl if it faults. */
	.macro fixup op reg addr lbl
100:
	\op \reg, \addr
	_asm_extable	100b, \lbl
	.endm

	.text

SYM_FUNC_START(__asm_copy_to_user)

	/* Let S-mode reach user pages until we return. */
	li	t6, SR_SUM
	csrs	CSR_STATUS, t6

	/* a3: one past the last byte of dst; every exit is measured from it. */
	add	a3, a0, a2
	add	t5, a1, a2		/* BUG: the source end, kept for the fault exit */

	/*
	 * The block loop runs at least once, so it needs one whole block
	 * (8*SZREG) after a head of at most SZREG-1 bytes: anything shorter
	 * than 9*SZREG-1 bytes is copied a byte at a time.
	 */
	li	a4, 9*SZREG-1
	bltu	a2, a4, 4f

	/* Head: bytes until dst is SZREG-aligned (t1: dst rounded up). */
	addi	t1, a0, SZREG-1
	andi	t1, t1, ~(SZREG-1)
	beq	a0, t1, 2f
1:
	fixup lbu, t2, 0(a1), 10f
	fixup sb, t2, 0(a0), 10f
	addi	a1, a1, 1
	addi	a0, a0, 1
	bltu	a0, t1, 1b
2:
	/* dst is aligned now; a source that is not goes to the shift copy. */
	andi	a4, a1, SZREG-1
	bnez	a4, 5f

	/*
	 * Block loop: eight words a turn, every load before any store so that
	 * no store waits for the load just before it.  t0 is the last a0 from
	 * which a whole block still fits before a3.
	 */
	addi	t0, a3, -8*SZREG
3:
	fixup REG_L, a4, 0(a1), 10f
	fixup REG_L, a5, SZREG(a1), 10f
	fixup REG_L, a6, 2*SZREG(a1), 10f
	fixup REG_L, a7, 3*SZREG(a1), 10f
	fixup REG_L, t1, 4*SZREG(a1), 10f
	fixup REG_L, t2, 5*SZREG(a1), 10f
	fixup REG_L, t3, 6*SZREG(a1), 10f
	fixup REG_L, t4, 7*SZREG(a1), 10f
	fixup REG_S, a4, 0(a0), 10f
	fixup REG_S, a5, SZREG(a0), 10f
	fixup REG_S, a6, 2*SZREG(a0), 10f
	fixup REG_S, a7, 3*SZREG(a0), 10f
	fixup REG_S, t1, 4*SZREG(a0), 10f
	fixup REG_S, t2, 5*SZREG(a0), 10f
	fixup REG_S, t3, 6*SZREG(a0), 10f
	fixup REG_S, t4, 7*SZREG(a0), 10f
	addi	a0, a0, 8*SZREG
	addi	a1, a1, 8*SZREG
	bleu	a0, t0, 3b
	j	4f

5:
	/*
	 * Shift copy: src is not aligned with dst.  Read aligned source words
	 * only and build each destination word from two of them:
	 *	dst_word = (prev >> t3) | (next << t4)
	 * with t3 = 8 * (src & (SZREG-1)) bits and t4 = -t3 (sll and srl
	 * use the low six bits, so -t3 acts as 64 - t3).  Every word read
	 * holds at least one byte of the source.
	 */
	andi	t3, a1, SZREG-1
	slli	t3, t3, 3
	neg	t4, t3
	andi	a1, a1, ~(SZREG-1)
	fixup REG_L, a5, 0(a1), 10f
	addi	t0, a3, -SZREG
6:
	fixup REG_L, a6, SZREG(a1), 10f
	srl	a4, a5, t3
	sll	a7, a6, t4
	or	a4, a4, a7
	fixup REG_S, a4, 0(a0), 10f
	mv	a5, a6
	addi	a0, a0, SZREG
	addi	a1, a1, SZREG
	bleu	a0, t0, 6b
	/* a1 back on the first source byte not copied yet. */
	srli	t3, t3, 3
	add	a1, a1, t3

4:
	/* Bytes: short copies, and whatever the loops above left. */
	bgeu	a0, a3, 7f
8:
	fixup lbu, t2, 0(a1), 10f
	fixup sb, t2, 0(a0), 10f
	addi	a1, a1, 1
	addi	a0, a0, 1
	bltu	a0, a3, 8b
7:
	/* Done: user pages out of reach again, nothing left to copy. */
	csrc	CSR_STATUS, t6
	li	a0, 0
	ret

10:
	/*
	 * A user access faulted.  The trap returned here with sstatus as it
	 * was, so SUM is still set: clear it, and report a3 - a0 bytes (a0 is
	 * the first byte of the block in flight) as not copied.
	 */
	csrc	CSR_STATUS, t6
	sub	a0, t5, a0		/* BUG: source end minus the dst pointer */
	ret
SYM_FUNC_END(__asm_copy_to_user)
SYM_FUNC_ALIAS(__asm_copy_from_user, __asm_copy_to_user)
EXPORT_SYMBOL(__asm_copy_to_user)
EXPORT_SYMBOL(__asm_copy_from_user)

SYM_FUNC_START(__clear_user)

	/* Let S-mode reach user pages until we return. */
	li	t6, SR_SUM
	csrs	CSR_STATUS, t6

	/*
	 * a3: one past the last byte; t0: dst rounded up and t1: a3 rounded
	 * down to SZREG.  Words are stored in [t0, t1) when that holds one.
	 */
	add	a3, a0, a1
	addi	t0, a0, SZREG-1
	andi	t0, t0, ~(SZREG-1)
	andi	t1, a3, ~(SZREG-1)
	bgeu	t0, t1, 4f

	/* Head: bytes up to t0. */
	bgeu	a0, t0, 2f
1:
	fixup sb, zero, 0(a0), 11f
	addi	a0, a0, 1
	bltu	a0, t0, 1b
2:
	/* Words up to t1. */
	fixup REG_S, zero, 0(a0), 11f
	addi	a0, a0, SZREG
	bltu	a0, t1, 2b

4:
	/* Bytes up to a3. */
	bgeu	a0, a3, 3f
5:
	fixup sb, zero, 0(a0), 11f
	addi	a0, a0, 1
	bltu	a0, a3, 5b
3:
	csrc	CSR_STATUS, t6
	li	a0, 0
	ret

11:
	/* A store faulted: SUM off, a3 - a0 bytes not cleared. */
	csrc	CSR_STATUS, t6
	sub	a0, a3, a0
	ret
SYM_FUNC_END(__clear_user)
EXPORT_SYMBOL(__clear_user)
