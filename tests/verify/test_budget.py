"""verify.solver.budget's Query: the SMT core first, QF_BV's default solver where the
core gives up, every answer the solvers' own and its model usable."""
from __future__ import annotations

from pathlib import Path

import pytest
import z3

from copygen.verify.solver import budget
from copygen.verify.solver.budget import Query, translated

BATCH = Path(__file__).parent.parent / "queries" / "houdini_batch.smt2"


@pytest.fixture(autouse=True)
def no_store(monkeypatch):
    monkeypatch.setenv("COPYGEN_ANSWERS", "")
    from copygen.verify.solver import answers
    answers.configure(None)


def _batch() -> list:
    return list(z3.parse_smt2_file(str(BATCH)))


def test_the_core_answers_a_houdini_batch_the_default_solver_cannot_within_its_budget(monkeypatch):
    # 1,412,739 steps of the core against more than 4,000,000 of QF_BV's default
    assert Query(_batch()).check(1000) == z3.unsat
    monkeypatch.setattr(budget, "CORE", False)
    assert Query(_batch()).check(1000) == z3.unknown


def test_what_the_core_gives_up_on_the_default_solver_answers(monkeypatch):
    monkeypatch.setattr(budget, "CORE_TACTICS", ("simplify", "fail"))
    x, y = z3.BitVecs("x y", 24)
    q = Query([x * y == 4093, z3.UGT(x, 1), z3.UGT(y, 1), z3.ULT(x, 1 << 12), z3.ULT(y, 1 << 12)])
    assert q.check(3000) == z3.unsat
    assert q._answered is q.solver


def test_a_sat_answer_of_the_core_evaluates_the_callers_terms():
    # solve-eqs takes x and y out of the query: the model must still give them
    x, y, z = z3.BitVecs("x y z", 64)
    q = Query([x == y + 1, y == 5, z3.UGT(z, x)])
    assert q.check(1000) == z3.sat
    assert q._solver is None, "the default solver was made for a query the core answered"
    assert q._answered is not q.solver
    assert q.true_in_model([x == 6, y == 5, x == 7, z3.UGT(z, 6)]) == [True, True, False, True]
    assert q.model().eval(x * 2, model_completion=True).as_long() == 12


def test_the_logic_of_arrays_goes_to_its_default_solver_alone():
    mem = z3.Array("mem", z3.BitVecSort(64), z3.BitVecSort(8))
    a = z3.BitVec("a", 64)
    q = Query([z3.Store(mem, a, 7)[a] != 7], logic="QF_ABV")
    assert list(q._solvers()) == [q.solver]
    assert q.check(1000) == z3.unsat


def test_translated_keeps_each_formula_and_its_kind_in_the_new_context():
    x, y = z3.BitVecs("x y", 64)
    shared = x + y
    fs = [z3.ULT(shared, 9), shared == 3, z3.BoolVal(True), z3.Not(x == y)]
    ctx = z3.Context()
    out = translated(fs, ctx)
    assert [str(f) for f in out] == [str(f) for f in fs]
    assert all(f.ctx is ctx and type(f) is type(g) for f, g in zip(out, fs))
    assert translated([], ctx) == []
