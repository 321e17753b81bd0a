"""verify.solver.answers: a query asked again, to the character, is answered from
the store as the solver answered it; nothing else is."""
from __future__ import annotations

import pytest
import z3

from copygen.verify.solver import answers
from copygen.verify.solver.budget import Query
from copygen.verify.checks.dataproof import ByteProver
from copygen.verify.invariants.houdini import fresh_state
from copygen.verify.contract.world import World


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("COPYGEN_ANSWERS", str(tmp_path / "answers"))
    monkeypatch.setattr(answers, "MIN_SECONDS", 0.0)
    return tmp_path / "answers"


def _kept(root) -> list:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _mul(c: int) -> list:
    """x * y == c with both factors above 1: unsat for a prime c."""
    x, y = z3.BitVecs("x y", 24)
    return [x * y == c, z3.UGT(x, 1), z3.UGT(y, 1), z3.ULT(x, 1 << 12), z3.ULT(y, 1 << 12)]


class _Refuse:
    """A solver that must not be asked."""
    def check(self):
        raise AssertionError("the solver was asked again")

    def set(self, *a):
        pass


def test_an_unsat_answer_comes_back_for_the_same_query_only(store):
    assert Query(_mul(4093)).check(3000) == z3.unsat
    assert len(_kept(store)) == 1
    again = Query(_mul(4093))
    again._solvers = lambda: [_Refuse()]
    assert again.check(3000) == z3.unsat
    # another constant, another budget: asked, not recalled
    assert Query(_mul(4091)).check(3000) == z3.unsat
    assert Query(_mul(4093)).check(2000) == z3.unsat
    assert len(_kept(store)) == 3


def test_sat_is_never_kept_and_neither_is_anything_without_a_store(store, monkeypatch):
    q = Query(_mul(4095))
    assert q.check(3000) == z3.sat and q.true_in_model(_mul(4095)) == [True] * 5
    assert _kept(store) == []
    monkeypatch.delenv("COPYGEN_ANSWERS")
    answers.configure(None)
    assert Query(_mul(4093)).check(3000) == z3.unsat
    assert _kept(store) == []


def test_a_budget_that_ran_out_is_kept_a_wall_clock_stop_is_not(store):
    x, y = z3.BitVecs("x y", 64)
    # 2^62 - 57 is prime: no factors below 2^32, too hard for 20 ms
    hard = [x * y == 4611686018427387847, z3.UGT(x, 1), z3.UGT(y, 1),
            z3.ULT(x, 1 << 32), z3.ULT(y, 1 << 32)]
    assert Query(hard).check(20) == z3.unknown
    assert len(_kept(store)) == 1
    again = Query(hard)
    again._solvers = lambda: [_Refuse()]
    assert again.check(20) == z3.unknown
    answers.remember(_mul(4093), "QF_BV", 7, z3.unknown, 5.0, "canceled")
    assert len(_kept(store)) == 1


def test_small_queries_are_not_written_out(store, monkeypatch):
    monkeypatch.setattr(answers, "MIN_SECONDS", 60.0)
    assert Query(_mul(4093)).check(3000) == z3.unsat
    assert _kept(store) == []


def test_every_goal_valid_is_kept_as_a_whole(store, monkeypatch):
    w = World("to")
    prover = ByteProver(w, [z3.ULT(w.N, 100)])
    goals = [z3.ULT(w.N, 200), z3.ULE(w.N, 99)]
    assert prover.all_valid(goals)
    monkeypatch.setattr(ByteProver, "_all_valid", lambda *a: pytest.fail("asked again"))
    assert ByteProver(w, [z3.ULT(w.N, 100)]).all_valid(goals)
    with pytest.raises(pytest.fail.Exception):
        ByteProver(w, [z3.ULT(w.N, 100)]).all_valid([z3.ULT(w.N, 300)])


def test_a_loop_head_is_named_by_its_distance_from_the_entry():
    w = World("to")
    a = fresh_state(w, 0x80200040, entry=0x80200000)
    b = fresh_state(w, 0x90000040, entry=0x90000000)
    c = fresh_state(w, 0x80200040, entry=0x80200100)
    assert [str(v) for v in a.x] == [str(v) for v in b.x]
    assert str(a.x[5]) != str(c.x[5])


def test_a_check_in_the_callers_context_keeps_its_unsat_only(store):
    from copygen.verify.solver.budget import shared_check
    r, s = shared_check(_mul(4093), 3000)
    assert r == z3.unsat and len(_kept(store)) == 1
    assert shared_check(_mul(4093), 3000) == (z3.unsat, None)
    r, s = shared_check(_mul(4095), 3000)
    assert r == z3.sat and s.model() is not None and len(_kept(store)) == 1
