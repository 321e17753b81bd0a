"""Verdicts that concrete runs decide before the symbolic proof starts.

The sample runs (verify.invariants.samples.collect) are calls in the emulator under
the contract, like a replay: one that hangs is a T1 counterexample, one
that breaks a required clause is a counterexample of that clause.  Either
decides the routine's verdict (violated, exit 3), so the proof stops there
instead of spending minutes in Houdini on a routine already known wrong
(CHANGELOG.md, "Verdicts", has the mutant that shows it).  The small
concrete search (verify.counterexamples.replay.SmallSearch) is run then, for the smallest
counterexamples and every other clause a run shows broken; the clauses no
run breaks are reported NOT_CHECKED, not proved.

Role: `does_not_terminate`, `decides`, `violated_by_runs`.  May import
verify.contract.clauses, verify.invariants.concrete, verify.invariants.samples, verify.counterexamples.replay.
"""
from __future__ import annotations

import time

from copygen.verify.contract.clauses import BY_KIND, NOT_CHECKED, STRING_KINDS, required
from copygen.verify.invariants.concrete import STEPS_BASE, STEPS_PER_BYTE, step_bound
from copygen.verify.counterexamples.replay import SmallSearch, describe, example
from copygen.verify.invariants.samples import smallest_hang

__all__ = ["NOT_CHECKED", "decides", "does_not_terminate", "violated_by_runs"]


def does_not_terminate(prog, rep, stuck: list, t0: float):
    """A sample run that outlived T1's bound: T1 is violated, shown with the
    smallest n that hangs and the pc it was stuck at.  Nothing else is
    claimed: a routine that does not return proves nothing vacuously."""
    sc, out = smallest_hang(prog.image, rep.symbol, *min(stuck, key=lambda s: s[0].N))
    for clause in BY_KIND[rep.kind]:
        rep.status[clause] = "unknown"
        rep.detail[clause] = "not proved: the routine does not terminate (T1)"
    rep.status["T1"] = "violated"
    rep.detail["T1"] = (f"no return within {step_bound(sc.N)} instructions "
                        f"({STEPS_BASE} + {STEPS_PER_BYTE} per byte): {describe(sc, out, 'T1')}")
    rep.examples["T1"] = example(sc, out, "T1")
    rep.seconds = time.time() - t0
    return rep


def decides(kind: str, broken: dict) -> bool:
    """Whether the sample runs' broken clauses decide the verdict: one of
    them is required (a property, e.g. B2s, decides nothing)."""
    return any(c in broken for c in required(kind))


def violated_by_runs(prog, rep, broken: dict, t0: float):
    """The report when the sample runs broke a required clause: every clause
    that a sample run or the small search breaks is violated, shown with the
    search's run where it has one (its smallest sizes come first), else the
    smallest sample run; every other clause is NOT_CHECKED."""
    search = SmallSearch(prog.image, rep.symbol, rep.kind, rep.kind in STRING_KINDS)
    found = search.failing()
    shown = {c: (*found[c], "found among small calls before the proof") if c in found else
             (*broken[c], "shown by a sample run before the proof")
             for c in BY_KIND[rep.kind] if c in found or c in broken}
    bad = [c for c in shown if c in required(rep.kind)]
    why = (f"{', '.join(bad)} {'is' if len(bad) == 1 else 'are'} violated "
           "(concrete runs, before the proof); --all-clauses proves the others")
    for clause in BY_KIND[rep.kind]:
        if clause not in shown:
            rep.status[clause], rep.detail[clause] = NOT_CHECKED, why
            continue
        sc, out, how = shown[clause]
        rep.status[clause] = "violated"
        rep.detail[clause] = f"{how}: {describe(sc, out, clause)}"
        rep.examples[clause] = example(sc, out, clause)
    rep.seconds = time.time() - t0
    return rep
