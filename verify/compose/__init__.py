"""Routines composed of proved parts: the kernel's jump-label sites read
from a linked ELF and set to either state of their static key, and the
user copy that a static key dispatches to one of two bodies.

May import verify.*, emu and the standard library.
"""
