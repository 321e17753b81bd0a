"""Package data: the kernel-macro shim (include/, copygen.ld) the emitted
files assemble against.  May import nothing.
"""
