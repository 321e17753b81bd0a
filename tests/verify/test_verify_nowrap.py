"""verify.symbolic.nowrap: the lemmas it adds follow from the preconditions (so no
verdict changes), and it finds the pointer comparisons inside a query."""
from __future__ import annotations

import pytest
import z3

from copygen.verify.symbolic.nowrap import lemmas, schema, small
from copygen.verify.contract.world import World
from copygen.verify.symbolic.z3ops import bv


def _valid(world, f) -> bool:
    s = z3.Solver()
    s.add(*world.preconditions(), z3.Not(f))
    return s.check() == z3.unsat


@pytest.mark.slow           # over a minute of solver time
def test_the_schema_follows_from_the_preconditions_and_needs_its_guard():
    a, b = z3.BitVecs("a b", 64)
    for kind in ("to", "from", "clear", "memcpy", "memmove"):
        w = World(kind)
        for base in ([w.D, w.S] if w.has_source else [w.D]):
            for strict in (False, True):
                assert _valid(w, schema(w, base, a, b, strict))
    # without the bound on the offsets it is false: D + a can wrap
    w = World("to")
    assert not _valid(w, z3.ULE(w.D + a, w.D + b) == (a <= b))
    assert not _valid(w, z3.Implies(z3.And(small(w, a), b >= 0), z3.ULE(w.D + a, w.D + b) == (a <= b)))


def test_lemmas_cover_every_pointer_comparison_and_only_those():
    w = World("to")
    x, y = z3.BitVecs("x y", 64)
    q = z3.Or(z3.ULE(w.D + x, w.D + w.N + y),            # dst against its end
              z3.Not(z3.UGT(w.S + 8, w.S + x)),            # src against src
              z3.ULT(w.D + x, w.FO),                       # no common base
              z3.ULT(w.D + x, w.S + y))                    # two buffers
    got = lemmas(w, [q, z3.ULE(w.D + x, w.D + w.N + y)])
    assert len(got) == 2
    assert all(_valid(w, lem) for lem in got)
    # each one says what the signed comparison of the offsets says
    s = z3.Solver()
    s.add(*w.preconditions(), *got, x == 16, y == bv(-8), w.N == 64, z3.Not(z3.ULE(w.D + x, w.D + w.N + y)))
    assert s.check() == z3.unsat
    assert lemmas(World("clear"), [z3.ULT(w.S + x, w.S + y)]) == []   # no source: no S lemma
