/* SPDX-License-Identifier: MIT */
/* copygen shim: attributes of <linux/compiler_attributes.h>. */
#ifndef COPYGEN_SHIM_COMPILER_H
#define COPYGEN_SHIM_COMPILER_H

#define __weak			__attribute__((__weak__))
#define __always_inline		inline __attribute__((__always_inline__))
#define __alias(symbol)		__attribute__((__alias__(#symbol)))
#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)

#endif
