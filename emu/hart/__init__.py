"""The hart and its memory: registers, CSRs, the reference step, paged memory
with the kernel's permissions, the vector unit, and the observer interface.

May import emu.* and the standard library.
"""
