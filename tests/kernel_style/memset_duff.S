/* SPDX-License-Identifier: MIT */
/*
 * Written for copygen (not copied from a kernel tree): a memset that
 * stores the words beyond whole 4-word blocks by jumping into its run of
 * 4 stores (Duff's device), as Linux's arch/riscv/lib/memset.S enters its
 * run of 32.  The verifier follows such a jump to each store of the run
 * the path allows (verify.symbolic.program.Program.run_targets).
 */

#include <linux/linkage.h>
#include <asm/asm.h>

SYM_FUNC_START(__memset)
	mv	t0, a0			/* t0: the cursor; a0 is returned as it came */
	li	a3, 16
	bltu	a2, a3, .Lset_bytes
	andi	a1, a1, 0xff		/* the byte in every byte of a1 */
	slli	a3, a1, 8
	or	a1, a1, a3
	slli	a3, a1, 16
	or	a1, a1, a3
	slli	a3, a1, 32
	or	a1, a1, a3
	andi	a3, t0, 7
	beqz	a3, .Lset_words
	addi	a4, t0, 7
	andi	a4, a4, -8		/* a4: dst rounded up to a word */
	sub	a3, a4, t0
	sub	a2, a2, a3
1:
	sb	a1, 0(t0)
	addi	t0, t0, 1
	bltu	t0, a4, 1b
.Lset_words:
	andi	a4, a2, -8		/* bytes in whole words */
	add	a3, t0, a4		/* a3: where the words end */
	andi	a4, a4, 31		/* of those, bytes beyond whole blocks */
	beqz	a4, 2f
	li	a5, 32
	sub	a4, a5, a4		/* bytes of the block the first pass skips */
	sub	t0, t0, a4		/* so the run's last stores land at t0 */
	srli	a4, a4, 1		/* 4 bytes of code per 8-byte store */
	la	a5, 2f
	add	a5, a5, a4
	jr	a5
	.option push
	.option norvc			/* every store of the run 4 bytes long */
2:
	sd	a1, 0(t0)
	sd	a1, 8(t0)
	sd	a1, 16(t0)
	sd	a1, 24(t0)
	.option pop
	addi	t0, t0, 32
	bltu	t0, a3, 2b
	andi	a2, a2, 7
.Lset_bytes:
	beqz	a2, 4f
	add	a3, t0, a2
3:
	sb	a1, 0(t0)
	addi	t0, t0, 1
	bltu	t0, a3, 3b
4:
	ret
SYM_FUNC_END(__memset)
