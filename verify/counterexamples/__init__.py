"""Counterexamples and concrete cross-checks: shrinking and replaying a failed
check, every n up to a bound, every call of a size, and verdicts decided by
a sample run.

May import verify.*, emu and the standard library.
"""
