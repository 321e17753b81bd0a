/* SPDX-License-Identifier: MIT */
/*
 * copygen shim: exception-table entries as the RISC-V kernel lays them out
 * (struct exception_table_entry { int insn, fixup; short type, data; }),
 * both addresses relative to the field that holds them.
 */
#ifndef COPYGEN_SHIM_ASM_EXTABLE_H
#define COPYGEN_SHIM_ASM_EXTABLE_H

#define EX_TYPE_NONE		0
#define EX_TYPE_FIXUP		1

#ifdef __ASSEMBLY__

	.macro __copygen_extable insn, fixup, type, data
	.pushsection __ex_table, "a"
	.balign 4
	.long (\insn) - .
	.long (\fixup) - .
	.short \type
	.short \data
	.popsection
	.endm

/* A fault at insn resumes at fixup with the registers it had. */
	.macro _asm_extable insn, fixup
	__copygen_extable \insn, \fixup, EX_TYPE_FIXUP, 0
	.endm

#endif /* __ASSEMBLY__ */
#endif
