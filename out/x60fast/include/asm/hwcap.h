/* SPDX-License-Identifier: MIT */
/*
 * copygen shim: the ISA-extension ids of <asm/hwcap.h> that copy code names
 * in ALTERNATIVE().  The shim's ALTERNATIVE() never patches, so only the
 * names matter; single letters are numbered from 'a' as the kernel does,
 * the multi-letter ids here are copygen's own numbers.
 */
#ifndef COPYGEN_SHIM_HWCAP_H
#define COPYGEN_SHIM_HWCAP_H

#define RISCV_ISA_EXT_v		21	/* 'v' - 'a' */
#define RISCV_ISA_EXT_ZBB	64
#define RISCV_ISA_EXT_ZVE32X	65

#endif
