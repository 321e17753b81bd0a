/* SPDX-License-Identifier: MIT */
/* copygen shim: the kernel's basic types, from the compiler's own macros. */
#ifndef COPYGEN_SHIM_TYPES_H
#define COPYGEN_SHIM_TYPES_H

typedef __SIZE_TYPE__		size_t;
typedef __UINTPTR_TYPE__	uintptr_t;
typedef unsigned char		u8;
typedef unsigned long long	u64;

#endif
