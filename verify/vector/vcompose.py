"""The user-copy contract of a kernel with a vector path, composed: the
dispatch at the top of __asm_copy_to_user, the C glue
enter_vector_usercopy, the vector routine and the scalar fallback together.

Linux 6.8 to mainline route a copy like this (docs/vector.md):

* dispatch (assembly): n below riscv_v_usercopy_threshold goes straight to
  the scalar copy, whose return value reaches the caller as it is;
* glue (C, arch/riscv/lib/riscv_v_helpers.c): when vector use is not
  allowed here (`may_use_simd()`), `return fallback_scalar_usercopy(dst,
  src, n)`; otherwise `remain = __asm_vector_usercopy(dst, src, n)`, and
  when remain is not 0 the scalar copy runs on the last `remain` bytes
  (`copied = n - remain`, dst and src advanced by it) and its value is
  returned.  Both routines are declared `int` there and the glue returns
  `int`: a value crosses that boundary as its low 32 bits, sign-extended
  (the RV64 ABI), into the `size_t remain` or into the caller's count.

The glue is not compiled and run here: this module states its arithmetic
as a specification (the two lines above, `int` included) and proves, with
Z3, that any vector routine and any scalar copy satisfying their own proved
clauses give the caller the scalar contract's C1-C6.  The components enter
as those clauses, over a prefix model of dst: a routine handed m bytes
with its first inaccessible byte at f leaves dst[0, m-r) holding the
source (C3) and dst[m-r, m) untouched (C4), and cannot count a byte at or
past f as copied (its load or store there faults); with no fault it
returns 0 and copies all (C1).  Which of the components' clauses each
composed clause rests on is in DEPENDS.

The lemma is proved over the n the components are proved for
(verify.contract.world.MAX_N); where it fails only for n >= 2^31 the report says
so, with the counterexample, since the kernel's read/write paths cap a
copy below that (MAX_RW_COUNT).

clear_user composes the same way, with a glue of our own (the kernel has
no vector clear; docs/vector.md): the dispatch at the top of
__clear_user, then `enter_vector_clear_user(dst, n)`: without vector use
here the scalar clear's value, else the vector clear's inside a kernel
vector section, returned as it is.  The vector clear only stores, so its
count is exact (its own C5 and C6): no scalar hand-over is needed, and
the counts are `unsigned long` end to end (no int).  compose_clear()
proves C1-C6 and B1 of that whole (Composition with vector_exact and no
hand-over), and the copy-shaped glue with the hand-over too.

Role: composed RoutineReports from component reports.  May import z3,
verify.solver.budget, verify.contract.clauses, verify.checks.prove, verify.contract.world.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import z3

from copygen.verify.solver.budget import shared_check
from copygen.verify.contract.clauses import BY_KIND, USER
from copygen.verify.checks.prove import RoutineReport
from copygen.verify.contract.world import MAX_N

INT_LIMIT = 1 << 31
# the status of a clause the int glue keeps below 2^31 only (verify.contract.verdict
# reads a "holds for n <=" status as bounded)
BELOW_INT = f"holds for n <= {INT_LIMIT - 1}"
# idle milliseconds' worth of solver steps per clause; each query is a
# few dozen bit-vector terms
QUERY_MS = 20_000

# composed clause -> (the vector routine's clauses, the scalar copy's) it rests on
DEPENDS = {
    "C1": (("C1",), ("C1",)),
    "C2": (("C2", "C3"), ("C2", "C3")),
    "C3": (("C1", "C2", "C3", "C4"), ("C1", "C2", "C3", "C4")),
    "C4": (("C1", "C2", "C3", "C4"), ("C1", "C2", "C3", "C4")),
    "C5": (("C2", "C3", "C4"), ("C2", "C3", "C5")),
    "C6": (("C1", "C2", "C3", "C4"), ("C1", "C2", "C3", "C4")),
    "B1": (("B1", "C2"), ("B1",)),
}
# clauses that hold of the whole exactly when they hold of both parts: the
# glue is C with no user access and leaves sstatus alone, the dispatch is
# three instructions that touch neither
CARRIED = ("S1", "S2", "A1", "B2", "B2s", "X1", "T1")
# the clear's: its vector part is exact as the scalar one is, so C5 rests
# on the vector clear's C5 too; no hand-over, so B1 is each part's own
DEPENDS_CLEAR = {**DEPENDS, "C5": (("C2", "C3", "C5"), ("C2", "C3", "C5")),
                 "B1": (("B1",), ("B1",))}
LEMMA = ("C1", "C2", "C3", "C4", "C5", "C6", "B1")


def _bv(name: str):
    return z3.BitVec(name, 64)


def _int_return(x):
    """What a 64-bit count becomes through C's int: low 32 bits, sign-extended."""
    return z3.SignExt(32, z3.Extract(31, 0, x))


@dataclass
class _Part:
    """One routine handed m bytes at offset `at` of the caller's buffers, in
    the prefix model: returns r; dst[at, at+m-r) then holds the source."""
    name: str
    at: object
    m: object
    r: object
    exact: bool = True      # the scalar's C5; a vector routine with plain loads has V5 instead

    def facts(self, no_fault, fo) -> list:
        """The routine's own clauses as facts about r.  Everything from the
        caller's fault offset fo on is inaccessible, so a part starting at or
        past it faults at its offset 0."""
        local = z3.If(z3.ULE(self.at, fo), fo - self.at, z3.BitVecVal(0, 64))
        sees_fault = z3.And(z3.Not(no_fault), z3.ULT(local, self.m))
        out = [z3.Implies(z3.Not(sees_fault), self.r == 0),                     # C1
               z3.Implies(sees_fault, z3.ULE(self.r, self.m)),                   # C2
               z3.Implies(sees_fault, z3.ULE(self.m - self.r, local))]           # C3 + the fault
        if self.exact:
            out.append(z3.Implies(z3.And(sees_fault, self.r == self.m), local == 0))  # C5
        return out

    def stored(self):
        """[start, end) of the bytes it leaves holding the source."""
        return self.at, self.at + (self.m - self.r)


@dataclass
class Outcome:
    status: str                 # proved | violated | unknown | BELOW_INT
    detail: str
    example: dict | None = None


class Composition:
    """The composed copy as Z3 terms: one path variable for each of the
    dispatch's and glue's choices, the components' returns free but for
    their clauses."""

    def __init__(self, glue_int: bool = True, hand_over: bool = True, vector_exact: bool = False):
        self.n, self.fo, self.threshold = _bv("n"), _bv("fault_offset"), _bv("threshold")
        self.no_fault, self.simd = z3.Bool("no_fault"), z3.Bool("may_use_simd")
        conv = _int_return if glue_int else (lambda x: x)
        zero = z3.BitVecVal(0, 64)
        self.direct = _Part("scalar (below the threshold)", zero, self.n, _bv("r_scalar_direct"))
        self.whole = _Part("scalar (no vector here)", zero, self.n, _bv("r_scalar_whole"))
        self.vector = _Part("vector", zero, self.n, _bv("r_vector"), exact=vector_exact)
        self.remain = conv(self.vector.r)
        self.rest = _Part("scalar (the rest)", self.n - self.remain, self.remain, _bv("r_scalar_rest"))
        below = z3.ULT(self.n, self.threshold)
        self.paths = {
            "below the threshold": (below, self.direct.r, [self.direct]),
            "no vector here": (z3.And(z3.Not(below), z3.Not(self.simd)), conv(self.whole.r), [self.whole]),
            "vector, all copied": (z3.And(z3.Not(below), self.simd, self.remain == 0), zero, [self.vector]),
            "vector, then scalar": (z3.And(z3.Not(below), self.simd, self.remain != 0), conv(self.rest.r),
                                    [self.vector, self.rest]),
        }
        if not hand_over:
            # a glue that returns the vector routine's count as it is
            self.paths["vector, then scalar"] = (z3.And(z3.Not(below), self.simd, self.remain != 0),
                                                 self.remain, [self.vector])

    def world(self, max_n: int) -> list:
        return [z3.ULT(self.n, max_n),
                z3.Implies(z3.Not(self.no_fault), z3.ULT(self.fo, self.n))]

    def goals(self, path: str):
        """(clause, condition, claim) for one path."""
        cond, ret, parts = self.paths[path]
        # dst holds the source on the union of the parts' stored ranges and
        # is untouched elsewhere: the first part's range starts at 0, so
        # [0, k) is covered when k <= end0, or when the second range starts
        # inside the first and k <= its end
        (_, end0), *more = [p.stored() for p in parts]
        if more:
            ((at1, end1),) = more
            covers = lambda k: z3.Or(z3.ULE(k, end0), z3.And(z3.ULE(at1, end0), z3.ULE(k, end1)))  # noqa: E731
            untouched_from = lambda k: z3.And(z3.ULE(end0, k), z3.Or(at1 == end1, z3.ULE(end1, k)))  # noqa: E731
        else:
            covers = lambda k: z3.ULE(k, end0)  # noqa: E731
            untouched_from = lambda k: z3.ULE(end0, k)  # noqa: E731
        fault = z3.Not(self.no_fault)
        within = z3.And(fault, z3.ULE(ret, self.n))
        copied = self.n - ret
        out = [("C1", self.no_fault, z3.And(ret == 0, covers(self.n))),
               ("C2", fault, z3.ULE(ret, self.n)),
               ("C3", within, covers(copied)),
               ("C4", within, untouched_from(copied)),
               ("C5", z3.And(fault, ret == self.n), self.fo == 0),
               ("C6", within, z3.And(covers(copied), untouched_from(copied)))]
        if self.rest in parts:
            # B1: the scalar copy is handed a piece of [dst, dst+n)
            out.append(("B1", z3.BoolVal(True), z3.ULE(self.remain, self.n)))
        facts = [f for p in parts for f in p.facts(self.no_fault, self.fo)]
        if self.rest in parts:
            # what the rest's clauses say only means something for a piece
            # of the buffers, which the B1 goal asks for on its own
            facts.append(z3.ULE(self.remain, self.n))
        return cond, facts, out

    def _facts_for(self, clause: str, facts) -> list:
        if clause == "B1":
            return self.vector.facts(self.no_fault, self.fo)
        return facts

    def check(self, clause: str, max_n: int) -> Outcome:
        for path in self.paths:
            cond, facts, goals = self.goals(path)
            for c, pre, claim in goals:
                if c != clause:
                    continue
                res, s = shared_check([*self.world(max_n), cond, pre, z3.Not(claim),
                                       *self._facts_for(c, facts)], QUERY_MS)
                if res == z3.unknown:
                    return Outcome("unknown", f"{path}: the solver gave up ({s.reason_unknown()})")
                if res == z3.sat:
                    return Outcome("violated", path, self._example(self._smallest(s, s.model()), path))
        return Outcome("proved", "for every n")

    def _smallest(self, s: z3.Solver, m):
        """The model with the smallest n, then the smallest fault offset (a
        counterexample a reader can follow): each bit from the top is made
        0 where the solver still finds a model."""
        for term in (self.n, self.fo):
            for bit in range(63, -1, -1):
                want = z3.Extract(bit, bit, term) == 0
                s.push()
                s.add(want)
                ok = s.check() == z3.sat
                if ok:
                    m = s.model()
                s.pop()
                s.add(want if ok else z3.Not(want))
        return m

    def _example(self, m, path: str) -> dict:
        val = lambda t: m.eval(t, model_completion=True).as_long()  # noqa: E731
        _, ret, parts = self.paths[path]
        ex = {"path": path, "n": val(self.n),
              "fault_offset": None if z3.is_true(m.eval(self.no_fault)) else val(self.fo),
              "returns": val(ret)}
        for p in parts:
            ex[p.name] = {"offset": val(p.at), "bytes": val(p.m), "returns": val(p.r)}
        return ex


@functools.lru_cache(maxsize=None)
def lemma(glue_int: bool = True, hand_over: bool = True, max_n: int = MAX_N,
          vector_exact: bool = False) -> dict[str, Outcome]:
    """Each clause of LEMMA for every n < max_n; a clause that fails only
    for n >= 2^31 is BELOW_INT, its counterexample kept.  The lemma does
    not depend on the parts' code: one proof per process."""
    comp = Composition(glue_int, hand_over, vector_exact)
    out = {}
    for clause in LEMMA:
        full = comp.check(clause, max_n)
        if full.status == "violated" and max_n > INT_LIMIT:
            low = comp.check(clause, INT_LIMIT)
            if low.status == "proved":
                full = Outcome(BELOW_INT, f"violated for n >= 2^31 only, {full.detail} (the glue's "
                               "int keeps the low 32 bits of a count)", full.example)
        out[clause] = full
    return out


def _describe(ex: dict) -> str:
    parts = "; ".join(f"{k} handed {v['bytes']:#x} bytes at {v['offset']:#x} returns {v['returns']:#x}"
                      for k, v in ex.items() if isinstance(v, dict))
    where = "no fault" if ex["fault_offset"] is None else f"first inaccessible byte at {ex['fault_offset']:#x}"
    return f"n = {ex['n']:#x}, {where}: {parts}; the caller gets {ex['returns']:#x}"


def compose(vector: RoutineReport, scalar: RoutineReport, glue_int: bool = True) -> RoutineReport:
    """The composed report for scalar's direction ("to" or "from"), or for
    clear_user (scalar.kind "clear": our glue, verify.vector.vcompose's doc): a
    clause is proved when the lemma proves it and the clauses it rests on
    are proved of both parts."""
    t0 = time.time()
    clear = scalar.kind == "clear"
    rep = RoutineReport(f"{scalar.symbol}+vector", scalar.kind)
    proved = lemma(False, False, vector_exact=True) if clear else lemma(glue_int)
    depends = DEPENDS_CLEAR if clear else DEPENDS
    for c in BY_KIND["clear"] if clear else USER:
        if c in proved:
            v_need, s_need = depends[c]
        elif c in CARRIED:
            v_need, s_need = (c,), (c,)
        else:
            continue
        states = {f"{part.symbol} {d}": part.status.get(d, "not proved")
                  for part, need in ((vector, v_need), (scalar, s_need)) for d in need}
        # a part's violation of this very clause is the whole's: the part
        # is reachable from the caller (n below or above the threshold) and
        # its value or its stores reach the caller unchanged; a violation of
        # another clause it rests on leaves this one unknown
        broken = [k for k, st in states.items() if st == "violated" and k.endswith(f" {c}")]
        weak = [f"{k}: {st}" for k, st in states.items() if st != "proved"]
        got = proved.get(c)
        if broken:
            rep.status[c], rep.detail[c] = "violated", "violated by " + ", ".join(broken)
        elif weak and (got is None or got.status != "violated"):
            rep.status[c], rep.detail[c] = "unknown", "rests on " + ", ".join(weak)
        elif got is not None and got.status != "proved":
            rep.status[c] = got.status
            rep.detail[c] = got.detail + (f": {_describe(got.example)}" if got.example else "")
            if got.example:
                rep.examples[c] = got.example
        else:
            rep.status[c] = "proved"
            rep.detail[c] = ("for every n, from both parts' clauses and the glue's arithmetic"
                             if got is not None else "both parts prove it; the glue makes no user access")
    rep.seconds = time.time() - t0
    return rep


def compose_reports(reports: list[RoutineReport], glue_int: bool = True) -> list[RoutineReport]:
    """A composed report for each copy direction of `reports` when one of
    them is a vector routine's."""
    vec = next((r for r in reports if r.kind == "vector"), None)
    out = [] if vec is None else [compose(vec, r, glue_int) for r in reports
                                  if r.kind in ("to", "from") and not r.symbol.endswith("_sum_enabled")]
    vclear = next((r for r in reports if r.kind == "vector_clear"), None)
    if vclear is not None:
        out += [compose(vclear, r) for r in reports if r.kind == "clear"]
    return out
