"""Invariant checking by induction (Houdini): keep the largest subset of the
guessed candidates that holds on entry to each loop head and is preserved by
every path back to a loop head.  What survives is proved inductive; the
rest is dropped, never assumed.

Role: explore every segment once (verify.explore) and filter candidates with
Z3 models.  May import z3, verify.*.
"""
from __future__ import annotations

import time

import z3

from verify.candidates import Cand, formula, term_exprs
from verify.explore import Explorer, Segment
from verify.symstate import SymState
from verify.world import BV8, BV64, World
from verify.z3ops import bv

TIMEOUT_MS = 30000
STATS: list = []
MEMORY_KINDS = ("cursor", "word")


def fresh_state(world: World, pc: int, base: dict[int, str] | None = None) -> SymState:
    """An arbitrary state at loop head pc.  A register that moves with a
    buffer is written term + fresh offset: the same set of states, but the
    solver sees D + W - (D + off) simplify to W - off."""
    tag = f"L{pc:x}"
    terms = term_exprs(world)
    xs = [bv(0)] + [z3.BitVec(f"{tag}_x{i}", 64) for i in range(1, 32)]
    for r, t in (base or {}).items():
        xs[r] = z3.simplify(terms[t] + xs[r])
    return SymState(world, pc, xs, z3.BitVec(f"{tag}_sstatus", 64), z3.BitVec(f"{tag}_dstW", 8),
                    z3.Bool(f"{tag}_written"), z3.Array(f"{tag}_stack", BV64, BV8))


class Proof:
    """The segments of one routine and the invariants at its loop heads."""

    def __init__(self, prog, routine, world: World, bases: dict | None = None):
        self.prog, self.routine, self.world = prog, routine, world
        self.terms = term_exprs(world)
        bases = bases or {}
        self.heads = {pc: fresh_state(world, pc, bases.get(pc)) for pc in sorted(routine.cut_points)}
        self.pre = world.preconditions()
        ex = Explorer(prog, world, routine.cut_points, [])
        self.segments: list[tuple[int | None, Segment]] = [
            (None, ex.run(SymState.at_entry(world, routine.entry)))]
        for pc, st in self.heads.items():
            self.segments.append((pc, ex.run(st.clone())))
        self.inv: dict[int, list[Cand]] = {pc: [] for pc in self.heads}
        from verify.memcheck import MemoryChecks
        self.data = MemoryChecks(self)

    def formulas(self, cands, st: SymState) -> list:
        return [formula(c, st.x, st.sstatus, st.watched, st.written, self.world, self.terms)
                for c in cands]

    def assumptions(self, start: int | None) -> list:
        if start is None:
            return []
        return self.formulas(self.inv[start], self.heads[start])

    def solver(self, start: int | None, cond: list) -> z3.Solver:
        s = z3.SolverFor("QF_ABV")
        s.set("timeout", TIMEOUT_MS)
        s.add(*self.pre, *self.assumptions(start), *cond)
        return s

    def houdini(self, guesses: dict[int, list[Cand]]) -> dict[int, list[Cand]]:
        self.inv = {pc: list(guesses.get(pc, [])) for pc in self.heads}
        changed = True
        while changed:
            changed = False
            for start, seg in self.segments:
                for end in seg.ends:
                    if end.kind == "cut" and self._filter(start, end):
                        changed = True
        return self.inv

    def _filter(self, start, end) -> bool:
        """Drop the candidates at end.pc that this path can break.  Facts
        about registers go in one query; those about memory contents (harder
        for the solver) one at a time."""
        cands = self.inv[end.pc]
        memory = [c for c in cands if c.kind in MEMORY_KINDS]
        plain = self._filter_batch(start, end, [c for c in cands if c.kind not in MEMORY_KINDS])
        kept = plain + [c for c in memory if self._holds(start, end, c)]
        self.inv[end.pc] = kept
        return len(kept) < len(cands)

    def _holds(self, start, end, cand) -> bool:
        t0 = time.time()
        ok = self.data.holds(start, end, cand)
        STATS.append((time.time() - t0, start, end.pc, str(cand), str(ok)))
        return ok

    def _plain_holds(self, start, end, cand) -> bool:
        (f,) = self.formulas([cand], end.state)
        s = self.solver(start, end.cond)
        s.add(z3.Not(f))
        return s.check() == z3.unsat

    def _filter_batch(self, start, end, targets) -> list:
        while targets:
            fs = self.formulas(targets, end.state)
            s = self.solver(start, end.cond)
            s.add(z3.Not(z3.And(*fs)))
            t0 = time.time()
            r = s.check()
            STATS.append((time.time() - t0, start, end.pc, len(targets), str(r)))
            if r == z3.unsat:
                break
            if r == z3.unknown:
                return [c for c in targets if self._plain_holds(start, end, c)]
            m = s.model()
            keep = [c for c, f in zip(targets, fs) if z3.is_true(m.eval(f, model_completion=True))]
            assert len(keep) < len(targets)
            targets = keep
        return targets

