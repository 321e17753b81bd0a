"""The pieces that make Houdini cheaper, each on its own: the order in which
loop heads are settled, the facts about the fault point a query can do
without, the guesses a run shows false (faulting runs, bounds that grow
with n)."""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import z3

from copygen.verify.invariants.candidates import Cand
from copygen.verify.invariants.houdini import stages
from copygen.verify.invariants.concrete import PAGE
from copygen.verify.invariants.infer import _bound_pair, guess
from copygen.verify.invariants.samples import faulting, samples
from copygen.verify.contract.world import World
from copygen.verify.symbolic.z3ops import bv


def _ends(*edges):
    return [(a, SimpleNamespace(pc=b)) for a, b in edges]


def test_heads_settle_after_every_head_with_a_path_into_them():
    # entry -> 1; 1 -> 2, 3 (independent); 2, 3 -> 4; 5 <-> 6 a nest; 6 -> 4
    got = stages(_ends((None, 1), (1, 1), (1, 2), (1, 3), (2, 2), (2, 4), (3, 4),
                       (4, 4), (None, 5), (5, 6), (6, 5), (6, 4)))
    assert got == [{1, 5, 6}, {2, 3}, {4}]
    assert stages(_ends((None, 7), (7, 7))) == [{7}]
    assert stages([]) == []


def test_facts_about_the_fault_point_are_left_out_only_when_no_model_needs_them():
    w = World("to")
    x = z3.BitVec("x", 64)
    no_fault_here = z3.Not(w.user_access_faults(w.D + x, 8))
    faulted = w.user_access_faults(w.D + x, 8)
    goal = z3.ULE(x, w.N)
    facts = [*w.preconditions(), z3.ULE(x + 8, w.N), no_fault_here]
    kept = w.fault_free(facts, goal)
    assert no_fault_here not in kept and len(kept) < len(facts)
    assert all(f in facts for f in kept)
    # the same verdict with and without them
    for g in (goal, z3.ULE(x, bv(4))):
        full, part = z3.Solver(), z3.Solver()
        full.add(*facts, z3.Not(g))
        part.add(*w.fault_free(facts, g), z3.Not(g))
        assert full.check() == part.check()
    # a path that faulted needs them, and so does a goal about the fault point
    assert w.fault_free(facts + [faulted], goal) == facts + [faulted]
    assert w.fault_free(facts, z3.ULE(w.FO, w.N)) == facts


def test_bounds_that_grow_with_n_are_not_guessed():
    ns = [8, 16, 64, 200, 400, 1000]
    grows = [n - 8 for n in ns]            # e.g. a0 - D at a byte loop's last visit
    fixed = [-9, -3, -5, -9, -3, -4]       # its extremes reached by small n
    kinds = {c.kind: c.args[-1] for c in _bound_pair("ge", "le", ((10,), "D"), grows, ns)}
    assert kinds == {"ge": 0}
    got = _bound_pair("ge", "le", ((10,), "E"), fixed, ns)
    assert {c.kind for c in got} == {"ge", "le"}
    assert Cand("le", ((10,), "E", max(fixed))) in got
    assert Cand("ge", ((10,), "E", min(fixed))) in got


def test_faulting_samples_put_the_page_boundary_inside_the_user_buffer():
    rng = random.Random(5)
    for kind, side in (("to", "D"), ("from", "S"), ("clear", "D")):
        for n in (1, 9, 100, 2000):
            for _ in range(20):
                sc = faulting(kind, n, rng)
                u = getattr(sc, side)
                assert sc.F is not None and u <= sc.F < u + n
                assert sc.F == u or sc.F % PAGE == 0
    assert all(sc.F is None for sc in samples("memcpy"))
    assert any(sc.F is not None for sc in samples("to"))


@pytest.mark.slow
def test_guesses_at_the_byte_loop_include_the_states_after_a_fault(built_examples):
    """After a word fault u74pipelined's copy retries byte by byte from far
    before the end: a bound like a0 >= end - 128 holds in every complete
    copy but not after a fault, and is no longer guessed."""
    from copygen.verify.invariants.samples import collect
    from copygen.verify.symbolic.program import Program
    prog = Program.load(str(built_examples["u74pipelined"].elf))
    sym = "__asm_copy_to_user"
    routine = prog.routine(prog.image.address_of(sym))
    snaps = collect(prog.image, sym, "to", routine.cut_points)
    byte_loop = max(pc for pc in routine.cut_points
                    if prog.fetch(pc).name == "lbu" and prog.fetch(pc + 4).name == "sb")
    assert any(sc.F is not None for *_, sc, _ in snaps[byte_loop])
    lows = [c for c in guess(snaps[byte_loop], "to") if c.kind == "ge" and c.args[:2] == ((10,), "E")]
    assert all(c.args[2] < -1000 for c in lows), lows


def test_byte_queries_leave_out_the_no_fault_facts_a_goal_does_not_need():
    """A byte prover keeps the path's "this access did not fault" facts
    out of queries whose goal does not mention the fault point
    (World.fault_free): same verdicts, fewer facts.  A goal about the
    fault point, or a path that faulted, gets every fact."""
    from copygen.verify.checks.dataproof import ByteProver
    w = World("to")
    x = z3.BitVec("x", 64)
    no_fault_here = z3.Not(w.user_access_faults(w.D + x, 8))
    facts = [*w.preconditions(), z3.ULT(x, bv(16)), no_fault_here]
    pr = ByteProver(w, facts)
    goal = z3.ULE(x, bv(16))
    assert no_fault_here in pr.base and no_fault_here not in pr.facts_for([goal])
    assert pr.facts_for([z3.ULE(w.FO, w.N)]) is pr.base
    assert pr.valid([], goal) == z3.unsat and pr.all_valid([goal, z3.ULE(x, bv(20))])
    assert pr.valid([], z3.ULE(x, bv(4))) == z3.sat
    faulted = ByteProver(w, facts + [w.user_access_faults(w.D + x, 8)])
    assert faulted.facts_for([goal]) is faulted.base
