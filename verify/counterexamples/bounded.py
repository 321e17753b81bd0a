"""The bounded exhaustive cross-check: every n <= N, all 64 (src, dst)
alignment pairs, no fault, a fault at every page-boundary offset inside
the user buffer and one at its first byte, run concretely in the emulator
with two data patterns; for memmove, every distance of src from dst that
overlaps it (both directions) and the nearest disjoint ones.

It cross-checks the unbounded proof: a clause the proof left unknown that
holds in every run is reported "holds for n <= N" when the user asked for
the bound (--bounded N), else it stays unknown and the report says how far
the runs went; a run that breaks a clause makes it violated with that run
as the counterexample.
Role: the concrete cross-check.  May import emu.elf, verify.contract.clauses,
verify.invariants.concrete, verify.counterexamples.exhaustive, verify.solver.parallel, verify.counterexamples.replay.
"""
from __future__ import annotations

import random

from copygen.emu.elf import read_elf
from copygen.verify.contract.clauses import BY_KIND, NOT_CHECKED, STRING_KINDS
from copygen.verify.invariants.concrete import run, verdicts
from copygen.verify.counterexamples.exhaustive import scenarios, scenarios_of
from copygen.verify.solver.parallel import fork_map
from copygen.verify.counterexamples.replay import describe

__all__ = ["apply_bounded", "check", "scenarios"]


def check(elf: str, symbol: str, kind: str, limit: int, jobs: int = 1) -> dict[str, str]:
    """clause -> first counterexample text, from the smallest n that breaks
    it (absent: held in every run).  The sizes are spread over `jobs`
    processes; each size's data comes from its own seed, so the runs are
    the same however many processes there are."""
    image = read_elf(elf)
    string = kind in STRING_KINDS
    clauses = set(BY_KIND[kind])

    def one(n: int) -> dict[str, str]:
        bad: dict[str, str] = {}
        for sc in scenarios_of(kind, n, random.Random(limit * 1009 + n)):
            out = run(image, symbol, sc)
            for clause, ok in verdicts(sc, out, string).items():
                if not ok and clause in clauses and clause not in bad:
                    bad[clause] = describe(sc, out, clause)
        return bad
    sizes = list(range(limit, -1, -1))          # the largest (slowest) first
    found = fork_map(lambda i: one(sizes[i]), len(sizes), jobs)
    bad: dict[str, str] = {}
    for per_n in reversed(found):               # smallest n first
        for clause, text in per_n.items():
            bad.setdefault(clause, text)
    return bad


def apply_bounded(elf: str, rep, limit: int, jobs: int = 1, asked: bool = True) -> None:
    """Fold the exhaustive runs into a report: a clause some run breaks is
    violated (with that run); an unknown or not checked one that every run
    keeps holds for n <= limit when the user `asked` for the bound
    (--bounded).  A run nobody asked for (memmove's, verify.checks.prove)
    decides no verdict but a violation: such a clause stays unknown, and
    the report says how far the runs went (RoutineReport.held_up_to)."""
    bad = check(elf, rep.symbol, rep.kind, limit, jobs)
    # what a run does not observe: SUM at each access (loads are recorded)
    unobserved = ("S2",)
    for clause, st in list(rep.status.items()):
        if clause in bad:
            rep.status[clause] = "violated"
            rep.detail[clause] = f"exhaustive run n <= {limit}: {bad[clause]}"
        elif st not in ("unknown", NOT_CHECKED) or clause in unobserved:
            continue
        elif not asked:
            rep.held_up_to[clause] = limit
            rep.detail[clause] += (f"; every n <= {limit} ran and kept it, which is no proof "
                                   f"(--bounded {limit} accepts that bound)")
        else:
            rep.status[clause] = f"holds for n <= {limit}"
            rep.detail[clause] = (f"every n <= {limit} checked exhaustively; not proved: the "
                                  "proof stopped at a violation" if st == NOT_CHECKED else
                                  rep.detail[clause] + f"; every n <= {limit} checked exhaustively")
