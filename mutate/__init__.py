"""copygen's mutation tool: plants single-edit bugs in uaccess.S text and
judges them against the qemu oracle, to measure what the verifier catches.

edits (the mutation kinds), insns (the instruction lines under them, read
with gen.emission.asmtext, the reader patch shares), judge
(runs mutants and the original side by side), oracle (the qemu-user harness:
cases, build, results).  A layer above verify's pillars: may import gen
(toolchain, resources, asmtext) and copygen.errors; external programs run only through
gen.toolchain.  Nothing in gen, emu or verify imports it.
"""
