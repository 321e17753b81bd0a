/* SPDX-License-Identifier: MIT */
/* copygen shim: the supervisor CSR names of <asm/csr.h> that copy code uses. */
#ifndef COPYGEN_SHIM_CSR_H
#define COPYGEN_SHIM_CSR_H

#define CSR_STATUS	sstatus
#define SR_SUM		0x00040000	/* sstatus bit 18: Supervisor User Memory access */

/* sstatus.VS, bits 10:9 (privileged spec 1.12): the vector unit's state */
#define SR_VS		0x00000600
#define SR_VS_OFF	0x00000000
#define SR_VS_INITIAL	0x00000200
#define SR_VS_CLEAN	0x00000400
#define SR_VS_DIRTY	0x00000600

/* the vector CSRs' numbers (RVV 1.0 §3) */
#define CSR_VSTART	0x008
#define CSR_VXSAT	0x009
#define CSR_VXRM	0x00a
#define CSR_VCSR	0x00f
#define CSR_VL		0xc20
#define CSR_VTYPE	0xc21
#define CSR_VLENB	0xc22

#endif
