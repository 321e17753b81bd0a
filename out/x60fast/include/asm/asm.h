/* SPDX-License-Identifier: MIT */
/* copygen shim: register-width helpers of <asm/asm.h>, RV64 values. */
#ifndef COPYGEN_SHIM_ASM_H
#define COPYGEN_SHIM_ASM_H

#if __riscv_xlen != 64
#error "copygen emits RV64 code only"
#endif

#ifdef __ASSEMBLY__
#define REG_L		ld	/* load one register-sized word */
#define REG_S		sd	/* store one register-sized word */
#define RISCV_PTR	.dword	/* one pointer-sized datum (older __ex_table entries) */
#endif

#define SZREG		8	/* bytes in a register */
#define LGREG		3	/* log2(SZREG) */
#define RISCV_SZPTR	8	/* bytes in a pointer */
#define RISCV_LGPTR	3	/* log2(RISCV_SZPTR) */

#endif
