"""Timing only: cost profiles and the cycle engines (in-order, out-of-order,
vector, caches, predictors) that observe a run.  A change here can change a
routine's cycles, never what it computes.

May import emu.* and the standard library.
"""
