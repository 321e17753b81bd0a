/* SPDX-License-Identifier: MIT */
/*
 * copygen shim: EXPORT_SYMBOL.  Outside the kernel there is no module
 * loader; an export only has to keep the symbol global.
 */
#ifndef COPYGEN_SHIM_EXPORT_H
#define COPYGEN_SHIM_EXPORT_H

#ifdef __ASSEMBLY__
#define EXPORT_SYMBOL(sym)	.globl sym
#else
#define EXPORT_SYMBOL(sym)	extern typeof(sym) sym
#endif

#endif
