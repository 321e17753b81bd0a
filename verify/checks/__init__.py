"""The prover and its clause checks: every clause for one routine, memory
contents, data, coverage.

May import verify.*, emu and the standard library.
"""
