"""The symbolic machine: the machine code under proof, emu's semantics over Z3
values, exploration between cut points, no-wrap lemmas, formula pre-solving
and call summaries.

May import verify.*, emu and the standard library.
"""
