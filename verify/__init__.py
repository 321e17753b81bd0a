"""copygen's verifier: proves the linked machine code of copy routines with Z3.

Its modules, along the seams of a proof:

* input and world: inputs (.copy/.S/.o/ELF -> linked ELF and routines),
  program (decoded code, loops, cut points), world (the symbols a proof
  quantifies over, the contract's machine), clauses (the contract);
* symbolic machine: symstate (emu.insn.semantics over Z3 values, z3ops), explore
  (symbolic paths between cut points), nowrap (address no-wrap lemmas);
* invariant inference: samples and concrete (runs in the emulator),
  candidates and infer (guessing), liveness (pruning), houdini (induction);
* checks: prove (every clause for one routine), memcheck, dataproof,
  coverage (what memory holds), parallel (queries over processes);
* vectors: vstate (emu.insn.vsemantics over Z3 at a fixed VLEN, a vector
  access explored as one byte range), vprove (the vector routine's own
  contract);
* counterexamples and bounded runs: replay (shrunk, replayed in the
  emulator), bounded (every n <= N), exhaustive (the calls of a size
  that both run), early (a sample run that breaks a clause decides the
  verdict before the proof).

Imports emu (decoder, semantics, machine; never the cost model), gen
(build, toolchain, errors: to turn a .copy or .S into the ELF it proves) and
z3; never measure, mutate or the command line.
"""
