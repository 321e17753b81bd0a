"""Solver plumbing: budgets, answers kept across runs, the proof cache, queries
spread over processes, and the memory hygiene of a proving process.

May import verify.*, emu and the standard library.
"""
