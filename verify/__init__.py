"""copygen verifier: proves the linked machine code of copy routines with Z3.

It executes the emulator's instruction semantics (emu.semantics) over Z3
bit-vectors (verify.z3ops), under the kernel machine model (verify.symstate),
infers loop invariants from concrete runs and checks them by induction
(verify.invariants), and reports each contract clause (verify.contract).
"""
