"""Pieces of the verifier on their own: live registers at loop heads, the
W-free interval goals that stand for "every byte below a bound written"
and "nothing written at or past it", and solver budgets that do not depend
on the machine's load."""
from __future__ import annotations

import z3

from copygen.emu.insn.decode import ABI
from copygen.verify.invariants.candidates import Cand, registers
from copygen.verify.checks.coverage import cover_goals, inside_goals
from copygen.verify.invariants.liveness import live_at, prune
from copygen.verify.symbolic.program import Program

REG = {name: i for i, name in enumerate(ABI)}


def _routine(built, stem, symbol):
    prog = Program.load(str(built[stem].elf))
    return prog, prog.routine(prog.image.address_of(symbol))


def _byte_loop_head(prog, routine):
    """The head of the byte loop: the last loop whose body is lbu/sb (the
    alignment head comes first)."""
    heads = [pc for pc in routine.cut_points
             if prog.fetch(pc).name == "lbu" and prog.fetch(pc + 4).name == "sb"]
    assert heads, "no byte loop"
    return max(heads)


def test_byte_loop_needs_only_its_cursors_and_what_the_caller_keeps(built_examples):
    prog, routine = _routine(built_examples, "c910fast", "__asm_copy_to_user")
    live = live_at(prog, routine)
    head = _byte_loop_head(prog, routine)
    names = {ABI[r] for r in live[head]}
    assert {"a0", "a1", "a3"} <= names                      # dst, src, end
    assert {"ra", "sp", "s0", "s11"} <= names               # A1 reads them at the return
    assert not names & {"a2", "t0", "t1", "a4", "t6"}       # overwritten before read


def test_a_faulting_load_keeps_what_its_fixup_reads_live(built_examples):
    # the word loop's fault exits read a0 (and a1, to resume the byte loop)
    prog, routine = _routine(built_examples, "kernel2021", "__asm_copy_to_user")
    live = live_at(prog, routine)
    loads = [pc for pc in routine.pcs if prog.fetch(pc).name == "ld" and pc in prog.image.extable]
    assert loads
    for pc in loads:
        assert {REG["a0"], REG["a1"], REG["a3"]} <= live[pc]


def test_prune_drops_only_guesses_about_dead_registers(built_examples):
    prog, routine = _routine(built_examples, "c910fast", "__asm_copy_to_user")
    head = _byte_loop_head(prog, routine)
    dead = Cand("unchanged", (REG["t0"],))
    kept = [Cand("unchanged", (REG["s0"],)), Cand("cursor", (REG["a0"], 0)),
            Cand("rle", (REG["a0"], REG["a3"], 0)), Cand("nge", (71,))]
    assert prune(prog, routine, {head: kept + [dead]})[head] == kept
    assert registers(Cand("linear", ((10,), "D", (11,), "S", 0))) == {10, 11}


def _valid(facts, goal) -> bool:
    s = z3.Solver()
    s.add(*facts, z3.Not(goal))
    return s.check() == z3.unsat


def test_interval_goals_agree_with_the_question_over_every_byte():
    W, lo, lim = z3.BitVecs("W lo lim", 64)
    v = lambda n: z3.BitVecVal(n, 64)
    # stores of 8 bytes at [0, 8) and [8, 16), plus a head written below lim
    head = z3.Bool("head")
    written = z3.Or(head, z3.ULT(W - v(0), v(8)), z3.ULT(W - v(8), v(8)))
    facts = [head == z3.ULT(W, lim)]
    for upto, bound, covered, inside in ((16, 0, True, True), (17, 0, False, True),
                                         (16, 16, True, True), (24, 24, True, True),
                                         (25, 24, False, True), (12, 0, True, False)):
        fs = facts + [lim == v(bound)]
        cover = cover_goals(W, written, v(upto), head, (v(0), v(bound)))
        ins = inside_goals(W, written, v(upto), head, (v(0), v(bound)))
        assert _valid(fs, z3.And(*cover)) == covered, (upto, bound)
        assert _valid(fs, z3.And(*ins)) == inside, (upto, bound)
        # the direct questions over a free W say the same
        assert _valid(fs, z3.Implies(z3.ULT(W, v(upto)), written)) == covered
        assert _valid(fs, z3.Implies(written, z3.ULT(W, v(upto)))) == inside
    assert cover_goals(W, z3.Or(written, W == lo), v(8)) is None      # not an interval
    # a backward copy's head: written from lim to the end (24), plus a store at [0, 8)
    back = z3.Bool("back")
    written = z3.Or(back, z3.ULT(W - v(0), v(8)))
    for bound, covered in ((8, True), (9, False), (0, True)):
        fs = [back == z3.UGE(W, lim), z3.ULT(W, v(24)), lim == v(bound)]
        cover = cover_goals(W, written, v(24), back, (v(bound), v(24)))
        assert _valid(fs, z3.And(*cover)) == covered, bound
        assert _valid(fs, z3.Implies(z3.ULT(W, v(24)), written)) == covered


def test_stores_that_meet_end_to_start_are_one_interval():
    """A block of stores at one base's consecutive offsets is one interval
    for the cover goals (one right end to cover instead of one per store),
    the same set of bytes; a store past a gap stays apart."""
    from copygen.verify.checks.coverage import intervals
    W, a = z3.BitVecs("W a", 64)
    v = lambda n: z3.BitVecVal(n, 64)
    stores = [(16, 4), (0, 8), (8, 8), (24, 8)]
    written = z3.Or(*[z3.ULT(W - (a + v(off)), v(size)) for off, size in stores])
    ivs = intervals(W, written)
    assert len(ivs) == 2
    assert sorted(z3.simplify(hi - lo).as_long() for _, lo, hi in ivs) == [8, 20]
    assert _valid([], written == z3.Or(*[member(W) for member, _, _ in ivs]))
    # the cover of [a, a + 20) holds, of [a, a + 21) not
    for upto, covered in ((20, True), (21, False)):
        goals = cover_goals(W, written, a + v(upto), start=a)
        assert _valid([], z3.And(*goals)) == covered, upto


def test_loads_of_a_block_that_fault_resume_as_one_path(built_examples):
    """copy_from_user's loads-first block: a fault on any of its 8 loads
    resumes the byte loop at the same cursors; merged, the one end's
    condition is exactly the disjunction of theirs."""
    from copygen.verify.symbolic.explore import Explorer, merge_cut_ends
    from copygen.verify.invariants.houdini import fresh_state
    from copygen.verify.invariants.infer import bases
    from copygen.verify.invariants.samples import collect
    from copygen.verify.contract.world import KINDS, World
    sym = "__asm_copy_from_user"
    prog, routine = _routine(built_examples, "kernel2021", sym)
    world = World(KINDS[sym])
    snaps = collect(prog.image, sym, KINDS[sym], routine.cut_points)
    word_loop = min(pc for pc in routine.cut_points if prog.fetch(pc).name == "ld")
    seg = Explorer(prog, world, routine.cut_points, []).run(
        fresh_state(world, word_loop, bases(snaps[word_loop])))
    head = _byte_loop_head(prog, routine)
    live = live_at(prog, routine)
    before = [e for e in seg.ends if e.kind == "cut" and e.pc == head]
    after = [e for e in merge_cut_ends(seg.ends, {pc: live[pc] for pc in routine.cut_points})
             if e.kind == "cut" and e.pc == head]
    assert len(before) - len(after) == 7                    # 8 load faults -> 1 end
    merged = [e for e in after if e not in before]
    assert len(merged) == 1
    same = [e for e in before if e.state.x[10].eq(merged[0].state.x[10])
            and e.state.stores == merged[0].state.stores]
    assert len(same) == 8
    assert _valid([], z3.And(*merged[0].cond) == z3.Or(*[z3.And(*e.cond) for e in same]))


def test_guesses_relate_a_block_loop_cursor_to_its_end(built_examples):
    """GCC's unrolled loop in c910fast's memcpy: the guesses include that the
    dst cursor and the loop end are whole 64-byte blocks apart, that the end
    plus the count's remainder is dst + n, and that the block bytes are the
    count rounded down (guessed only when true in every sampled run), and
    Houdini keeps them."""
    from copygen.verify.invariants.candidates import formula, term_exprs
    from copygen.verify.invariants.houdini import Proof
    from copygen.verify.invariants.infer import bases, guess
    from copygen.verify.invariants.samples import collect
    from copygen.verify.contract.world import World
    prog, routine = _routine(built_examples, "c910fast", "memcpy")
    snaps = collect(prog.image, "memcpy", "memcpy", routine.cut_points)
    # the unrolled loop: the head whose first ten instructions hold its
    # eight loads
    def first(pc: int, n: int) -> list[str]:
        out = []
        for _ in range(n):
            insn = prog.fetch(pc)
            out.append(insn.name)
            pc += insn.length
        return out
    head = next(pc for pc in routine.cut_points if first(pc, 10).count("ld") == 8)
    got = [c for c in guess(snaps[head], "memcpy") if c.kind in ("rmod", "mask")]
    assert any(c.kind == "rmod" and c.args[2] == 63 for c in got), got
    assert any(c.kind == "mask" and c.args[2:4] == (63, "E") for c in got), got
    assert any(c.kind == "mask" and c.args[2:4] == (63, "@") for c in got), got
    proof = Proof(prog, routine, World("memcpy"), {pc: bases(s) for pc, s in snaps.items()})
    inv = proof.houdini({head: got})
    # the frame's registers (sp, and s0 above it: string.c keeps a frame,
    # as Kbuild compiles it) hold one value in every sampled run, so a
    # guess may tie them to the count; sp is symbolic in the proof, and
    # Houdini drops those, keeping every other
    frame = {2, 8}
    assert set(inv[head]) == {c for c in got if not frame & set(c.args[:2])}
    assert any(c.kind == "rmod" and c.args[2] == 63 for c in inv[head]), inv[head]
    # and the formulas mean what the guesses measured: false on a state
    # where the cursor is one byte off a block
    w = World("memcpy")
    rm = next(c for c in got if c.kind == "rmod")
    xs = [z3.BitVecVal(0, 64)] * 32
    xs[rm.args[0]], xs[rm.args[1]] = z3.BitVecVal(128, 64), z3.BitVecVal(1, 64)
    f = formula(rm, xs, None, None, None, w, term_exprs(w))
    assert z3.is_false(z3.simplify(f))


def test_a_long_byte_loop_keeps_the_first_and_last_visits_of_each_run(built_examples):
    """c910fast's memmove copies a misaligned overlap byte by byte: a run
    of 2000 bytes visits the backward byte loop ~2000 times.  collect keeps
    the first and last ENDS_KEPT visits of each run (the last one sees the
    count at its final value), and every visit of a shorter run."""
    from copygen.verify.invariants import samples
    prog, routine = _routine(built_examples, "c910fast", "memmove")
    snaps = samples.collect(prog.image, "memmove", "memmove", routine.cut_points)
    per_run: dict = {}
    for pc, states in snaps.items():
        for st in states:
            per_run.setdefault((pc, id(st[3])), []).append(st)
    assert max(len(v) for v in per_run.values()) == 2 * samples.ENDS_KEPT
    # the longest runs, recorded in full, against what collect kept of them
    scs = {id(st[3]): st[3] for v in per_run.values() for st in v}.values()
    longest = max(sc.N for sc in scs)
    thinned = 0
    for sc in (sc for sc in scs if sc.N == longest):
        full = samples.run(prog.image, "memmove", sc, trace_pcs=routine.cut_points,
                           max_steps=200_000)
        for pc in {p for p, *_ in full.snapshots}:
            visits = [x for p, x, *_ in full.snapshots if p == pc]
            kept = [st[0] for st in per_run[(pc, id(sc))]]
            k = samples.ENDS_KEPT
            if len(visits) > 2 * k:
                thinned += 1
                assert kept == visits[:k] + visits[-k:]
            else:
                assert kept == visits
    assert thinned


def test_alignment_cases_a_path_excludes_are_dropped_and_the_rest_kept():
    """An alignment head's tests of dst's low bits fold to constants under
    each of the 64 (S & 7, D & 7) cases: only the cases the path allows
    are left to query; a list without substitutions is never filtered."""
    import z3
    from copygen.verify.checks.dataproof import split_alignments
    from copygen.verify.checks.memcheck import live
    from copygen.verify.contract.world import World
    w = World("to")
    cases = split_alignments(w)
    path = [w.D & 1 != 0, w.D & 2 == 0]
    kept = live(cases, path)
    # D & 3 == 1: D & 7 is 1 or 5, with any S & 7
    assert len(kept) == 16
    for cond, _ in cases:
        s = z3.Solver()
        s.add(cond, *path)
        assert (s.check() == z3.sat) == any(cond is c for c, _ in kept)
    assert live(cases, []) == cases
    one = [(z3.BoolVal(True), [])]
    assert live(one, [z3.BoolVal(False)]) == one


def test_a_misalignment_case_puts_its_value_into_every_other_formula():
    """Under the case (S - D) & 7 == k the byte prover's facts and goals
    have k in place of the misalignment, whichever form simplify gave it;
    the case fact itself stays, a formula without the term is the same
    object, and a prover without a case changes nothing."""
    import z3
    from copygen.verify.checks.dataproof import ByteProver, CaseValue, split_offsets
    from copygen.verify.contract.world import World
    w = World("to")
    _, case = split_offsets(w)[5]
    x = z3.BitVec("x", 64)
    shifted = z3.simplify(x - ((w.S - w.D) & 7) * 8)
    assert any(z3.eq(v, w.S) for v in _symbols(shifted))
    cv = CaseValue.of(w, [z3.ULT(x, w.N), case])
    assert cv.k == 5
    assert z3.eq(cv.put(shifted), z3.simplify(x - 40))
    low = z3.simplify(z3.Extract(2, 0, w.S - w.D)) == 1
    assert z3.is_false(cv.put(low))
    assert cv.put(case) is case
    plain = z3.ULT(x, w.N)
    assert cv.put(plain) is plain
    pr = ByteProver(w, [case, shifted == 0])
    assert any(z3.eq(f, case) for f in pr.base)
    assert any(z3.eq(f, z3.simplify(x - 40 == 0)) for f in pr.base)
    assert not any(z3.eq(f, shifted == 0) for f in pr.base)
    assert pr.valid([], x == 40) == z3.unsat
    assert pr.valid([], x == 48) == z3.sat
    none = ByteProver(w, [shifted == 0])
    assert none.case.k is None and none.case.put(shifted) is shifted


def _symbols(e):
    from copygen.verify.symbolic.z3ops import z3_vars
    return z3_vars(e)


def test_segment_paths_multiply_at_branches_and_stop_at_cut_points():
    from copygen.verify.symbolic.program import back_edges, join_cuts, segment_paths
    # three diamonds in a row: 2 * 2 * 2 paths; a cut at the middle join splits them
    edges = {0: (1, 2), 1: (3,), 2: (3,), 3: (4, 5), 4: (6,), 5: (6,), 6: (7, 8), 7: (9,),
             8: (9,), 9: ()}
    assert segment_paths(0, edges, set(), set()) == 8
    assert segment_paths(0, edges, set(), {6}) == 4
    # a straight line longer than Python's recursion limit
    line = {i: (i + 1,) for i in range(5000)} | {5000: ()}
    assert segment_paths(0, line, set(), set()) == 1
    # a loop (1 -> 1) whose exit joins a branch that skipped it, then 2^12 paths
    tail = {10 + i: (10 + i + 1, 30 + i) for i in range(12)} | \
           {30 + i: (10 + i + 1,) for i in range(12)} | {22: ()}
    loop = {0: (1, 2), 1: (1, 2), 2: (10,)} | tail
    back = back_edges(0, loop)
    assert back == {(1, 1)}
    assert segment_paths(0, loop, back, {1}) == 1 + 4096     # into the loop, or past it
    # the join after the loop is cut first; then, of the joins after it,
    # the one that splits the 4096 paths best: 2^6 on each side
    assert join_cuts(0, loop, back, {1}) == {2, 16}
    assert segment_paths(0, loop, back, {1, 2, 16}) == 64
    assert join_cuts(0, edges, set(), set()) == set()       # no loop: no join cut


def _units(q) -> int:
    return int(q._answered.statistics().get_key_value("rlimit count"))


def test_a_query_takes_the_same_steps_whatever_ran_before_and_stops_at_its_budget(monkeypatch):
    """Budgets are Z3 resource units, not wall-clock time, and each query
    has a context of its own: the same facts take the same number of steps
    after other work in the process, and a budget below that number stops
    the query, however fast or busy the machine is.  (The solver's own
    steps: the store of answers, verify.solver.answers, stays out of it.)"""
    from copygen.verify.solver import answers
    from copygen.verify.solver.budget import UNITS_PER_MS, Query
    monkeypatch.setattr(answers, "store", lambda: None)
    x, y = z3.BitVecs("x y", 16)
    wide = [z3.ZeroExt(16, v) for v in (x, y)]
    # unsat (65521 is prime), and only a search through multipliers says so
    facts = [wide[0] * wide[1] == 65521, z3.UGT(x, 1), z3.UGT(y, 1)]
    first = Query(facts)
    assert first.check(10_000) == z3.unsat
    steps = _units(first)
    other = z3.SolverFor("QF_BV")                # work in the caller's context between
    other.add(x * 3 == y, y * 5 == x + 7)
    other.check()
    again = Query(facts)
    assert again.check(10_000) == z3.unsat and _units(again) == steps
    assert steps > 8 * UNITS_PER_MS
    short = Query(facts)
    ms = max(1, steps // UNITS_PER_MS // 4)
    assert short.check(ms) == z3.unknown
    # the count is the context's: the SMT core, then the default solver,
    # each stopped at the budget
    assert _units(short) <= 2 * (ms * UNITS_PER_MS + 1000)


def test_a_counter_model_evaluates_the_callers_formulas():
    """Houdini drops the candidates a counter-model falsifies: the model
    lives in the query's own context, the candidates in the prover's."""
    from copygen.verify.solver.budget import Query
    x = z3.BitVec("x", 64)
    q = Query([z3.ULT(x, 10), z3.Not(x == 3), z3.UGT(x, 7)])
    assert q.check(1000) == z3.sat
    assert q.true_in_model([z3.UGT(x, 7), x == 3, z3.Or(x == 8, x == 9)]) == [True, False, True]


def test_a_replayed_model_gives_the_callers_terms_their_values():
    """The replay builds its run from a model of the failed check taken in
    the query's own context (the model the solver picks then does not
    depend on what ran before in the process); it reads the caller's terms."""
    from copygen.verify.solver.budget import Query
    n, fo = z3.BitVecs("n fo", 64)
    nf = z3.Bool("nf")
    q = Query([n == 40, z3.ULT(fo, n), z3.UGE(fo, 39), z3.Not(nf)], logic="QF_ABV")
    assert q.check(1000) == z3.sat
    m = q.model()
    assert m.eval(n + 1, model_completion=True).as_long() == 41
    assert m.eval(fo, model_completion=True).as_long() == 39
    assert z3.is_false(m.eval(nf, model_completion=True))


def test_c1_reads_as_the_string_routines_contract():
    """memcpy, memmove and memset return dst: their C1 says so, not the
    user copy's "returns 0" with a source to compare."""
    from copygen.verify.contract.clauses import clause_text
    for kind in ("memcpy", "memset", "memmove"):
        assert "returns dst" in clause_text("C1", kind)
        assert "src" not in clause_text("C1", kind)
    assert "returns 0" in clause_text("C1", "to")
    assert clause_text("A1", "memset") == clause_text("A1", "to")
def test_a_model_of_the_path_settles_a_branch_direction_without_the_solver():
    """The explorer keeps, with each path, a model of its condition: the
    branch direction (or the access that does not fault) that model
    satisfies is feasible without a query; the other is asked."""
    from types import SimpleNamespace
    from copygen.verify.symbolic.explore import Explorer
    from copygen.verify.contract.world import World
    ex = Explorer(None, World("to"), [], [])
    x = z3.BitVec("x", 64)
    path = [z3.UGT(x, 5), z3.ULT(x, 100)]
    ok, witness = ex.feasible(path)
    assert ok and witness[1] == 2
    model = witness[0]
    big = z3.UGT(x, 50)
    held, other = (big, z3.Not(big)) if z3.is_true(model.eval(big)) else (z3.Not(big), big)
    solver, asked = ex.solver, []
    ex.solver = SimpleNamespace(check=lambda *c: asked.append(c) or solver.check(*c),
                                model=solver.model)
    ok, same = ex.feasible(path + [held], witness)
    assert ok and same[0] is model and same[1] == 3 and not asked
    ok, new = ex.feasible(path + [other], witness)
    assert ok and len(asked) == 1 and z3.is_true(new[0].eval(other))
    assert ex.feasible(path + [z3.UGT(x, 200)], witness) == (False, None)


def test_a_head_pins_only_what_every_path_into_it_brings_and_is_explored_again_alone(
        built_examples):
    """A head's frame (registers still holding their entry values) comes
    from every path into it explored before it, not the first alone; a pin
    a later path breaks sends only that head's segment back to the
    explorer.  kernel2021's __clear_user: 3 heads, the entry and one head
    explored again (every segment twice when the frame came from the first
    path alone)."""
    from copygen.verify.symbolic import explore
    from copygen.verify.invariants.houdini import _explore, _frame
    from copygen.verify.invariants.infer import bases
    from copygen.verify.invariants.samples import collect
    from copygen.verify.symbolic.symstate import SymState
    from copygen.verify.contract.world import KINDS, World
    world = World("clear")
    a, b = SymState.at_entry(world, 0x100), SymState.at_entry(world, 0x100)
    b.x[REG["a0"]] = world.R0[REG["a0"]] + 8
    frame = _frame([a, b], world, set(), lambda pc: False)
    assert REG["a0"] not in frame and REG["s0"] in frame and "stack" in frame
    assert REG["a0"] in _frame([a], world, set(), lambda pc: False)
    sym = "__clear_user"
    prog, routine = _routine(built_examples, "kernel2021", sym)
    snaps = collect(prog.image, sym, KINDS[sym], routine.cut_points)
    runs = []
    orig = explore.Explorer.run

    def counted(self, start, cond=None):
        runs.append(start.pc)
        return orig(self, start, cond)
    explore.Explorer.run = counted
    try:
        heads, _ = _explore(prog, routine, world, {pc: bases(s) for pc, s in snaps.items()})
    finally:
        explore.Explorer.run = orig
    assert len(heads) == 3 and len(runs) <= len(heads) + 2, runs


def test_c4_at_a_fault_exit_follows_from_its_store_intervals(built_examples):
    """C4 (nothing at or past n - ret written) on a fault exit is asked
    first as W-free goals, one per store interval of the path and the
    head's cursor interval (verify.checks.coverage.inside_goals): they alone prove
    it; the query over W is the fallback."""
    from dataclasses import replace
    from copygen.verify.invariants.houdini import Proof
    from copygen.verify.invariants.infer import bases
    from copygen.verify.checks.clausecheck import ClauseChecker
    from copygen.verify.checks.prove import guess_all
    from copygen.verify.invariants.samples import collect
    from copygen.verify.contract.world import KINDS, World
    sym = "__clear_user"
    prog, routine = _routine(built_examples, "kernel2021", sym)
    kind = KINDS[sym]
    snaps = collect(prog.image, sym, kind, routine.cut_points)
    roles = {pc: prog.address_roles(pc) for pc in snaps}
    guesses = guess_all(prog, routine, snaps, kind, roles, 1)
    proof = Proof(prog, routine, World(kind), {pc: bases(s, roles[pc]) for pc, s in snaps.items()})
    proof.houdini(guesses)
    ck = ClauseChecker(proof)
    ck.returns()
    c4 = [c for c in ck.checks if c.clause == "C4"]
    faults = [c for c in c4 if c.inside]
    assert faults and len(faults) < len(c4)       # not where the routine returns 0
    for c in faults:
        assert replace(c, goal=z3.BoolVal(False)).run(proof.data) is None
    assert replace(faults[0], goal=z3.BoolVal(False), inside=()).run(proof.data) is not None


def test_a_fault_exits_count_bound_and_store_intervals_need_no_fault_facts(
        built_examples, monkeypatch):
    """C2 (the count is at most n) and C4's store intervals at a fault exit
    follow from the path without the constraints that place the fault
    point: each is asked so first (fewer hypotheses, so a proof stands),
    and in full only if that fails."""
    from copygen.verify.checks import prove
    from copygen.verify.invariants.houdini import Proof
    from copygen.verify.invariants.infer import bases
    from copygen.verify.invariants.samples import collect
    from copygen.verify.contract.world import KINDS, World
    from copygen.verify.symbolic.z3ops import mentions
    sym = "__clear_user"
    prog, routine = _routine(built_examples, "kernel2021", sym)
    kind = KINDS[sym]
    snaps = collect(prog.image, sym, kind, routine.cut_points)
    roles = {pc: prog.address_roles(pc) for pc in snaps}
    guesses = prove.guess_all(prog, routine, snaps, kind, roles, 1)
    w = World(kind)
    proof = Proof(prog, routine, w, {pc: bases(s, roles[pc]) for pc, s in snaps.items()})
    proof.houdini(guesses)
    ck = prove.ClauseChecker(proof)
    ck.returns()
    loose = []
    real = prove.Check._holds_loosely

    def spy(self, data, goal, cond):
        ok = real(self, data, goal, cond)
        loose.append((self.clause, ok))
        return ok
    monkeypatch.setattr(prove.Check, "_holds_loosely", spy)
    faulting = lambda c: any(mentions(f, w.FO) for f in c.cond)
    c2 = [c for c in ck.checks if c.clause == "C2" and faulting(c)]
    c4 = [c for c in ck.checks if c.clause == "C4" and c.inside and faulting(c)]
    assert c2 and c4
    for c in c2 + c4:
        del loose[:]
        assert c.run(proof.data) is None
        assert loose == [(c.clause, True)], c.what


def test_a_return_of_0_asks_the_cover_of_c1_and_c3_once(built_examples):
    """At an end that returns 0, "every byte of [0, n) written" is C1's goal
    without a fault and C3's with one: one check under the path condition
    alone stands for both (each part run only if it fails)."""
    from copygen.verify.invariants.houdini import Proof
    from copygen.verify.checks.clausecheck import ClauseChecker
    from copygen.verify.contract.world import World
    prog, routine = _routine(built_examples, "pre2021", "__clear_user")
    w = World("clear")
    ck = ClauseChecker(Proof(prog, routine, w))
    ck.returns()
    both = [c for c in ck.checks if c.parts]
    assert both
    for c in both:
        assert [p.clause for p in c.parts] == ["C1", "C3"]
        assert all(z3.eq(p.goal, c.goal) for p in c.parts)
        assert not any(z3.eq(f, w.NF) or z3.eq(f, z3.Not(w.NF)) for f in c.cond)
        assert any(z3.eq(f, w.NF) for f in c.parts[0].cond)
        assert any(z3.eq(f, z3.Not(w.NF)) for f in c.parts[1].cond)
        alone = [d for d in ck.checks if d.clause in ("C1", "C3") and not d.parts
                 and (d.start, d.pc) == (c.start, c.pc) and z3.eq(d.goal, c.goal)]
        assert alone == []
    # the fault exit's cover of [0, n - ret) is C3's own
    assert any(c.clause == "C3" and not c.parts and "not stored" in c.what for c in ck.checks)


def test_a_proving_process_keeps_what_z3_frees():
    """glibc takes the heap thresholds (verify.solver.heap), so the one-shot
    contexts a proof creates and deletes reuse the heap's memory instead of
    faulting fresh pages in; a second call changes nothing."""
    import platform
    from copygen.verify.solver.heap import keep_freed
    assert keep_freed() == (platform.libc_ver()[0] == "glibc")
    assert keep_freed() == keep_freed()


def test_houdini_checks_a_loop_path_after_the_paths_into_its_loop():
    """Within a stage, the path from the entry drops a guess at the head
    before the head's own loop path is checked: the loop path is checked
    once, from what is left, not first from every guess and again after.
    The greatest inductive subset is the same either way."""
    from types import SimpleNamespace
    from copygen.verify.invariants.houdini import Proof
    head = 0x100
    guesses = ["a", "b", "c"]
    # the entry refutes "c"; round the loop every guess at the start holds again
    refutes = {None: {"c"}, head: set()}
    calls = []
    proof = Proof.__new__(Proof)
    proof.inv = {head: list(guesses)}
    proof.data = SimpleNamespace(prepare=lambda starts, jobs: None)

    def kept(start, end, plain, memory):
        calls.append((start, tuple(proof.inv[start]) if start is not None else None))
        return [c for c in proof.inv[end.pc] if c not in refutes[start]], []
    proof._kept = kept
    end = SimpleNamespace(pc=head)
    proof._fixpoint([(head, end), (None, end)], 1, {}, None)
    assert proof.inv[head] == ["a", "b"]
    assert calls == [(None, None), (head, ("a", "b"))]
