/* SPDX-License-Identifier: MIT */
/* copygen shim: the supervisor CSR names of <asm/csr.h> that copy code uses. */
#ifndef COPYGEN_SHIM_CSR_H
#define COPYGEN_SHIM_CSR_H

#define CSR_STATUS	sstatus
#define SR_SUM		0x00040000	/* sstatus bit 18: Supervisor User Memory access */

#endif
