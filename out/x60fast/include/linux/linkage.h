/* SPDX-License-Identifier: MIT */
/* copygen shim: symbol-definition macros of <linux/linkage.h> (assembly). */
#ifndef COPYGEN_SHIM_LINKAGE_H
#define COPYGEN_SHIM_LINKAGE_H

#ifdef __ASSEMBLY__

/* A global function, 4-byte aligned as the kernel's riscv ALIGN is. */
#define SYM_FUNC_START(name)		\
	.globl name;			\
	.type name, @function;		\
	.balign 4;			\
	name:

/* A function of this file only: not global, aligned and typed the same. */
#define SYM_FUNC_START_LOCAL(name)	\
	.type name, @function;		\
	.balign 4;			\
	name:

#define SYM_FUNC_END(name)		\
	.size name, . - name

/* A second global name for the same code and size; use after SYM_FUNC_END. */
#define SYM_FUNC_ALIAS(alias, name)	\
	.globl alias;			\
	.type alias, @function;		\
	.set alias, name;		\
	.size alias, . - name

/* The same, as a weak symbol (memcpy for __memcpy: a KASAN build overrides it). */
#define SYM_FUNC_ALIAS_WEAK(alias, name)	\
	.weak alias;			\
	.type alias, @function;		\
	.set alias, name;		\
	.size alias, . - name

/*
 * The names kernels used before SYM_FUNC_* (still in vendor trees): ENTRY
 * opens a global label, END sizes it, ENDPROC also types it a function.
 * Two ENTRY lines in a row give one body two names.
 */
#define ENTRY(name)			\
	.globl name;			\
	.balign 4;			\
	name:

#define END(name)			\
	.size name, . - name

#define ENDPROC(name)			\
	.type name, @function;		\
	END(name)

#endif /* __ASSEMBLY__ */
#endif
