"""Counterexamples: take the solver's model of a failed check, shrink it to
a small n, rebuild it as a concrete scenario (same alignments, same fault
offset) and replay it in the emulator.  A clause is reported violated only
when the replay shows it, or when the failing path starts at the routine's
entry (no invariant involved) and the clause cannot be observed concretely.
A counterexample, as text or data, shows the call and what the run shows
about its own clause, nothing else.

Role: turn failed checks (verify.checks.prove.Check) into verdicts.  May import z3, verify.*.
"""
from __future__ import annotations

import random
from dataclasses import replace

import z3

from copygen.verify.solver.budget import Query
from copygen.verify.contract.clauses import OVERLAP_KINDS, STRING_KINDS
from copygen.verify.invariants.concrete import MARGIN, PAGE, Scenario, loads_outside, run, verdicts
from copygen.verify.counterexamples.exhaustive import scenarios
from copygen.verify.invariants.samples import scenario, with_fault
from copygen.verify.symbolic.z3ops import bv

SHRINK = (8, 16, 32, 64, 128, 256, 1024, 4096)
# loads are recorded in every replay, so an over-read shows concretely; a
# failing path that starts at the entry (no invariant involved) is exact
# symbolic execution, and its model is a real call even when no replay
# reaches the same load
# (R1 too: its obligation is the instruction itself, so a feasible path
# from the entry to it is a call that breaks the rule)
FROM_ENTRY = ("B2", "B2s", "R1")


FAULT_CLAUSES = ("C2", "C3", "C4", "C5", "C6")
# replayed with the fault moved (and without one): an overrun that a fault
# stops, the exit then returning exactly, shows only when nothing faults; an
# access without an extable entry (X1) oopses only when the fault meets it,
# and the model's loop-head state may be at a size that takes another path
VARIANT_CLAUSES = FAULT_CLAUSES + ("B1", "B2", "X1")


def _model(proof, f, fault: bool | None):
    """A model of the failed check with n as small as it goes; `fault` asks
    for a run with (True) or without (False) a fault, None for either."""
    w = proof.world
    want = [] if fault is None else [z3.Not(w.NF) if fault else w.NF]
    for limit in SHRINK + (None,):
        extra = want + ([] if limit is None else [z3.ULE(w.N, bv(limit))])
        pr = proof.data.prover(f.start, f.cond, extra)
        q = Query([*pr.base, z3.Not(f.goal)], logic="QF_ABV")
        if q.check(20000) == z3.sat:
            return q.model()
    return None


def models(proof, f):
    """Models to replay, the likeliest to show the failure first."""
    order = (True, False) if f.clause in FAULT_CLAUSES else (False, True)
    for fault in order:
        m = _model(proof, f, fault)
        if m is not None:
            yield m


def _val(m, e) -> int:
    return m.eval(e, model_completion=True).as_long()


def scenario_from(proof, m, seed: int = 7) -> Scenario:
    w = proof.world
    n = _val(m, w.N)
    rng = random.Random(seed)
    sc = scenario(w.kind, n, 0, 0, rng)
    page = 4096
    D = (sc.D & ~(page - 1)) + (_val(m, w.D) & (page - 1))
    S = (sc.S & ~(page - 1)) + (_val(m, w.S) & (page - 1))
    delta = (_val(m, w.S) - _val(m, w.D)) & ((1 << 64) - 1)
    delta -= (1 << 64) if delta >> 63 else 0
    if w.kind in OVERLAP_KINDS and abs(delta) < 1 << 20:     # the overlap is the point
        S = D + delta
    F = None
    if not z3.is_true(m.eval(w.NF, model_completion=True)) and w.user:
        U = S if w.user == "src" else D
        F = U + _val(m, w.FO)
        if F % page and F != U:         # a boundary, or the buffer's first byte
            F = None
    return Scenario(w.kind, D, S, n, sc.src, sc.dst0, C=_val(m, w.C) & 0x7F or 1, F=F)


def _hex(b: bytes, limit: int = 16) -> str:
    return b[:limit].hex(" ") + (" ..." if len(b) > limit else "")


# A counterexample shows the call that rebuilds the run (n, dst, and src, c
# or the fault point where the routine takes them) and, of the run, only
# what its clause is about: clear_user has no source, S1 is about SUM alone.
SOURCE_KINDS = ("to", "from", "memcpy", *OVERLAP_KINDS)  # a source buffer
USER_KINDS = ("to", "from", "clear")                      # a fault point
RETURN_CLAUSES = ("C1", "C2", "C3", "C4", "C5", "C6")     # about the value returned
BYTE_CLAUSES = ("C1", "C3", "C4", "C6")                   # about dst's bytes
EXPECTED_CLAUSES = ("C1", "C3", "C6")                     # ... against the bytes due there
SHOWN = 16          # entries of a list kept in the JSON form


def _call(sc: Scenario, clause: str) -> dict:
    ex = {"n": sc.N, "dst": hex(sc.D)}
    if sc.kind in SOURCE_KINDS:
        ex["src"] = hex(sc.S)
        if clause in EXPECTED_CLAUSES:
            ex["src_bytes"] = sc.src[:sc.N].hex()
    if sc.kind == "memset":
        ex["c"] = sc.C
    if sc.kind in USER_KINDS:
        ex["first_inaccessible"] = None if sc.F is None else hex(sc.F)
        ex["fault_offset"] = None if sc.F is None else sc.F - sc.U
    return ex


def _dst_bytes(sc: Scenario, out, clause: str) -> dict:
    """dst's bytes that break `clause`: `wrong`, those counted as copied
    that differ from the expected (C1: all n, on a fault C3 the first n-N;
    C6 both lists) and `modified`, those counted as not copied that differ
    from what dst held before (C4)."""
    n, exp, before = sc.N, sc.expected(), sc.dst_before()
    copied = n if sc.F is None else n - min(out.ret, n)
    seen = {}
    if clause in EXPECTED_CLAUSES:
        seen["wrong"] = [{"i": i, "expected": exp[i], "got": out.dst[i]}
                         for i in range(copied) if out.dst[i] != exp[i]]
    if clause in ("C4", "C6"):
        seen["modified"] = [{"i": i, "got": out.dst[i], "before": before[i]}
                            for i in range(copied, n) if out.dst[i] != before[i]]
    return seen


def _outside(sc: Scenario, out) -> list[dict]:
    """Bytes modified within MARGIN below dst or past dst + n (B1); offset from dst."""
    below, above = sc.initial(sc.D - MARGIN, MARGIN), sc.initial(sc.D + sc.N, MARGIN)
    return ([{"offset": i - MARGIN, "got": g, "before": b}
             for i, (g, b) in enumerate(zip(out.before, below)) if g != b] +
            [{"offset": sc.N + i, "got": g, "before": b}
             for i, (g, b) in enumerate(zip(out.after, above)) if g != b])


def observed(sc: Scenario, out, clause: str) -> dict:
    """What the run shows about `clause`, lists in full: the error that
    stopped it, or the return value (C1-C6), SUM at exit (S1), the user
    accesses made with SUM clear (S2), whether the callee-saved registers
    were kept (A1), bytes modified outside dst (B1), loads outside the
    source (B2, B2s, when the run recorded them), the instructions that
    broke the register rules (R1), dst's bytes and those of them that
    break the clause (C1, C3, C4, C6)."""
    if out.error:
        return {"error": out.error}
    seen: dict = {}
    if clause in RETURN_CLAUSES:
        seen["returned"] = out.ret
    if clause == "S1":
        seen["sum_at_exit"] = out.sum_at_exit
    if clause == "S2":
        seen["sum_clear_accesses"] = [{"pc": hex(f.pc), "address": hex(f.addr)}
                                      for f in getattr(out, "faults", ()) if "SUM clear" in f.cause]
    if clause == "A1":
        seen["callee_saved_kept"] = out.callee_ok
    if clause == "R1" and out.rule_breaks is not None:
        seen["rule_breaks"] = out.rule_breaks
    if clause == "B1":
        seen["modified_outside"] = _outside(sc, out)
    if clause in ("B2", "B2s") and out.loads is not None:
        seen["loads_outside"] = [{"offset": a - sc.S, "size": k}
                                 for a, k in loads_outside(sc, out.loads, strict=clause == "B2s")]
    if clause in BYTE_CLAUSES:
        seen["dst_after"] = out.dst.hex()
        seen.update(_dst_bytes(sc, out, clause))
    return seen


def example(sc: Scenario, out, clause: str) -> dict:
    """The replayed counterexample of `clause` as data (the JSON report's
    form): the call, then what the run shows about the clause."""
    return {**_call(sc, clause), **{k: v[:SHOWN] if isinstance(v, list) else v
                                    for k, v in observed(sc, out, clause).items()}}


def _listed(items: list, what: str, show) -> str:
    return f"{len(items)} {what}: " + ", ".join(show(x) for x in items[:4]) + \
        (" ..." if len(items) > 4 else "")


def _said(key: str, v) -> str:
    """One observation of `observed`, in words."""
    if key == "error":
        return f"oops/limit: {v}"
    if key == "returned":
        return f"returned {v}"
    if key == "sum_at_exit":
        return f"SUM at exit {'set' if v else 'clear'}"
    if key == "sum_clear_accesses":
        return _listed(v, "user accesses with SUM clear", lambda a: f"pc {a['pc']} (address {a['address']})")
    if key == "rule_breaks":
        return _listed(v, "breaks of the register rules", str)
    if key == "callee_saved_kept":
        return "callee-saved registers and ra kept" if v else "a callee-saved register or ra not kept"
    if key == "modified_outside":
        return _listed(v, "bytes outside [dst, dst+n) modified",
                       lambda b: f"dst[{b['offset']}]={b['got']:02x} (was {b['before']:02x})")
    if key == "loads_outside":
        return _listed(v, "loads outside the source", lambda ld: f"{ld['size']} bytes at src{ld['offset']:+d}")
    if key == "modified":
        return _listed(v, "bytes counted as not copied modified",
                       lambda b: f"dst[{b['i']}]={b['got']:02x} (was {b['before']:02x})")
    assert key == "wrong", key
    return _listed(v, "bytes differ from the expected",
                   lambda b: f"dst[{b['i']}]={b['got']:02x} (want {b['expected']:02x})")


def describe(sc: Scenario, out, clause: str) -> str:
    """One paragraph a kernel developer can rebuild the run from: the call,
    and what the run shows about `clause`."""
    call = f"n={sc.N}, dst={sc.D:#x}"
    if sc.kind in SOURCE_KINDS:
        call += f" src={sc.S:#x}"
    if sc.kind == "memset":
        call += f" c={sc.C:#x}"
    if sc.kind in USER_KINDS:
        call += ", " + ("no fault" if sc.F is None else
                        f"user page at {sc.F:#x} inaccessible (user buffer + {sc.F - sc.U})")
    if sc.kind in SOURCE_KINDS and clause in EXPECTED_CLAUSES:
        call += f"; source bytes {_hex(sc.src[:sc.N])}"
    seen = [_said(k, v) for k, v in observed(sc, out, clause).items()
            if k != "dst_after" and v != []]
    return f"{call}: {'; '.join(seen) or 'returned normally'}"


def fault_variants(sc: Scenario, limit: int = 64) -> list[Scenario]:
    """The model's call with the fault boundary moved through the user
    buffer, every alignment kept.  The solver's state at a loop head may
    satisfy the invariants without being reachable as it is (e.g. a block
    boundary where no block starts); these concrete runs look for the same
    failure at the reachable places.  Only concrete runs: nothing assumed."""
    if sc.kind not in ("to", "from", "clear"):
        return []
    out = []
    # loops a small n skips: one word past the model's n first (it may sit
    # just under a threshold), then sizes that enter the block loops
    sizes = [sc.N] + sorted({k for k in (sc.N + 8, 136, 256) if k > sc.N})
    for n in sizes:
        base = sc if n == sc.N else replace(
            sc, N=n, src=bytes((7 * i + 3) % 128 for i in range(n)),
            dst0=bytes(128 + (5 * i + 1) % 128 for i in range(n)))
        # without a fault too: a store past the end that a fault would have
        # stopped (the exit then resumes and returns exactly) lands in the margin
        out.append(replace(base, F=None))
        if n:       # the buffer's first page inaccessible, at its own alignment
            out.append(replace(base, F=base.U))
        U, found = base.U, 0
        for fo in range(n):
            if (-fo) % 8 != U % 8:
                continue                     # F must be page-aligned with U % 8 kept
            newU = (U & ~(PAGE - 1)) + ((-fo) % PAGE)
            out.append(replace(base, S=newU, F=newU + fo) if sc.kind == "from"
                       else replace(base, D=newU, F=newU + fo))
            found += 1
            if found >= limit:
                break
    return out


# the small search's sizes: every n up to 16, then sizes around the usual
# thresholds and block lengths (8-word blocks, 9*SZREG-1), without a fault
SEARCH_ALL_N = 16
SEARCH_MORE_N = (23, 24, 31, 32, 33, 63, 64, 65, 70, 71, 72, 73, 79, 80, 128, 135, 136, 143, 256)


# the faulting search's sizes: the first blocks of the usual unrolled loops
# (2 and 8 words: whole, one byte past, and the second 8-word block), where
# a fault exit's constant is most often wrong (4688 runs in all)
FAULT_SEARCH_N = (24, 72, 73, 128)
# the fault clauses that read dst up to the returned count: meaningless once
# C2 (the count is in range) is violated
COUNTED = ("C3", "C4", "C5", "C6")


class SmallSearch:
    """When no model of a failed check replays as a violation (the solver's
    loop-head state may be one no call reaches), look for one among small
    concrete calls: every n <= 16 with every alignment and fault offset
    (verify.counterexamples.bounded's enumeration), then larger sizes around the usual
    thresholds, every alignment, no fault; for a fault clause, then faults
    at every offset of the first blocks' sizes (FAULT_SEARCH_N).  Run once per routine, on demand;
    only a concrete run makes a clause violated."""

    def __init__(self, image, symbol: str, kind: str, string: bool, rules=None):
        self.image, self.symbol, self.kind, self.string = image, symbol, kind, string
        self.rules = rules
        self.first: dict | None = None
        self.faulting: dict | None = None

    def first_failing(self, clause: str, faulting: bool = True):
        if self.first is None:
            self.first = self._first_breaking(self._scenarios())
        found = self.first.get(clause)
        if found is None and clause in VARIANT_CLAUSES and self.kind in USER_KINDS \
                and faulting:
            if self.faulting is None:
                self.faulting = self._first_breaking(self._fault_scenarios())
            found = self.faulting.get(clause)
        return found

    def failing(self) -> dict:
        """Every clause some run of the whole search breaks (the faulting
        runs too): clause -> (scenario, outcome), the first run that
        breaks it, the small calls before the faulting ones."""
        if self.first is None:
            self.first = self._first_breaking(self._scenarios())
        if self.faulting is None and self.kind in USER_KINDS:
            self.faulting = self._first_breaking(self._fault_scenarios())
        return {**(self.faulting or {}), **self.first}

    def _first_breaking(self, scenarios) -> dict:
        found: dict = {}
        for sc in scenarios:
            out = run(self.image, self.symbol, sc, rules=self.rules)
            for c, ok in verdicts(sc, out, self.string).items():
                if not ok:
                    found.setdefault(c, (sc, out))
        return found

    def _fault_scenarios(self):
        """Faults at every page boundary inside the user buffer, for the
        sizes of FAULT_SEARCH_N, every dst alignment, src co-aligned or 3
        bytes off: the runs that reach a fault exit of the unrolled loops
        with little enough n to shrink."""
        rng = random.Random(13)
        for n in FAULT_SEARCH_N:
            for d in range(8):
                for s in sorted({d, (d + 3) % 8}) if self.kind != "clear" else (0,):
                    for k in range(1, n):
                        yield with_fault(scenario(self.kind, n, d, s, rng), k)

    def _scenarios(self):
        rng = random.Random(11)
        yield from scenarios(self.kind, SEARCH_ALL_N, rng)
        if self.kind in OVERLAP_KINDS:
            return
        for n in SEARCH_MORE_N:
            for d in range(8):
                for s in range(8 if self.kind in ("to", "from", "memcpy") else 1):
                    yield scenario(self.kind, n, d, s, rng)


def confirm(prog, proof, ck, rep) -> None:
    string = proof.world.kind in STRING_KINDS
    rules = proof.world.rules
    search = SmallSearch(prog.image, rep.symbol, rep.kind, string, rules)
    # C2 first: once the returned count is out of range, C3-C6 (which read
    # the first n-N bytes) have nothing to say, and no search is run for them
    for clause, f in sorted(ck.failures.items(), key=lambda cf: cf[0] != "C2"):
        if clause not in rep.status:        # e.g. B2s for memset: not one of its clauses
            continue
        seen, sc, out, how = None, None, None, "replayed"
        for m in models(proof, f):
            for sc in [scenario_from(proof, m)] + (
                    fault_variants(scenario_from(proof, m)) if clause in VARIANT_CLAUSES else []):
                out = run(prog.image, rep.symbol, sc, rules=rules)
                seen = verdicts(sc, out, string).get(clause)
                if seen is False:
                    break
            if seen is False:
                break
        if seen is not False:
            counted_only = clause in COUNTED and rep.status.get("C2") == "violated"
            found = search.first_failing(clause, faulting=not counted_only)
            if found is not None:
                (sc, out), seen, how = found, False, "found among small calls"
        if sc is None:
            rep.detail[clause] = f"{f.what} at {f.pc:#x}; no model to replay (solver gave up)"
            continue
        where = f"at pc {f.pc:#x}"
        if seen is False:
            rep.status[clause] = "violated"
            rep.detail[clause] = f"{f.what} {where}; {how}: {describe(sc, out, clause)}"
            rep.examples[clause] = example(sc, out, clause)
        elif clause in FROM_ENTRY and f.start is None:
            rep.status[clause] = "violated"
            rep.detail[clause] = f"{f.what} {where} (path from entry; n={sc.N})"
        else:
            rep.detail[clause] = (f"{f.what} {where}: not confirmed by replay "
                                  f"({describe(sc, out, clause)}); the loop invariant may be too weak")
        if clause in ("C3", "C4") and rep.status[clause] == "violated":
            rep.status["C6"] = "violated"
            rep.detail["C6"] = f"{clause} is violated: {rep.detail[clause]}"
