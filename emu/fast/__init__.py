"""The fast path: basic blocks compiled to Python functions and the dispatcher
that runs them.

May import emu.* and the standard library.
"""
