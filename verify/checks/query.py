"""One query of the prover: a clause's goal at one pc under a path
condition (a bit-vector check), or, for a data check, every byte a state
wrote is right (verify.checks.dataproof).

A check is asked with its fallbacks: without the fault point's constraints
first where those rarely matter, through W-free goals where
verify.checks.coverage found some, with the destination written relative to
the source, and for each value of the watched byte W that matters when the
solver gives up on W.  verify.checks.clausecheck builds and runs these.

Role: answer one check.  May import z3, verify.solver.budget, verify.checks.dataproof,
verify.symbolic.nowrap, verify.symbolic.z3ops.
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from copygen.verify.solver.budget import Query
from copygen.verify.checks.dataproof import TIMEOUT_MS
from copygen.verify.symbolic.nowrap import lemmas
from copygen.verify.symbolic.z3ops import mentions


# how long a fault path's C3 coverage goal (alone or standing for C1's
# too), its C2 bound on the count and its C4 store intervals are tried
# without the fault point's constraints before they are asked in full;
# C1's goals, under "no fault", gain nothing from it, so C1 alone does not
# try it (CHANGELOG.md, "What makes it fast enough")
RELAXED_MS = 5000
# a check about the watched byte gets this long in one query, D written
# S + DS (World.relative), before it is asked for each value of W that
# matters (Check.points)
RELATIVE_MS = 3000


@dataclass
class Check:
    """One query: `goal` holds under `cond` (a bit-vector check) or, for a
    data check (`state` set), every byte the state wrote is right."""
    clause: str
    start: int | None
    pc: int
    cond: list
    goal: object
    what: str
    state: object = None
    # try first without the fault point's constraints (the `inside` goals
    # where there are some, else the goal)
    relax: bool = False
    points: tuple = ()    # W's values that matter: asked one by one if the solver gives up
    # W-free goals that together imply the goal under `inside_cond`
    # (verify.checks.coverage.inside_goals): asked first, the goal only if one fails
    inside: tuple = ()
    inside_cond: tuple = ()
    # the checks this one stands for: it asks their common goal under a
    # condition each of theirs implies, so that it holding proves them
    # all; when it fails each is run, and the clauses get their own verdicts
    parts: tuple = ()

    def run(self, data) -> str | None:
        """None when the check holds, else what went wrong."""
        if self.state is not None:
            return None if data.written_bytes_ok(self.start, self.cond, self.state, []) \
                else self.what
        if self.inside:
            inside = z3.And(*self.inside)
            if self.relax and self._holds_loosely(data, inside, self.inside_cond):
                return None
            if data.prover(self.start, self.inside_cond).valid([], inside) == z3.unsat:
                return None
        elif self.relax and self._holds_loosely(data, self.goal, self.cond):
            return None
        pr = data.prover(self.start, self.cond)
        if self.points:
            r = self._relative(pr)
            if r == z3.unknown:
                r = self._at_points(pr)
        else:
            r = pr.valid([], self.goal)
        if r == z3.unsat:
            return None
        return self.what + (" (solver gave up)" if r == z3.unknown else "")

    def _relative(self, pr) -> z3.CheckSatResult:
        """The query with D written S + DS (World.relative), within
        RELATIVE_MS: the load address and the watched byte are then offsets
        off one base, so the solver needs no carries of D - S.  _at_points
        is the fallback when this gives up."""
        w = pr.world
        return _ask([w.relative(f) for f in pr.base + lemmas(w, [self.goal])],
                    w.relative(self.goal), RELATIVE_MS)

    def _at_points(self, pr) -> z3.CheckSatResult:
        """The goal for each value of W that matters, W substituted in the
        facts too: every fact holds for every W, so for each of these; and
        the goal holds for the other values anyway.  Without W the solver
        no longer has to relate the watched byte to the cursor's interval,
        the part of memmove's overwrite checks whose time depends most on
        the solver's random seed."""
        W = pr.world.W
        for p in self.points:
            goal = z3.substitute(self.goal, (W, p))
            facts = [z3.substitute(f, (W, p)) for f in pr.base] + lemmas(pr.world, [goal])
            r = _ask(facts, goal, TIMEOUT_MS)
            if r != z3.unsat:
                return r
        return z3.unsat

    def _holds_loosely(self, data, goal, cond) -> bool:
        """`goal` follows from the path condition `cond` without the
        constraints that place the fault point (fewer hypotheses, so this
        proves the check; the coverage goals, the count's bound and the
        store intervals on fault paths rarely need them, and they make each
        query slower).  A short limit: otherwise ask in full."""
        fo = data.w.FO
        if mentions(goal, fo):
            return False
        loose = [c for c in cond if not mentions(c, fo)]
        if len(loose) == len(cond):
            return False
        if len(data.w.fault_free(cond, goal)) < len(cond):
            return False      # the full query leaves them out already (World.fault_free)
        return data.prover(self.start, loose).valid_within(goal, RELAXED_MS) == z3.unsat


def _ask(facts: list, goal, limit_ms: int) -> z3.CheckSatResult:
    """unsat when the facts imply goal (one one-shot solver)."""
    return Query([*facts, z3.Not(goal)]).check(limit_ms)
