"""The bounded exhaustive cross-check: every n <= N, all 64 (src, dst)
alignment pairs, no fault, a fault at every page-boundary offset inside
the user buffer and one at its first byte, run concretely in the emulator
with two data patterns; for memmove, every distance of src from dst that
overlaps it (both directions) and the nearest disjoint ones.

It cross-checks the unbounded proof: a clause the proof left unknown that
holds in every run is reported "holds for n <= N"; a run that breaks a
clause makes it violated with that run as the counterexample.
Role: concrete enumeration.  May import emu, verify.concrete, verify.samples,
verify.parallel, verify.replay, verify.early.
"""
from __future__ import annotations

import random

from copygen.emu.elf import read_elf
from copygen.verify.clauses import BY_KIND, STRING_KINDS
from copygen.verify.concrete import Scenario, run, verdicts
from copygen.verify.early import NOT_CHECKED
from copygen.verify.samples import scenario
from copygen.verify.parallel import fork_map
from copygen.verify.replay import describe

PAGE = 4096


def scenarios(kind: str, limit: int, rng: random.Random):
    """Every scenario of every n <= limit."""
    for n in range(limit + 1):
        yield from scenarios_of(kind, n, rng)


def scenarios_of(kind: str, n: int, rng: random.Random):
    """The scenarios of one n (see the module docstring)."""
    if kind == "memmove":
        yield from _overlaps(n, rng)
        return
    user = {"to": "dst", "from": "src", "clear": "dst"}.get(kind)
    for d in range(8):
        for s in range(8 if kind in ("to", "from", "memcpy") else 1):
            base = scenario(kind, n, d, s, rng)
            yield base
            if not user:
                continue
            if n:       # the page holding the buffer's first byte inaccessible
                yield Scenario(kind, base.D, base.S, n, base.src, base.dst0, base.C,
                               F=base.U)
            for f in range(1, n + 1):      # fault boundary f bytes into the buffer
                sc = scenario(kind, n, d, s, rng)
                U = sc.D if user == "dst" else sc.S
                shift = (PAGE - ((U + f) % PAGE)) % PAGE
                D = sc.D + (shift if user == "dst" else 0)
                S = sc.S + (shift if user == "src" else 0)
                U = D if user == "dst" else S
                yield Scenario(kind, D, S, n, sc.src, sc.dst0, sc.C, F=U + f)


def _overlaps(n: int, rng: random.Random):
    """memmove: every dst alignment, and src at every distance from dst
    that overlaps it, in both directions, plus the nearest ones that do not
    (src - dst from -(n + 8) to n + 8)."""
    for d in range(8):
        base = scenario("memmove", n, d, 0, rng)
        for delta in range(-(n + 8), n + 9):
            sc = Scenario("memmove", base.D, base.D + delta, n, base.src, b"", base.C)
            sc.dst0 = sc.initial(sc.D, n)
            yield sc


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


def apply_bounded(elf: str, rep, limit: int, jobs: int = 1) -> None:
    """Fold the exhaustive runs into a report: a clause some run breaks is
    violated (with that run); an unknown or not checked one that every run
    keeps holds for n <= limit."""
    bad = check(elf, rep.symbol, rep.kind, limit, jobs)
    # what a run does not observe: SUM at each access (loads are recorded)
    unobserved = ("S2",)
    for clause, st in list(rep.status.items()):
        if clause in bad:
            rep.status[clause] = "violated"
            rep.detail[clause] = f"exhaustive run n <= {limit}: {bad[clause]}"
        elif st in ("unknown", NOT_CHECKED) and clause not in unobserved:
            rep.status[clause] = f"holds for n <= {limit}"
            rep.detail[clause] = (f"every n <= {limit} checked exhaustively; not proved: the "
                                  "proof stopped at a violation" if st == NOT_CHECKED else
                                  rep.detail[clause] + f"; every n <= {limit} checked exhaustively")
