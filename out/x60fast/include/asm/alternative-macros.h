/* SPDX-License-Identifier: MIT */
/*
 * copygen shim: ALTERNATIVE() of <asm/alternative-macros.h> in assembly.
 *
 * ALTERNATIVE(old, new, vendor_id, patch_id, CONFIG_k): in a kernel, `old`
 * is assembled and boot code patches `new` over it on harts that have the
 * extension.  Outside a kernel nothing patches, so the code that runs is
 * `old`: that is what is assembled here (as on a hart without the
 * extension, or a kernel built without CONFIG_k), and `new` is dropped.
 * Both are quoted strings; the macro argument loses its quotes.
 */
#ifndef COPYGEN_SHIM_ALTERNATIVE_MACROS_H
#define COPYGEN_SHIM_ALTERNATIVE_MACROS_H

#ifdef __ASSEMBLY__

	.macro __copygen_alternative old_content
	\old_content
	.endm

#define ALTERNATIVE(old_content, new_content, vendor_id, patch_id, CONFIG_k) \
	__copygen_alternative old_content

#endif /* __ASSEMBLY__ */
#endif
