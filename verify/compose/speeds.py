"""The user copy a static key dispatches to one of two bodies, proved
against the whole user-copy contract (docs/speeds.md).

The routine: the scalar copy's first instruction is a static branch on
the probe's key (verify.compose.jumplabel): with the key off it is a nop
and the slow body follows; with it on, a jump to the fast body.  The
proof has three parts:

* the site, read from the linked machine code (`check_site`): exactly one
  `__jump_table` entry for the key, at the scalar copy's first
  instruction, jumping to the fast body when the key is enabled, holding
  the nop as linked; so every way into the scalar copy meets it first,
  and the two key states differ in that one instruction;
* each key state proved whole by the existing prover: the ELF as linked
  (key off: nop, slow body) and the ELF with the site written as the
  jump-label code writes it (key on: jump, fast body), every entry point
  with every clause, the dispatch instruction included;
* the composition lemma (`lemma`, Z3): a caller's call runs one key state
  throughout (the site is one aligned instruction, written whole, and
  read once per call, at entry), so its return and its stores are those
  of the state it met: r = If(on, r_on, r_off) over the prefix model of
  verify.vector.vcompose.  Then each of C1-C6 and B1 holds of the whole
  when it holds of both states, which Z3 proves from the states' own
  clauses; S1, S2, A1, B2, X1, T1 hold of a call because they hold of
  whichever state it ran.  `combine` makes the composed report from the
  two states' reports, and `with_vector` composes it with a vector
  routine through verify.vector.vcompose (the vector glue's fallback calls
  the scalar copy, so it meets the site too).

Role: composed RoutineReports from the key states' reports.  May import z3,
verify.compose.jumplabel, verify.vector.vcompose, verify.checks.prove,
verify.contract.clauses, verify.contract.world, verify.solver.budget,
copygen.errors and the standard library.
"""
from __future__ import annotations

import functools
import time
from pathlib import Path

import z3

from copygen.errors import CopygenError
from copygen.verify.checks.prove import RoutineReport
from copygen.verify.compose import jumplabel
from copygen.verify.contract.clauses import BY_KIND
from copygen.verify.contract.world import MAX_N
from copygen.verify.solver.budget import shared_check
from copygen.verify.vector import vcompose

LEMMA = ("C1", "C2", "C3", "C4", "C5", "C6", "B1")
STATES = ("key off", "key on")
QUERY_MS = 20_000


def check_site(elf: str | Path, key: str, dispatcher: int, fast: int) -> jumplabel.Site:
    """The one site of `key` in the ELF, at `dispatcher` (an address: the
    scalar copy's first instruction), jumping to `fast` when the key is on,
    holding the nop as linked; else a CopygenError saying what differs."""
    return check_sites(elf, key, {dispatcher: fast})[0]


def check_sites(elf: str | Path, key: str, pairs: dict[int, int],
                entry: str = "the scalar copy") -> list[jumplabel.Site]:
    """The sites of `key` in the ELF, one per entry of `pairs` (the address
    of a dispatching function's first instruction (`entry` names it in an
    error): the address of the body its site jumps to when the key is on)
    and no other, each holding the
    nop as linked; in the order of `pairs`.  Else a CopygenError saying
    what differs."""
    mine = [s for s in jumplabel.sites(elf) if s.key_name == key]
    if len(mine) != len(pairs):
        raise CopygenError(f"{elf}: {len(mine)} static branches on {key}, not {len(pairs)}")
    out = []
    for dispatcher, fast in pairs.items():
        at = [s for s in mine if s.code == dispatcher]
        s = at[0] if at else mine[len(out)]
        jumplabel.check(s)
        wrong = [what for what, ok in (
            (f"it is at {s.code:#x}, not at {entry}'s first instruction {dispatcher:#x}",
             s.code == dispatcher),
            (f"it jumps to {s.target:#x}, not to the fast body at {fast:#x}", s.target == fast),
            ("it jumps while the key is off", not s.jumps(False) and s.jumps(True))) if not ok]
        if wrong:
            raise CopygenError(f"{elf}: the static branch on {key} is not the dispatch: "
                               + "; ".join(wrong))
        out.append(s)
    return out


def _bv(name: str):
    return z3.BitVec(name, 64)


def _facts(fault, no_fault, fo, n, r, end, exact: bool) -> list:
    """One state's clauses over the prefix model: it returns r and leaves
    dst[0, end) holding the source and dst[end, n) untouched (C1: all of
    it when nothing faults; C3, C4: end = n - r; C2; a byte at or past the
    fault cannot count as copied; C5 when `exact`)."""
    out = [z3.Implies(no_fault, z3.And(r == 0, end == n)),
           z3.Implies(fault, z3.And(z3.ULE(r, n), end == n - r, z3.ULE(n - r, fo)))]
    if exact:
        out.append(z3.Implies(z3.And(fault, r == n), fo == 0))
    return out


@functools.lru_cache(maxsize=None)
def lemma(max_n: int = MAX_N, read_once: bool = True) -> dict[str, str]:
    """Each clause of LEMMA for the key's choice between two states that
    each hold it: 'proved', or what the solver found.  The state that
    returns is the state that stored (the key is read once, at entry);
    `read_once=False` lets them differ, a dispatch that reads the key
    twice, which the lemma refutes.  It depends on no code: once per process."""
    n, fo, no_fault = _bv("n"), _bv("fault_offset"), z3.Bool("no_fault")
    fault = z3.Not(no_fault)
    on_ret = z3.Bool("key_on")
    on_store = on_ret if read_once else z3.Bool("key_on_again")
    r_off, r_on, e_off, e_on = _bv("r_off"), _bv("r_on"), _bv("end_off"), _bv("end_on")
    r, end = z3.If(on_ret, r_on, r_off), z3.If(on_store, e_on, e_off)
    world = [z3.ULT(n, max_n), z3.Implies(fault, z3.ULT(fo, n))]
    within = z3.And(fault, z3.ULE(r, n))
    goals = {"C1": (no_fault, z3.And(r == 0, end == n)),
             "C2": (fault, z3.ULE(r, n)),
             "C3": (within, z3.ULE(n - r, end)),
             "C4": (within, z3.ULE(end, n - r)),
             "C5": (z3.And(fault, r == n), fo == 0),
             "C6": (within, end == n - r),
             "B1": (z3.BoolVal(True), z3.ULE(end, n))}
    facts = [*_facts(fault, no_fault, fo, n, r_off, e_off, True),
             *_facts(fault, no_fault, fo, n, r_on, e_on, True)]
    out = {}
    for clause, (pre, claim) in goals.items():
        res, s = shared_check([*world, *facts, pre, z3.Not(claim)], QUERY_MS)
        out[clause] = ("proved" if res == z3.unsat else
                       "unknown" if res == z3.unknown else f"violated: {s.model()}")
    return out


def combine(off: RoutineReport, on: RoutineReport) -> RoutineReport:
    """The dispatched routine's report: a clause is proved when the lemma
    (for C1-C6, B1) proves the choice and both states prove it; a state's
    violation is the whole's (each state is reachable: the key is off
    until the probe has run, and on where every hart is fast)."""
    t0 = time.time()
    rep = RoutineReport(f"{off.symbol}+speeds", off.kind)
    proved = lemma()
    for c in BY_KIND.get(off.kind, list(off.status)):
        states = {name: part.status.get(c, "not proved") for name, part in zip(STATES, (off, on))}
        broken = [f"{name}: {off.detail.get(c, '') if name == STATES[0] else on.detail.get(c, '')}"
                  for name, st in states.items() if st == "violated"]
        weak = [f"{name}: {st}" for name, st in states.items() if st != "proved"]
        if broken:
            rep.status[c], rep.detail[c] = "violated", "; ".join(b.rstrip(": ") for b in broken)
            ex = off.examples.get(c) or on.examples.get(c)
            if ex:
                rep.examples[c] = ex
        elif weak:
            rep.status[c], rep.detail[c] = "unknown", "rests on " + ", ".join(weak)
        elif c in proved and proved[c] != "proved":
            rep.status[c], rep.detail[c] = "unknown", f"the lemma: {proved[c]}"
        else:
            rep.status[c] = "proved"
            rep.detail[c] = "in both key states" + (", and of the key's choice (the lemma)"
                                                     if c in proved else "")
    rep.seconds = off.seconds + on.seconds + (time.time() - t0)
    return rep


def with_vector(vector: RoutineReport, off: RoutineReport, on: RoutineReport) -> RoutineReport:
    """The vector kernel's copy: vcompose's dispatch, glue and vector
    routine, with the dispatched scalar copy as its fallback."""
    return vcompose.compose(vector, combine(off, on))
