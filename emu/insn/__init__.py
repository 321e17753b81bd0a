"""Instructions: the encoding table, decoder and encoder, and the semantics
written once over a value interface.

May import emu.* and the standard library.
"""
