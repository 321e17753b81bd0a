/* SPDX-License-Identifier: MIT */
/*
 * copygen test fixture: a byte-at-a-time memset.  The test gives the
 * n == 0 case a store of its own (one byte at dst although n is 0): every
 * n includes 0, so the verifier must catch it (B1).
 */

#include <linux/linkage.h>
#include <asm/asm.h>

SYM_FUNC_START(memset)
	mv	t0, a0
	add	t1, a0, a2
	beqz	a2, 2f			/* n == 0: nothing to store */
1:
	sb	a1, 0(t0)
	addi	t0, t0, 1
	bltu	t0, t1, 1b
2:
	ret
SYM_FUNC_END(memset)
