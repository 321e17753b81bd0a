"""The prover: every clause of the contract for one routine, unbounded in n.

Steps: explore the routine's segments (verify.symbolic.explore), guess invariants
from concrete runs (verify.invariants.samples, verify.invariants.infer) and keep the inductive
ones (verify.invariants.houdini), then check each clause on every path end and
access (bit-vector queries; memory contents through verify.checks.memcheck), and
termination with a ranking measure per loop.  A failing check becomes a
counterexample that is shrunk and replayed in the emulator (verify.counterexamples.replay).

Role: produce `RoutineReport`.  May import z3, emu, verify.*.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import z3

from copygen.verify.contract.clauses import (OVERLAP_KINDS, STRING_KINDS, clauses_of,
                                              holds_sum, required)
from copygen.verify.contract.rules import RegisterRules
from copygen.verify.checks.rulecheck import kept_at_return, not_checked, proved_detail
from copygen.verify.checks.coverage import cover_goals, inside_goals
from copygen.verify.counterexamples.bounded import apply_bounded
from copygen.verify.invariants.candidates import NEVER
from copygen.verify.solver.budget import Query
from copygen.verify.checks.dataproof import TIMEOUT_MS
from copygen.verify.counterexamples.early import decides, does_not_terminate, violated_by_runs
from copygen.verify.solver.gcguard import proving
from copygen.verify.solver.heap import keep_freed
from copygen.verify.invariants.houdini import Proof
from copygen.verify.invariants.infer import bases, guess
from copygen.verify.invariants.samples import collect
from copygen.verify.symbolic.explore import Unbounded
from copygen.verify.symbolic.unroll import unrolling
from copygen.verify.symbolic.summary import Summary, candidates, names_sp, overlapping_call, usable
from copygen.verify.invariants.liveness import prune
from copygen.verify.symbolic.nowrap import lemmas
from copygen.emu.errors import EmuError
from copygen.verify.solver.parallel import default_jobs, fork_map
from copygen.verify.symbolic.program import Program, ProgramError
from copygen.verify.contract.world import CALLEE_SAVED, SR_SUM, World
from copygen.verify.symbolic.z3ops import bv, mentions


@dataclass
class RoutineReport:
    symbol: str
    kind: str
    status: dict = field(default_factory=dict)      # clause -> proved | violated | unknown | ...
    detail: dict = field(default_factory=dict)      # clause -> text / counterexample
    seconds: float = 0.0
    invariants: dict = field(default_factory=dict)  # loop head -> number kept
    examples: dict = field(default_factory=dict)    # clause -> replayed counterexample
    calls: dict = field(default_factory=dict)       # callee -> how its calls were taken
    # clause -> N: left unknown by the proof, kept by every concrete run
    # n <= N that nobody asked for (memmove's); no part of the verdict
    held_up_to: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"symbol": self.symbol, "kind": self.kind, "status": self.status,
                "detail": self.detail, "counterexamples": self.examples,
                "seconds": round(self.seconds, 2),
                "invariants": {hex(k): v for k, v in self.invariants.items()},
                "calls": self.calls, "held_up_to": self.held_up_to}


# how long a fault path's C3 coverage goal (alone or standing for C1's
# too), its C2 bound on the count and its C4 store intervals are tried
# without the fault point's constraints before they are asked in full;
# C1's goals, under "no fault", gain nothing from it, so C1 alone does not
# try it (CHANGELOG.md, "What makes it fast enough")
RELAXED_MS = 5000
# what memmove's unbounded proof leaves unknown is run for every n up to
# this, with every overlap, unless --bounded says otherwise; 64 bytes reach
# the word loops and a whole unrolled block of every example.  A run finds
# counterexamples; one that finds none leaves the clause unknown
MEMMOVE_BOUND = 64
# a check about the watched byte gets this long in one query, D written
# S + DS (World.relative), before it is asked for each value of W that
# matters (Check.points)
RELATIVE_MS = 3000


@dataclass
class Check:
    """One query: `goal` holds under `cond` (a bit-vector check) or, for a
    data check (`state` set), every byte the state wrote is right."""
    clause: str
    start: int | None
    pc: int
    cond: list
    goal: object
    what: str
    state: object = None
    # try first without the fault point's constraints (the `inside` goals
    # where there are some, else the goal)
    relax: bool = False
    points: tuple = ()    # W's values that matter: asked one by one if the solver gives up
    # W-free goals that together imply the goal under `inside_cond`
    # (verify.checks.coverage.inside_goals): asked first, the goal only if one fails
    inside: tuple = ()
    inside_cond: tuple = ()
    # the checks this one stands for: it asks their common goal under a
    # condition each of theirs implies, so that it holding proves them
    # all; when it fails each is run, and the clauses get their own verdicts
    parts: tuple = ()

    def run(self, data) -> str | None:
        """None when the check holds, else what went wrong."""
        if self.state is not None:
            return None if data.written_bytes_ok(self.start, self.cond, self.state, []) \
                else self.what
        if self.inside:
            inside = z3.And(*self.inside)
            if self.relax and self._holds_loosely(data, inside, self.inside_cond):
                return None
            if data.prover(self.start, self.inside_cond).valid([], inside) == z3.unsat:
                return None
        elif self.relax and self._holds_loosely(data, self.goal, self.cond):
            return None
        pr = data.prover(self.start, self.cond)
        if self.points:
            r = self._relative(pr)
            if r == z3.unknown:
                r = self._at_points(pr)
        else:
            r = pr.valid([], self.goal)
        if r == z3.unsat:
            return None
        return self.what + (" (solver gave up)" if r == z3.unknown else "")

    def _relative(self, pr) -> z3.CheckSatResult:
        """The query with D written S + DS (World.relative), within
        RELATIVE_MS: the load address and the watched byte are then offsets
        off one base, so the solver needs no carries of D - S.  _at_points
        is the fallback when this gives up."""
        w = pr.world
        return _ask([w.relative(f) for f in pr.base + lemmas(w, [self.goal])],
                    w.relative(self.goal), RELATIVE_MS)

    def _at_points(self, pr) -> z3.CheckSatResult:
        """The goal for each value of W that matters, W substituted in the
        facts too: every fact holds for every W, so for each of these; and
        the goal holds for the other values anyway.  Without W the solver
        no longer has to relate the watched byte to the cursor's interval,
        the part of memmove's overwrite checks whose time depends most on
        the solver's random seed."""
        W = pr.world.W
        for p in self.points:
            goal = z3.substitute(self.goal, (W, p))
            facts = [z3.substitute(f, (W, p)) for f in pr.base] + lemmas(pr.world, [goal])
            r = _ask(facts, goal, TIMEOUT_MS)
            if r != z3.unsat:
                return r
        return z3.unsat

    def _holds_loosely(self, data, goal, cond) -> bool:
        """`goal` follows from the path condition `cond` without the
        constraints that place the fault point (fewer hypotheses, so this
        proves the check; the coverage goals, the count's bound and the
        store intervals on fault paths rarely need them, and they make each
        query slower).  A short limit: otherwise ask in full."""
        fo = data.w.FO
        if mentions(goal, fo):
            return False
        loose = [c for c in cond if not mentions(c, fo)]
        if len(loose) == len(cond):
            return False
        if len(data.w.fault_free(cond, goal)) < len(cond):
            return False      # the full query leaves them out already (World.fault_free)
        return data.prover(self.start, loose).valid_within(goal, RELAXED_MS) == z3.unsat


def _ask(facts: list, goal, limit_ms: int) -> z3.CheckSatResult:
    """unsat when the facts imply goal (one one-shot solver)."""
    return Query([*facts, z3.Not(goal)]).check(limit_ms)


SKIPPED = "skipped: the clause already failed in this process"


class ClauseChecker:
    """Collects the checks of every clause, then runs them (over `jobs`
    processes); the first failing check of a clause, with what went wrong,
    is its failure."""

    def __init__(self, proof: Proof):
        self.p, self.w = proof, proof.world
        self.failures: dict[str, Check] = {}
        self.checked: set[str] = set()
        self.checks: list[Check] = []

    def _bv(self, clause, start, cond, goal, pc, what, relax: bool = False) -> None:
        self.checks.append(Check(clause, start, pc, list(cond), goal, what, relax=relax))

    def _data(self, clause, start, cond, st, pc, what) -> None:
        self.checks.append(Check(clause, start, pc, list(cond), z3.BoolVal(False), what, st))

    def run(self, jobs: int = 1) -> None:
        failed: set[str] = set()      # per process: later checks of a failed clause are skipped

        def alone(chk: Check) -> str | None:
            if chk.clause in failed:
                return SKIPPED
            why = chk.run(self.p.data)
            if why is not None:
                failed.add(chk.clause)
            return why

        def one(i: int) -> list:
            """[(-1, why)] for the check, or [(j, why)] for each of its parts."""
            chk = self.checks[i]
            if not chk.parts:
                return [(-1, alone(chk))]
            if not any(p.clause in failed for p in chk.parts) and chk.run(self.p.data) is None:
                return [(-1, None)]
            return [(j, alone(p)) for j, p in enumerate(chk.parts)]
        self.p.data.prepare([start for start, _ in self.p.segments], jobs)
        for chk, outcomes in zip(self.checks, fork_map(one, len(self.checks), jobs)):
            self.checked.update(c.clause for c in (chk.parts or (chk,)))
            for j, why in outcomes:
                c = chk if j < 0 else chk.parts[j]
                if why is not None and why != SKIPPED and c.clause not in self.failures:
                    self.failures[c.clause] = replace(c, what=why)
        self.checks = []

    def obligations(self) -> None:
        for start, seg in self.p.segments:
            for ob in seg.obligations:
                self.checks.append(Check(ob.clause, start, ob.pc, list(ob.cond), ob.formula,
                                         ob.what, points=ob.points))

    def returns(self) -> None:
        w = self.w
        string = w.kind in STRING_KINDS
        for start, seg in self.p.segments:
            for end in seg.ends:
                if end.kind == "cut":
                    # the byte proofs assume, at every loop head, that the bytes
                    # written so far are right: this is the inductive step
                    for clause in ("C1",) if string else ("C1", "C3"):
                        self._data(clause, start, end.cond, end.state, end.pc,
                                   "a byte written before a loop head may be wrong")
                    continue
                if end.kind != "ret":
                    continue
                st, cond, pc = end.state, end.cond, end.pc
                ret = st.x[10]
                saved = z3.And(*[st.x[r] == w.R0[r] for r in CALLEE_SAVED])
                if st.ret_target is not None:
                    saved = z3.And(saved, st.ret_target == (w.RA0 & bv(~1)))
                self._bv("A1", start, cond, saved, pc, "callee-saved register or ra changed")
                kept = kept_at_return(w, st)
                if kept is not None:
                    self._bv("R1", start, cond, kept, pc, "a reserved register changed at a return")
                if string:
                    self._bv("C1", start, cond, ret == w.D, pc, "does not return dst")
                    # memmove, dst == src: a byte left unwritten holds its
                    # source byte (Linux's memmove.S returns at once)
                    same = [w.D != w.S] if w.kind in OVERLAP_KINDS else []
                    self.checks.extend(self._cover("C1", start, cond + same, st, w.N, pc,
                                                   "a byte not written"))
                    self._data("C1", start, cond, st, pc, "a byte holds the wrong value")
                    continue
                self._bv("S1", start, cond, st.sstatus & bv(SR_SUM) == w.sum_at_entry, pc,
                         "returns with SUM clear, its caller holds it" if w.sum_held
                         else "returns with SUM set")
                nf, f = cond + [w.NF], cond + [z3.Not(w.NF)]
                self._bv("C1", start, nf, ret == 0, pc, "returns non-zero without a fault")
                c1 = self._cover("C1", start, nf, st, w.N, pc,
                                 "leaves a byte unwritten without a fault")
                zero = z3.is_true(z3.simplify(ret == 0))
                if zero:
                    # C1 without a fault and C3 with one ask the same cover
                    # of [0, n): asked once, under the path condition alone
                    c3 = self._cover("C3", start, f, st, w.N, pc,
                                     "a byte counted as copied was not stored")
                    c1 = self._together(c1, c3, cond)
                self.checks.extend(c1)
                self._data("C1", start, nf, st, pc, "a byte holds the wrong value")
                self._bv("C2", start, f, z3.ULE(ret, w.N), pc, "returns more than n", relax=True)
                done = z3.ULT(w.W, w.N - ret)
                if not zero:
                    self.checks.extend(self._cover("C3", start, f + [z3.ULE(ret, w.N)], st,
                                                   w.N - ret, pc,
                                                   "a byte counted as copied was not stored"))
                self._data("C3", start, f + [z3.ULE(ret, w.N), done], st, pc,
                           "a byte counted as copied holds the wrong value")
                self._untouched(start, f + [z3.ULE(ret, w.N)], st, ret, pc)
                self._bv("C5", start, f, z3.Implies(ret == w.N, w.FO == 0), pc,
                         "returns n although bytes before the fault were accessible")

    def _untouched(self, start, cond, st, ret, pc) -> None:
        """C4: no byte at or past n - ret written.  Where ret is not a
        constant (a fault exit's count), through verify.checks.coverage's W-free
        goals first: every store interval of the path, and the head's
        cursor interval, lies below n - ret.  Over W, one query holds every
        store of the path at once; each interval goal is small.  A store
        outside dst would fail its goal while C4 holds: B1 reports it, and
        C4 is then asked over W as before."""
        w = self.w
        done = z3.ULT(w.W, w.N - ret)
        chk = Check("C4", start, pc, [*cond, z3.Not(done)], z3.Not(st.written),
                    "a byte counted as not copied was modified")
        if not z3.is_bv_value(z3.simplify(ret)):
            head_written, head_iv = self.p.data.head_cursor(start, reach=True)
            goals = inside_goals(w.W, st.written, w.N - ret, head_written, head_iv)
            if goals is not None:
                chk = replace(chk, inside=tuple(goals), inside_cond=tuple(cond), relax=True)
        self.checks.append(chk)

    def _cover(self, clause, start, cond, st, upto, pc, what) -> list:
        """The checks of "every byte of [0, upto) written": verify.checks.coverage's
        W-free goals when the path's stores allow, else one query over W."""
        head_written, head_iv = self.p.data.head_cursor(start)
        goals = cover_goals(self.w.W, st.written, upto, head_written, head_iv)
        if goals is None:
            return [Check(clause, start, pc, [*cond, z3.ULT(self.w.W, upto)], st.written, what)]
        return [Check(clause, start, pc, list(cond), g, what, relax=clause == "C3")
                for g in goals]

    @staticmethod
    def _together(first: list, second: list, cond) -> list:
        """Checks that stand for `first` and `second` pairwise: the same
        goals under `cond` plus one literal each (fault or none), asked
        under `cond` alone.  Tried loosely first, as C3's cover is."""
        assert len(first) == len(second)
        out = []
        for a, b in zip(first, second):
            assert z3.eq(a.goal, b.goal)
            extra = a.cond[len(cond) + 1:]         # past the fault literal
            out.append(replace(a, cond=[*cond, *extra], relax=True, parts=(a, b)))
        return out

    def termination(self, jobs: int = 1) -> tuple[bool, str]:
        """Each loop head has a measure (a `le` bound x - t <= c) that every
        path back to it decreases; loops are entered in a fixed order.  One
        loop head per process."""
        order: dict[int, set] = {}
        for start, seg in self.p.segments:
            if start is None:
                continue
            order[start] = {e.pc for e in seg.ends if e.kind == "cut" and e.pc != start}
        if _cyclic(order):
            return False, "loops call each other back and forth"
        heads = sorted(self.p.heads)
        for h, ok in zip(heads, fork_map(lambda i: self._ranked(heads[i]), len(heads), jobs)):
            if not ok:
                return False, f"no decreasing measure found for the loop at {h:#x}"
        return True, ("every loop decreases a bounded distance to the end or the start "
                      "(<= n + constant)")

    def _ranked(self, h) -> bool:
        seg = next(s for st, s in self.p.segments if st == h)
        back = [e for e in seg.ends if e.kind == "cut" and e.pc == h]
        if not back:
            return True
        head = self.p.heads[h]
        if NEVER in self.p.inv[h]:
            return True         # a loop never entered
        for c in self.p.inv[h]:
            # le: x - t <= c, the distance c - (x - t) to the end; ge (a
            # backward copy): x - t >= c, the distance (x - t) - c to the start
            if c.kind not in ("le", "ge") or len(c.args[0]) != 1 \
                    or c.args[1] not in ("E", "SE", "N", "D", "S"):
                continue
            r, t, k = c.args[0][0], self.p.terms[c.args[1]], bv(c.args[2])

            def measure(x, c=c, t=t, k=k):
                return k - (x - t) if c.kind == "le" else (x - t) - k
            m0 = measure(head.x[r])
            ok = all(self.p.data.prover(h, e.cond).valid(
                [], measure(e.state.x[r]) < m0) == z3.unsat for e in back)
            if ok:
                return True
        return False


def _cyclic(edges: dict[int, set]) -> bool:
    seen, stack = set(), set()

    def visit(n) -> bool:
        if n in stack:
            return True
        if n in seen:
            return False
        seen.add(n)
        stack.add(n)
        bad = any(visit(m) for m in edges.get(n, ()))
        stack.discard(n)
        return bad
    return any(visit(n) for n in list(edges))


STAGES = ("sample runs", "guessing invariants", "induction (Houdini)", "clause checks",
          "termination", "replaying failures")


def prove_routine(elf: str, symbol: str, kind: str, replay: bool = True,
                  jobs: int | None = None, memmove_bound: int = MEMMOVE_BOUND,
                  stage: Callable[[str], None] | None = None,
                  all_clauses: bool = False,
                  callee: Callable[[str, str], RoutineReport] | None = None,
                  rules: RegisterRules | None = None) -> RoutineReport:
    """Every clause for one routine, its queries spread over `jobs` processes
    (default: verify.solver.parallel.default_jobs()).  Code the prover cannot model
    (an instruction or jump it does not handle) leaves every clause unknown,
    with the reason.  memmove is proved in the world where its buffers may
    overlap, in either direction (verify.contract.world); a clause its proof leaves
    unknown is run for every n <= memmove_bound and every overlap
    (verify.counterexamples.bounded): a run that breaks it makes it violated; if every
    run keeps it, it stays unknown, and RoutineReport.held_up_to says how
    far the runs went.  `stage` is told the name of each of STAGES as the
    proof enters it (a progress bar advances on it).  A sample run that
    breaks a required clause ends the proof there (verify.counterexamples.early: the
    verdict is violated, the clauses no concrete run breaks are not
    checked) unless `all_clauses` asks for every clause's proof.  memmove's
    calls of memcpy are taken by memcpy's own proof (verify.symbolic.summary) when
    that proves every clause and no sample run calls it with overlapping
    buffers, else followed: `callee(symbol, kind)` gives that proof
    (default: a new one; verify.solver.cache passes one through the cache),
    under the same `rules`.  With register `rules` (verify.contract.rules)
    clause R1 is proved too (verify.checks.rulecheck)."""
    t0 = time.time()
    keep_freed()
    jobs = jobs or default_jobs()
    rules = rules or RegisterRules()
    if callee is None:
        def callee(sym: str, kind: str) -> RoutineReport:
            return prove_routine(elf, sym, kind, replay, jobs, rules=rules)
    with proving():
        try:
            rep = _prove(elf, symbol, kind, replay, t0, jobs, stage or (lambda name: None),
                         all_clauses, callee, rules)
        except (ProgramError, EmuError) as err:
            rep = RoutineReport(symbol, kind)
            for clause in clauses_of(kind, bool(rules)):
                rep.status[clause] = "unknown"
                rep.detail[clause] = f"cannot analyse the code: {err}"
        if kind in OVERLAP_KINDS and memmove_bound > 0 and "unknown" in rep.status.values():
            apply_bounded(elf, rep, memmove_bound, jobs, asked=False)
    rep.seconds = time.time() - t0
    return rep


def guess_all(prog, routine, snaps: dict, kind: str, roles: dict, jobs: int) -> dict:
    """The candidates of every loop head (one head per process), less
    those about registers dead there; a head no sample run reached gets
    the guess that it is never reached (Houdini keeps it only if no path
    leads there)."""
    heads = sorted(pc for pc, states in snaps.items() if states)
    guessed = fork_map(lambda i: guess(snaps[heads[i]], kind, roles[heads[i]]), len(heads), jobs)
    unseen = {pc: [NEVER] for pc in routine.cut_points if not snaps.get(pc)}
    return prune(prog, routine, {**dict(zip(heads, guessed)), **unseen})


def summaries(prog: Program, symbol: str, kind: str, found: dict,
              callee: Callable[[str, str], RoutineReport],
              stage: Callable[[str], None], rules: bool = False) -> tuple[dict, dict]:
    """(callee entry -> Summary, callee symbol -> how its calls are taken)
    for the calls verify.symbolic.summary.candidates found (`found`) that the
    callee's own proof lets the routine's proof take as one step."""
    out, said = {}, {}
    for addr, (sym, ckind) in sorted(found.items()):
        if names_sp(prog, addr):
            said[sym] = "followed: it uses the stack"
            continue
        shared = overlapping_call(prog.image, symbol, kind, addr)
        if shared is not None:
            said[sym] = (f"followed: called with overlapping buffers (n={shared[0]}, "
                         f"src - dst = {shared[1]}), outside its contract")
            continue
        stage(f"proving {sym}")
        rep = callee(sym, ckind)
        if usable(rep, ckind, rules):
            out[addr] = Summary(sym, addr, ckind)
            said[sym] = f"by its own proof ({rep.seconds:.0f} s)"
        else:
            bad = ", ".join(c for c in required(ckind, (), rules) if rep.status.get(c) != "proved")
            said[sym] = f"followed: its own proof leaves {bad}"
    return out, said


def _explored(prog: Program, symbol: str, kind: str, routine, snaps: dict | None, world: World,
              jobs: int) -> tuple[Proof, dict]:
    """The explored proof and the guesses at its loop heads (from `snaps`,
    or new sample runs when None).  A loop unrolled too far on some path
    (verify.symbolic.explore.Unbounded) is cut at its head after all."""
    while True:
        if snaps is None:
            snaps = collect(prog.image, symbol, kind, routine.cut_points)
        roles = {pc: prog.address_roles(pc) for pc in snaps}
        guesses = guess_all(prog, routine, snaps, kind, roles, jobs)
        try:
            return Proof(prog, routine, world,
                         {pc: bases(s, roles[pc]) for pc, s in snaps.items()}), guesses
        except Unbounded as err:
            routine = prog.routine(routine.entry, opaque=routine.opaque,
                                   unroll=routine.unrolled - {err.pc})
            snaps = None


def _prove(elf: str, symbol: str, kind: str, replay: bool, t0: float, jobs: int,
           stage: Callable[[str], None], all_clauses: bool,
           callee: Callable[[str, str], RoutineReport], rules: RegisterRules) -> RoutineReport:
    prog = Program.load(elf)
    entry = prog.image.address_of(symbol)
    found = candidates(prog, entry, kind)
    # sampled as if every call found were summarised: a run that already
    # breaks a clause then costs no callee proof
    routine = unrolling(prog, entry, frozenset(a for a in found if not names_sp(prog, a)))
    stage(STAGES[0])
    stuck: list = []
    broken: dict = {}
    snaps = collect(prog.image, symbol, kind, routine.cut_points, stuck, broken)
    if stuck or (not all_clauses and decides(kind, broken)):
        early = does_not_terminate if stuck else violated_by_runs
        rep = early(prog, RoutineReport(symbol, kind), stuck or broken, t0)
        not_checked(rep, rules)
        return rep
    summed, calls = summaries(prog, symbol, kind, found, callee, stage, bool(rules))
    if frozenset(summed) != routine.opaque:
        routine, snaps = unrolling(prog, entry, frozenset(summed)), None
    stage(STAGES[1])
    proof, guesses = _explored(prog, symbol, kind, routine, snaps,
                               World(kind, holds_sum(symbol), summaries=summed, rules=rules), jobs)
    stage(STAGES[2])
    proof.houdini(guesses, jobs)
    stage(STAGES[3])
    ck = ClauseChecker(proof)
    ck.obligations()
    ck.returns()
    ck.run(jobs)
    stage(STAGES[4])
    rep = RoutineReport(symbol, kind, invariants={pc: len(v) for pc, v in proof.inv.items()},
                        calls=calls)
    for clause in clauses_of(kind, bool(rules)):
        if clause == "T1":
            ok, why = ck.termination(jobs)
            rep.status[clause] = "proved" if ok else "unknown"
            rep.detail[clause] = why
        elif clause == "C6":
            bad = [c for c in ("C3", "C4") if c in ck.failures]
            # violated only once the replay confirms C3 or C4 (verify.counterexamples.replay)
            rep.status[clause] = "proved" if not bad else "unknown"
            rep.detail[clause] = "C3 and C4 hold" if not bad else f"follows from {', '.join(bad)}"
        elif clause in ck.failures:
            rep.status[clause], rep.detail[clause] = "unknown", ck.failures[clause].what
        else:
            rep.status[clause] = "proved"
            rep.detail[clause] = ("for every n" if clause in ck.checked or clause == "X1"
                                  else "for every n (the routine makes no such access)")
            if clause == "R1":
                rep.detail[clause] = proved_detail(rules)
    stage(STAGES[5])
    if replay:
        from copygen.verify.counterexamples.replay import confirm
        confirm(prog, proof, ck, rep)
    rep.seconds = time.time() - t0
    return rep
