"""Where a proof's time goes: stage by stage for one routine.

    python -m bench.verify.verify_profile out/kernel2021/uaccess.S __asm_copy_to_user [JOBS] [--no-presolve]

Prints seconds per stage (concrete runs, guessing, exploration, Houdini,
clause checks, termination), the number of bit-vector queries of each (in
this process: with JOBS > 1 the children's queries are not counted) and,
with JOBS = 1, the Houdini paths (start -> loop head) and the clauses
whose checks cost the most.  `--no-presolve` asks the solver the
formulas as the prover built them, without verify.symbolic.presolve's rewrite (to
measure what it saves).  A diagnostic for the speed work of issue 4;
bench/verify/verify_speed.py records the figures.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from bench.exits import exit_status  # noqa: E402


def _instrument() -> tuple[dict, dict, dict]:
    """Wrap the prover's entry points with timers: (bit-vector query count and
    time, time per (clause, kind) check, Houdini's time per path)."""
    from copygen.verify.checks import dataproof
    from copygen.verify.invariants import houdini
    from copygen.verify.checks.query import Check

    calls = {"n": 0, "t": 0.0}
    orig_valid = dataproof.ByteProver.valid

    def valid(self, facts, goal):
        t0 = time.time()
        r = orig_valid(self, facts, goal)
        calls["n"] += 1
        calls["t"] += time.time() - t0
        return r
    dataproof.ByteProver.valid = valid
    per: dict = {}
    orig_run = Check.run

    def run(self, data):
        t0 = time.time()
        r = orig_run(self, data)
        k = (self.clause, "data" if self.state is not None else "bv")
        per[k] = per.get(k, 0.0) + time.time() - t0
        return r
    Check.run = run

    from copygen.verify.checks.memcheck import MemoryChecks
    orig_prepare = MemoryChecks.prepare

    def prepare(self, starts, jobs):
        t0 = time.time()
        orig_prepare(self, starts, jobs)
        calls["stores"] = calls.get("stores", 0.0) + time.time() - t0
    MemoryChecks.prepare = prepare

    paths: dict = {}
    for name in ("_kept", "_first_provable"):
        orig = getattr(houdini.Proof, name)

        def timed(self, start, end, *a, _orig=orig):
            t0 = time.time()
            r = _orig(self, start, end, *a)
            k = (start, end.pc)
            paths[k] = paths.get(k, 0.0) + time.time() - t0
            return r
        setattr(houdini.Proof, name, timed)
    return calls, per, paths


def main(path: str, symbol: str, jobs: int) -> None:
    from copygen.verify.invariants.houdini import Proof
    from copygen.verify.invariants.infer import bases
    from copygen.verify.invariants.samples import collect
    from copygen.inputs import linked_elf
    from copygen.verify.symbolic.program import Program
    from copygen.verify.checks.clausecheck import ClauseChecker
    from copygen.verify.checks.prove import guess_all
    from copygen.verify.contract.world import KINDS, World

    calls, per, paths = _instrument()
    elf = str(linked_elf(path, Path("build/verify") / Path(path).stem))
    kind = KINDS[symbol]
    t = time.time()
    t_all = t

    def mark(name):
        nonlocal t
        now = time.time()
        print(f"{name:12s} {now - t:8.1f} s  ({calls['n']} bit-vector queries here, "
              f"{calls['t']:.1f} s in them; store proofs {calls.get('stores', 0.0):.1f} s)",
              flush=True)
        calls.update(n=0, t=0.0, stores=0.0)
        t = now

    prog = Program.load(elf)
    routine = prog.routine(prog.image.address_of(symbol))
    snaps = collect(prog.image, symbol, kind, routine.cut_points)
    mark("collect")
    roles = {pc: prog.address_roles(pc) for pc in snaps}
    guesses = guess_all(prog, routine, snaps, kind, roles, jobs)
    print("  candidates:", {hex(k): len(v) for k, v in guesses.items()})
    mark("guess")
    proof = Proof(prog, routine, World(kind), {pc: bases(s, roles[pc]) for pc, s in snaps.items()})
    print("  segments (start, ends, obligations):",
          [(hex(s) if s else "entry", len(g.ends), len(g.obligations)) for s, g in proof.segments])
    mark("explore")
    proof.houdini(guesses, jobs)
    print("  kept:", {hex(k): len(v) for k, v in proof.inv.items()})
    mark("houdini")
    for (a, b), v in sorted(paths.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  path {hex(a) if a else 'entry'} -> {hex(b)}: {v:.1f} s")
    ck = ClauseChecker(proof)
    ck.obligations()
    ck.returns()
    print(f"  {len(ck.checks)} checks")
    ck.run(jobs)
    mark("checks")
    print("  failures:", {k: f.what for k, f in ck.failures.items()})
    ck.termination(jobs)
    mark("termination")
    print(f"total        {time.time() - t_all:8.1f} s")
    for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {k[0]:4s} {k[1]:5s} {v:6.1f} s")


if __name__ == "__main__":
    if "--no-presolve" in sys.argv:
        sys.argv.remove("--no-presolve")
        from copygen.verify.symbolic import presolve
        presolve.REWRITE = False
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and not sys.argv[3].isdigit()):
        sys.exit(__doc__.split("\n\n")[1].strip().join(["usage: ", ""]))
    sys.exit(exit_status(main, sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1))
