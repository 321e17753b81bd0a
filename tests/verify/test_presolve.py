"""verify.symbolic.presolve: rounded addresses written back as arithmetic before the
solver sees them, the same values (CHANGELOG.md has what it saves)."""
from __future__ import annotations

import z3

from copygen.verify.symbolic import presolve
from copygen.verify.solver.budget import Query
from copygen.verify.symbolic.presolve import arith_masks

N, S, X = z3.BitVecs("N S X", 64)


def _concats(e) -> list:
    """Every Concat whose first part is the top bits of a term as wide."""
    out, seen, todo = [], set(), [e]
    while todo:
        t = todo.pop()
        if t.get_id() in seen or not z3.is_app(t):
            continue
        seen.add(t.get_id())
        if z3.is_app_of(t, z3.Z3_OP_CONCAT) and z3.is_app_of(t.arg(0), z3.Z3_OP_EXTRACT) \
                and t.arg(0).arg(0).size() == t.size():
            out.append(t)
        todo.extend(t.children())
    return out


def test_a_rounded_address_plus_a_constant_becomes_arithmetic_of_the_same_value():
    rounded = z3.simplify(((N + S - 1) & -8) + 5)
    assert _concats(rounded), "Z3 writes it as a Concat"
    (new,) = arith_masks([rounded])
    assert not _concats(new)
    z3.prove(new == ((N + S - 1) & -8) + 5)
    s = z3.Solver()
    s.add(new != rounded)
    assert s.check() == z3.unsat


def test_constants_in_several_parts_and_other_roundings_are_read_as_one():
    e = z3.Concat(z3.Extract(63, 4, X), z3.BitVecVal(1, 2), z3.BitVecVal(2, 2))
    (new,) = arith_masks([e])
    assert not _concats(new)
    s = z3.Solver()
    s.add(new != (X & -16) + 6)
    assert s.check() == z3.unsat


def test_other_concats_are_left_as_they_are():
    swapped = z3.Concat(z3.Extract(31, 0, X), z3.Extract(63, 32, X))
    narrow = z3.Concat(z3.Extract(31, 3, X), z3.BitVecVal(0, 3))
    whole = z3.Concat(z3.BitVecVal(0, 32), z3.Extract(31, 0, X))
    for e in (swapped, narrow, whole):
        assert arith_masks([e])[0].eq(e)


def test_formulas_are_rewritten_inside_and_shared_terms_once():
    rounded = z3.simplify((N + 7) & -8)
    f = z3.And(z3.ULT(rounded, S), rounded == X + 8)
    (new,) = arith_masks([f])
    assert not _concats(new)
    left, right = new.arg(0).arg(0), new.arg(1).arg(0)
    assert left.eq(right), "one rewritten term for the one shared term"
    s = z3.Solver()
    s.add(new != f)
    assert s.check() == z3.unsat


def test_a_query_asks_the_rewritten_formulas_with_the_same_answer():
    goal = z3.simplify(((N + S - 1) & -8) + 2) == (N + S - 1) - ((N + S - 1) & 7) + 2
    q = Query([z3.Not(goal)])
    assert not any(_concats(f) for f in q.facts)
    assert q.check(1000) == z3.unsat
    presolve.REWRITE = False
    try:
        q = Query([z3.Not(goal)])
        assert any(_concats(f) for f in q.facts)
        assert q.check(1000) == z3.unsat
    finally:
        presolve.REWRITE = True


def test_terms_of_another_context_are_left_alone():
    ctx = z3.Context()
    e = z3.Concat(z3.Extract(63, 3, z3.BitVec("y", 64, ctx)), z3.BitVecVal(1, 3, ctx))
    assert arith_masks([e])[0].eq(e)
