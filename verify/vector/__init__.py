"""The vector path: the symbolic machine with a vector unit, the vector
routines' own contracts and counterexamples, and the composed user-copy
contract.

May import verify.*, emu and the standard library.
"""
