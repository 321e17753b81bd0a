"""What a proof is of: the contract's clauses, the world a proof quantifies
over, the ELF's routines it reads, and a routine's verdict and its JUnit
form.

May import verify.*, emu and the standard library.
"""
