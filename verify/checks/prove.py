"""The prover: every clause of the contract for one routine, unbounded in n.

Steps: explore the routine's segments (verify.symbolic.explore), guess invariants
from concrete runs (verify.invariants.samples, verify.invariants.infer) and keep the inductive
ones (verify.invariants.houdini), then check each clause on every path end and
access (verify.checks.clausecheck: bit-vector queries, verify.checks.query; memory
contents through verify.checks.memcheck), and termination with a ranking measure
per loop.  A failing check becomes a counterexample that is shrunk and replayed in
the emulator (verify.counterexamples.replay).

Role: produce `RoutineReport`.  May import emu, verify.*.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from copygen.verify.contract.clauses import OVERLAP_KINDS, clauses_of, holds_sum, required
from copygen.verify.contract.rules import RegisterRules
from copygen.verify.checks.rulecheck import not_checked, proved_detail
from copygen.verify.counterexamples.bounded import apply_bounded
from copygen.verify.invariants.candidates import NEVER
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
from copygen.emu.errors import EmuError
from copygen.verify.solver.parallel import default_jobs, fork_map
from copygen.verify.symbolic.program import Program, ProgramError
from copygen.verify.contract.world import World
from copygen.verify.checks.clausecheck import ClauseChecker
# re-exported: readers and tests name verify.checks.prove.Check
from copygen.verify.checks.query import Check  # noqa: F401


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


# what memmove's unbounded proof leaves unknown is run for every n up to
# this, with every overlap, unless --bounded says otherwise; 64 bytes reach
# the word loops and a whole unrolled block of every example.  A run finds
# counterexamples; one that finds none leaves the clause unknown
MEMMOVE_BOUND = 64


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
    _verdicts(rep, ck, kind, rules, jobs)
    stage(STAGES[5])
    if replay:
        from copygen.verify.counterexamples.replay import confirm
        confirm(prog, proof, ck, rep)
    rep.seconds = time.time() - t0
    return rep


def _verdicts(rep: RoutineReport, ck: ClauseChecker, kind: str, rules: RegisterRules,
              jobs: int) -> None:
    """Each clause's status and detail in `rep` from the checks `ck` ran,
    termination proved here."""
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
