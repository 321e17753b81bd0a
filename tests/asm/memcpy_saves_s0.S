/* SPDX-License-Identifier: MIT */
/*
 * copygen test fixture: a byte-at-a-time memcpy that keeps its dst cursor
 * in the callee-saved s0, so it saves s0 in a stack frame before the loop
 * and restores it after, as GCC's code does for the shift copy of
 * out/u74pipelined/string.c.  The verifier must follow sp and the saved
 * value through the loop head to prove A1 (and catch a wrong restore).
 */

#include <linux/linkage.h>
#include <asm/asm.h>

SYM_FUNC_START(memcpy)
	addi	sp, sp, -16
	REG_S	s0, 8(sp)
	mv	s0, a0
	add	t1, a0, a2
	beqz	a2, 2f
1:
	lbu	t0, 0(a1)
	sb	t0, 0(s0)
	addi	s0, s0, 1
	addi	a1, a1, 1
	bne	s0, t1, 1b
2:
	REG_L	s0, 8(sp)
	addi	sp, sp, 16
	ret
SYM_FUNC_END(memcpy)
