"""The IRs and their text: the assembly IR, the C IR, emission through the
templates, and reading kernel-style .S text.

May import gen.* and the standard library.
"""
