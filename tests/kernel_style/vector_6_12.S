/* SPDX-License-Identifier: MIT */
/*
 * Written for copygen (not copied from a kernel tree): the strip-mined e8
 * copy of docs/vector.md in the layout of Linux 6.8-6.15's
 * arch/riscv/lib/uaccess_vector.S, one entry point that sets SUM itself.
 * As there, neither fault exit writes vstart: a fault at element k > 0 of
 * a chunk returns with vstart = k (clause V0).
 */

#include <linux/linkage.h>
#include <asm/asm.h>
#include <asm/asm-extable.h>
#include <asm/csr.h>

	.macro fixup op reg addr lbl
100:
	\op \reg, \addr
	_asm_extable	100b, \lbl
	.endm

/* a0 dst, a1 src, a2 bytes left, a3 this chunk; returns the bytes not copied */
SYM_FUNC_START(__asm_vector_usercopy)
	li	t6, SR_SUM
	csrs	CSR_STATUS, t6

1:
	vsetvli	a3, a2, e8, m8, ta, ma		/* chunk = min(left, VLMAX) */
	fixup	vle8.v v0, (a1), 20f
	sub	a2, a2, a3
	add	a1, a1, a3
	fixup	vse8.v v0, (a0), 21f
	add	a0, a0, a3
	bnez	a2, 1b

	/* the end, and a load fault: the faulting chunk is still in a2 */
20:
	csrc	CSR_STATUS, t6
	mv	a0, a2
	ret

	/* a store fault: the chunk back, less the vstart bytes it stored */
21:
	add	a2, a2, a3
	csrr	t2, CSR_VSTART
	sub	a2, a2, t2
	j	20b
SYM_FUNC_END(__asm_vector_usercopy)
