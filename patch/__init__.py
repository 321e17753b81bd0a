"""copygen's patch layer: a proven, measured strategy and a kernel tree in,
a git commit and a mailable patch out (`copygen patch`).

kernelfile (find the functions of the tree's arch/riscv/lib/uaccess.S and
its layout) -> bodies (the generated code in the form each place needs,
labels clear of the file's own) -> splice (replace only those bodies, with
gen.emission.asmtext resolving labels the way the assembler does) ->
evidence (build the file as it is and as patched with the shim, prove the
entry points that reach the new code, bench both under each profile) ->
message (subject, body, tables, proof summary, how to reproduce) -> git
(checks, the commit on a new branch without touching the checkout,
format-patch, checkpatch).  run ties them together.
May import gen, emu, measure, verify and the standard library; never the
command line.
"""
