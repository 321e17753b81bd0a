/* SPDX-License-Identifier: MIT */
/*
 * copygen shim: <asm-generic/export.h>, where assembly took EXPORT_SYMBOL
 * from before kernels moved it to <linux/export.h>.  The same meaning here.
 */
#ifndef COPYGEN_SHIM_ASM_GENERIC_EXPORT_H
#define COPYGEN_SHIM_ASM_GENERIC_EXPORT_H

#include <linux/export.h>

#endif
