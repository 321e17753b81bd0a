/* SPDX-License-Identifier: MIT */
/*
 * copygen test fixture: the layout of arch/riscv/lib/uaccess.S in mainline
 * kernels since 2024, written for copygen from the algorithm in
 * docs/strategies.md (it is not taken from a kernel tree).
 *
 * The user copy comes in layers:
 *   __asm_copy_to_user             may dispatch to a vector copy; without
 *                                  CONFIG_RISCV_ISA_V its body is empty and
 *                                  it falls through into ...
 *   fallback_scalar_usercopy       sets SUM, calls the scalar copy, clears
 *                                  SUM, returns its result
 *   __asm_copy_to_user_sum_enabled the same dispatch, for callers that
 *                                  already hold SUM; falls through into ...
 *   fallback_scalar_usercopy_sum_enabled
 *                                  the scalar copy: SUM is the caller's
 * and __asm_copy_from_user(_sum_enabled) are aliases.  __clear_user sets
 * and clears SUM itself.
 *
 * The scalar copy is the 2021 design (below 9*SZREG-1 bytes copy bytes,
 * else a dst head, an 8-word block loop with every load before any store
 * or a one-word shift copy, a byte tail) with exact fault returns: a word
 * access that faults moves a0/a1 to the first byte not stored and lets the
 * byte tail copy up to the faulting byte.
 */

#include <linux/linkage.h>
#include <linux/export.h>
#include <asm/asm.h>
#include <asm/asm-extable.h>
#include <asm/csr.h>
#include <asm/hwcap.h>
#include <asm/alternative-macros.h>

/* One user access, resumed at \lbl if it faults. */
	.macro fixup op reg addr lbl
100:
	\op \reg, \addr
	_asm_extable	100b, \lbl
	.endm

	.text

SYM_FUNC_START(__asm_copy_to_user)
#ifdef CONFIG_RISCV_ISA_V
	/*
	 * Harts without Zve32x keep the jump; the others copy at least
	 * riscv_v_usercopy_threshold bytes with vectors (a3 = 1: the vector
	 * path must take SUM itself).
	 */
	ALTERNATIVE("j fallback_scalar_usercopy", "nop", 0, RISCV_ISA_EXT_ZVE32X, CONFIG_RISCV_ISA_V)
	REG_L	t0, riscv_v_usercopy_threshold
	bltu	a2, t0, fallback_scalar_usercopy
	li	a3, 1
	tail	enter_vector_usercopy
#endif
	/* Without vectors: nothing here, fall through. */
SYM_FUNC_END(__asm_copy_to_user)
EXPORT_SYMBOL(__asm_copy_to_user)
SYM_FUNC_ALIAS(__asm_copy_from_user, __asm_copy_to_user)
EXPORT_SYMBOL(__asm_copy_from_user)

SYM_FUNC_START(fallback_scalar_usercopy)
	/* Let S-mode reach user pages for the copy, and only for it. */
	li	t6, SR_SUM
	csrs	CSR_STATUS, t6
	/*
	 * A call clobbers ra: keep ours in a7 meanwhile, as mainline has
	 * since 2025.  The scalar copy must leave a7 alone.
	 */
	mv	a7, ra
	call	fallback_scalar_usercopy_sum_enabled
	mv	ra, a7
	li	t6, SR_SUM
	csrc	CSR_STATUS, t6

	/* a0: what the copy returned, the bytes not copied. */
	ret
SYM_FUNC_END(fallback_scalar_usercopy)

SYM_FUNC_START(__asm_copy_to_user_sum_enabled)
#ifdef CONFIG_RISCV_ISA_V
	/* As above; a3 = 0: SUM is already set. */
	ALTERNATIVE("j fallback_scalar_usercopy_sum_enabled", "nop", 0, RISCV_ISA_EXT_ZVE32X, CONFIG_RISCV_ISA_V)
	REG_L	t0, riscv_v_usercopy_threshold
	bltu	a2, t0, fallback_scalar_usercopy_sum_enabled
	li	a3, 0
	tail	enter_vector_usercopy
#endif
	/* Without vectors: nothing here, fall through. */
SYM_FUNC_END(__asm_copy_to_user_sum_enabled)
EXPORT_SYMBOL(__asm_copy_to_user_sum_enabled)
SYM_FUNC_ALIAS(__asm_copy_from_user_sum_enabled, __asm_copy_to_user_sum_enabled)
EXPORT_SYMBOL(__asm_copy_from_user_sum_enabled)

/*
 * a0 = dst, a1 = src, a2 = n, with SUM set by the caller (and left set).
 * Returns in a0 the number of bytes not copied.
 * Registers: t5 one past the last byte of dst (every return is measured
 * from it), t3 the last a0 from which a loop's step still fits.
 */
SYM_FUNC_START(fallback_scalar_usercopy_sum_enabled)
	add	t5, a0, a2

	/*
	 * The block loop runs at least once, so it needs one whole block
	 * (8*SZREG) after a head of at most SZREG-1 bytes: anything shorter
	 * than 9*SZREG-1 bytes is copied a byte at a time.
	 */
	li	t0, 9*SZREG-1
	bltu	a2, t0, .Lbyte_tail

	/* Head: bytes until dst is SZREG-aligned (t1: dst rounded up). */
	addi	t1, a0, SZREG-1
	andi	t1, t1, ~(SZREG-1)
	beq	a0, t1, .Lhead_done
1:
	fixup lbu, t2, 0(a1), .Lfault_exit
	fixup sb, t2, 0(a0), .Lfault_exit
	addi	a0, a0, 1
	addi	a1, a1, 1
	bltu	a0, t1, 1b
.Lhead_done:
	/* dst is aligned now; a source that is not takes the shift copy. */
	andi	t0, a1, SZREG-1
	bnez	t0, .Lshift_copy

	/*
	 * Block loop: eight words a turn, every load before any store so
	 * that no store waits on the load just before it.  A load that
	 * faults has stored nothing of its block: the byte tail retries
	 * from a0.  A store that faults retries past the words stored.
	 */
	addi	t3, t5, -8*SZREG
2:
	fixup REG_L, a2, 0(a1), .Lbyte_tail
	fixup REG_L, a3, SZREG(a1), .Lbyte_tail
	fixup REG_L, a4, 2*SZREG(a1), .Lbyte_tail
	fixup REG_L, a5, 3*SZREG(a1), .Lbyte_tail
	fixup REG_L, a6, 4*SZREG(a1), .Lbyte_tail
	fixup REG_L, t4, 5*SZREG(a1), .Lbyte_tail
	fixup REG_L, t1, 6*SZREG(a1), .Lbyte_tail
	fixup REG_L, t2, 7*SZREG(a1), .Lbyte_tail
	fixup REG_S, a2, 0(a0), .Lbyte_tail
	fixup REG_S, a3, SZREG(a0), .Lstored_1
	fixup REG_S, a4, 2*SZREG(a0), .Lstored_2
	fixup REG_S, a5, 3*SZREG(a0), .Lstored_3
	fixup REG_S, a6, 4*SZREG(a0), .Lstored_4
	fixup REG_S, t4, 5*SZREG(a0), .Lstored_5
	fixup REG_S, t1, 6*SZREG(a0), .Lstored_6
	fixup REG_S, t2, 7*SZREG(a0), .Lstored_7
	addi	a0, a0, 8*SZREG
	addi	a1, a1, 8*SZREG
	bleu	a0, t3, 2b
	j	.Lbyte_tail

	/*
	 * Shift copy: src is not aligned with dst.  Read aligned source
	 * words only and build each destination word from two of them:
	 *	dst_word = (prev >> t1) | (next << t2)
	 * with t1 = 8 * (src & (SZREG-1)) bits and t2 = -t1 (the shifts use
	 * the low six bits, so -t1 acts as 64 - t1).  Every word read holds
	 * a byte of the source.  t0 keeps src & (SZREG-1) to undo the
	 * rounding of a1 afterwards, and on a fault.
	 */
.Lshift_copy:
	slli	t1, t0, 3
	neg	t2, t1
	andi	a1, a1, ~(SZREG-1)
	fixup REG_L, a2, 0(a1), .Lshift_fault
	addi	t3, t5, -SZREG
3:
	fixup REG_L, a3, SZREG(a1), .Lshift_fault
	srl	a4, a2, t1
	sll	a5, a3, t2
	or	a4, a4, a5
	fixup REG_S, a4, 0(a0), .Lshift_fault
	mv	a2, a3
	addi	a0, a0, SZREG
	addi	a1, a1, SZREG
	bleu	a0, t3, 3b
.Lshift_fault:
	add	a1, a1, t0

	/* Bytes: short copies, what the loops left, and every retry. */
.Lbyte_tail:
	bgeu	a0, t5, .Lcopied
4:
	fixup lbu, t2, 0(a1), .Lfault_exit
	fixup sb, t2, 0(a0), .Lfault_exit
	addi	a0, a0, 1
	addi	a1, a1, 1
	bltu	a0, t5, 4b
.Lcopied:
	li	a0, 0
	ret

	/*
	 * A word store of the block loop faulted after k words were stored:
	 * each step below moves a0 and a1 past one of them, then the byte
	 * tail resumes at the first byte not stored.
	 */
.Lstored_7:
	addi	a0, a0, SZREG
	addi	a1, a1, SZREG
.Lstored_6:
	addi	a0, a0, SZREG
	addi	a1, a1, SZREG
.Lstored_5:
	addi	a0, a0, SZREG
	addi	a1, a1, SZREG
.Lstored_4:
	addi	a0, a0, SZREG
	addi	a1, a1, SZREG
.Lstored_3:
	addi	a0, a0, SZREG
	addi	a1, a1, SZREG
.Lstored_2:
	addi	a0, a0, SZREG
	addi	a1, a1, SZREG
.Lstored_1:
	addi	a0, a0, SZREG
	addi	a1, a1, SZREG
	j	.Lbyte_tail

	/* A byte access faulted: a0 is the first byte not copied. */
.Lfault_exit:
	sub	a0, t5, a0
	ret
SYM_FUNC_END(fallback_scalar_usercopy_sum_enabled)

/*
 * a0 = dst, a1 = n.  Returns in a0 the number of bytes not zeroed.
 * Registers: a3 one past the last byte, t0 dst rounded up and t1 a3
 * rounded down to SZREG: whole words are stored in [t0, t1).
 */
SYM_FUNC_START(__clear_user)
	li	t6, SR_SUM
	csrs	CSR_STATUS, t6

	add	a3, a0, a1
	addi	t0, a0, SZREG-1
	andi	t0, t0, ~(SZREG-1)
	andi	t1, a3, ~(SZREG-1)
	bgeu	t0, t1, .Lclear_bytes

	/* Head: bytes up to t0. */
	bgeu	a0, t0, 2f
1:
	fixup sb, zero, 0(a0), .Lclear_fault
	addi	a0, a0, 1
	bltu	a0, t0, 1b
2:
	/* Words up to t1 (at least one). */
	fixup REG_S, zero, 0(a0), .Lclear_fault
	addi	a0, a0, SZREG
	bltu	a0, t1, 2b

	/* Bytes up to a3. */
.Lclear_bytes:
	bgeu	a0, a3, .Lclear_done
3:
	fixup sb, zero, 0(a0), .Lclear_fault
	addi	a0, a0, 1
	bltu	a0, a3, 3b
.Lclear_done:
	csrc	CSR_STATUS, t6
	li	a0, 0
	ret

	/* A store faulted at a0 (words are aligned: all of it or none). */
.Lclear_fault:
	csrc	CSR_STATUS, t6
	sub	a0, a3, a0
	ret
SYM_FUNC_END(__clear_user)
EXPORT_SYMBOL(__clear_user)
