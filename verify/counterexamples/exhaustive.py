"""Every call of a size: the scenarios the bounded cross-check
(verify.counterexamples.bounded) and the small concrete search (verify.counterexamples.replay) run.  For a
copy, every (src, dst) alignment pair, no fault, a fault at every
page-boundary offset inside the user buffer and one at its first byte; for
memmove, every distance of src from dst that overlaps it (both directions)
and the nearest disjoint ones.

Role: enumeration only, below both of its users.  May import
verify.contract.clauses, verify.invariants.concrete, verify.invariants.samples.
"""
from __future__ import annotations

import random

from copygen.verify.contract.clauses import OVERLAP_KINDS
from copygen.verify.invariants.concrete import PAGE, Scenario
from copygen.verify.invariants.samples import scenario


def scenarios(kind: str, limit: int, rng: random.Random):
    """Every scenario of every n <= limit."""
    for n in range(limit + 1):
        yield from scenarios_of(kind, n, rng)


def scenarios_of(kind: str, n: int, rng: random.Random):
    """The scenarios of one n (see the module docstring)."""
    if kind in OVERLAP_KINDS:
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
