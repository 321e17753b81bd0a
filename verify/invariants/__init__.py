"""Loop invariants: sample runs in the emulator, guesses from them, live-
register pruning and the induction check (Houdini).

May import verify.*, emu and the standard library.
"""
