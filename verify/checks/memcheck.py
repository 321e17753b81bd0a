"""Checks about memory contents at a segment's end: the cursor and word
invariants, and the data clauses of the contract, through verify.checks.dataproof.

Role: assemble the bit-vector facts of a segment's start (preconditions,
register invariants, path condition), the substitutions that pin registers
to source words, and the misalignment case split.  May import z3 and
verify.invariants.candidates, verify.checks.coverage, verify.checks.dataproof, verify.solver.parallel,
verify.symbolic.z3ops.
"""
from __future__ import annotations

import z3

from copygen.verify.invariants.candidates import (CURSORS, Cand, bv_formula, cursor_extent, cursor_interval,
                                      cursor_reach, strongest)
from copygen.verify.checks.coverage import cover_goals, inside_goals
from copygen.verify.checks.dataproof import (ByteProver, instantiate, shift_amounts, split_alignments,
                                      split_offsets)
from copygen.verify.solver.parallel import fork_map
from copygen.verify.symbolic.z3ops import bv, mentions, z3_vars

SHIFT_TERMS = ("OFF", "SHR", "NSHR", "SHL")


def _head_var(st, r):
    """The fresh variable of register r in a loop-head state and the term it
    is written against (fresh_state writes x = term + var)."""
    for v in z3_vars(st.x[r]):
        if v.decl().name().endswith(f"_x{r}"):
            return v, z3.simplify(st.x[r] - v)
    return None, None


def pinned(st, cands, w, terms) -> list:
    """The substitution (variable, expression) the equalities among cands
    give for the head state st, composed so that no expression mentions a
    substituted variable."""
    sub: dict = {}     # var -> expr

    def add(r, value) -> None:
        var, base = _head_var(st, r)
        if var is None or var in sub:
            return
        e = z3.simplify(z3.substitute(value - base, *sub.items()) if sub else value - base)
        if mentions(e, var):
            return
        for k in list(sub):
            sub[k] = z3.simplify(z3.substitute(sub[k], (var, e)))
        sub[var] = e
    for c in cands:
        a = c.args
        if c.kind == "unchanged":
            add(a[0], w.R0[a[0]])
        elif c.kind == "linear" and len(a[0]) == 1 and a[1] not in SHIFT_TERMS \
                and a[3] not in SHIFT_TERMS:
            if a[2] == ():
                add(a[0][0], terms[a[1]] + bv(a[4]))
            elif len(a[2]) == 1:
                add(a[0][0], st.x[a[2][0]] - terms[a[3]] + terms[a[1]] + bv(a[4]))
        elif c.kind == "word" and z3.is_const(st.x[a[0]]):
            add(a[0], w.source_word(st.x[a[1]] + bv(a[2]), 8))
    return list(sub.items())


def live(cases, cond) -> list:
    """The cases whose substitutions do not make the path condition false
    by simplification alone: under S & 7 == s and D & 7 == d a test of
    D's own low bits (an alignment head's first) folds to a constant, and
    a case the path excludes so needs no query.  A test of D + 1 does not
    fold; its cases are left to the solver."""
    if not cond or not any(fix for _, fix in cases):
        return cases
    path = z3.And(*cond)
    return [(case, fix) for case, fix in cases
            if not fix or not z3.is_false(z3.simplify(z3.substitute(path, *fix)))]


class MemoryChecks:
    def __init__(self, proof):
        self.p = proof
        self.w = proof.world
        self._subst: dict = {}
        self._stores: dict = {}       # (start, version, index) -> the store writes right bytes
        self._bv: dict = {}           # (start, version) -> bv_facts
        self.segment = {start: seg for start, seg in proof.segments}

    # --- the start of a segment --------------------------------------------
    def bv_facts(self, start) -> list:
        """The start invariant's facts about registers (no memory), kept per
        version of the invariant."""
        if start is None:
            return []
        key = (start, self.version(start))
        if key not in self._bv:
            st = self.p.heads[start]
            fs = [bv_formula(c, st.x, st.sstatus, st.watched, st.written, self.w, self.p.terms)
                  for c in strongest(self.p.inv[start])]
            self._bv[key] = [f for f in fs if f is not None]
        return list(self._bv[key])

    def word_subst(self, start) -> list:
        """(head variable, value) for every head register the start invariant
        pins: unchanged registers, registers at a fixed distance from a term
        or from another register, registers holding a source word.  Putting
        the values in makes the byte trees' guards fold, so there are fewer
        leaves to check (the invariants stay among the facts, so nothing is
        assumed twice or lost).  Registers tied to the shift amounts are left
        to the misalignment case split."""
        if start is None:
            return []
        key = (start, self.version(start))
        if key not in self._subst:
            self._subst[key] = pinned(self.p.heads[start], self.p.inv[start], self.w,
                                      self.p.terms)
        return self._subst[key]

    def version(self, start) -> int:
        """Which invariant a start has now (Houdini only ever shrinks them)."""
        return -1 if start is None else len(self.p.inv[start])

    def tries(self, start) -> list[list[tuple]]:
        """The case lists to try in turn: `cases`, then, on the path from
        the entry (no loop head yet, so no invariant pins a shift), the 64
        alignment cases of S and D, which fix a shift by the source's own
        alignment (an alignment head in pieces).  A routine proved by the
        first list never pays for the second."""
        first = [self.cases(start)]
        if start is None and self.w.kind not in ("clear", "memset"):
            return first + [split_alignments(self.w)]
        return first

    def cases(self, start) -> list[tuple]:
        """[(case condition, substitutions)]: one case unless the start pins
        registers to the shift amounts, then one per misalignment.  A case
        the facts rule out is not sorted out first: its byte queries are
        unsat at once, so asking whether each case is possible would only
        add queries (CHANGELOG.md, "What makes it fast enough")."""
        pinned = []
        if start is not None:
            st = self.p.heads[start]
            for c in self.p.inv[start]:
                if c.kind == "linear" and c.args[2] == () and c.args[1] in SHIFT_TERMS \
                        and z3.is_const(st.x[c.args[0][0]]) and len(c.args[0]) == 1:
                    pinned.append((st.x[c.args[0][0]], c.args[1], c.args[4]))
        if not pinned:
            return [(z3.BoolVal(True), [])]
        out = []
        for k, cond in split_offsets(self.w):
            vals = {"OFF": k, "SHR": 8 * k, "NSHR": -8 * k, "SHL": 64 - 8 * k}
            out.append((cond, [(var, bv(vals[t] + c)) for var, t, c in pinned]))
        return out

    def prover(self, start, cond, extra=()) -> ByteProver:
        return ByteProver(self.w, self.p.pre + self.bv_facts(start) + list(cond) + list(extra))

    # --- checks ---------------------------------------------------------------
    def holds(self, start, end, cand: Cand) -> bool:
        st = end.state
        if cand.kind in CURSORS:
            if not self.extent_ok(start, end.cond, st, cand):
                return False
            return self.written_bytes_ok(start, end.cond, st, [])
        r, b, off = cand.args
        return self.word_ok(start, end.cond, st.x[r], st.x[b] + bv(off))

    def head_cursor(self, start, reach: bool = False) -> tuple:
        """(written flag, interval) of the start state: the interval [lo, hi)
        of dst its cursor invariant says is written (forward: [0, bound),
        backward: [bound, n)), or None where there is none.  With `reach`,
        the interval it says may be written (a pcursor's is wider)."""
        if start is None:
            return None, None
        head = self.p.heads[start]
        cur = next((c for c in self.p.inv[start] if c.kind in CURSORS), None)
        if cur is None:
            return head.written, None
        return head.written, (cursor_reach if reach else cursor_interval)(cur, head.x, self.w)

    def extent_ok(self, start, cond, st, cand: Cand) -> bool:
        """The register part of a cursor at a path's end: written exactly
        in its interval (a pcursor: all of it, and nothing past its
        reach), and the interval within n.  Through verify.checks.coverage's
        W-free goals when the path's stores allow, else one query over W."""
        pr = self.prover(start, cond)
        lo, hi = cursor_interval(cand, st.x, self.w)
        _, reach = cursor_reach(cand, st.x, self.w)
        hw, hiv = self.head_cursor(start)
        _, hreach = self.head_cursor(start, reach=True)
        cover = cover_goals(self.w.W, st.written, hi, hw, hiv, lo)
        inside = inside_goals(self.w.W, st.written, reach, hw, hreach, lo)
        if cover is None or inside is None:
            return pr.valid([], cursor_extent(cand, st.x, st.written, self.w)) == z3.unsat
        bounds = [z3.ULE(lo, self.w.N)] if cand.kind == "rcursor" else [z3.ULE(hi, self.w.N)]
        return pr.all_valid(bounds + cover + inside)

    def written_bytes_ok(self, start, cond, st, assume) -> bool:
        """written -> dst[W] == expected, on the state st at a segment end.

        By induction over segments: at the entry nothing is written, and if
        every store on the path writes the bytes expected at its address
        (`store_ok`), a written byte is one of those or was written, right,
        before the segment's start.  When some store on the path is not
        known to be right, the byte's value tree is checked leaf by leaf."""
        if all(self.store_ok(start, i) for i in st.stores):
            return True
        return self._leaves_ok(start, cond, st, assume)

    def store_ok(self, start, index: int) -> bool:
        key = (start, self.version(start), index)
        if key not in self._stores:
            self._stores[key] = self._store_ok(start, self.segment[start].stores[index])
        return self._stores[key]

    def prepare(self, starts, jobs: int) -> None:
        """Settle store_ok for every store of these starts' segments, over
        `jobs` processes (the answers are then shared by every later check)."""
        todo = [(start, i) for start in dict.fromkeys(starts)
                for i in range(len(self.segment[start].stores))
                if (start, self.version(start), i) not in self._stores]
        for (start, i), ok in zip(todo, fork_map(lambda k: self.store_ok(*todo[k]),
                                                 len(todo), jobs)):
            self._stores[(start, self.version(start), i)] = ok

    def _store_ok(self, start, rec) -> bool:
        """Every byte the store puts inside [dst, dst+n) is the byte expected there."""
        return any(self._store_ok_in(start, rec, cases) for cases in self.tries(start)) \
            or self._store_ok_forced(start, rec)

    def _store_ok_forced(self, start, rec) -> bool:
        """The last try: the misalignment cases, each with the store's shift
        amounts replaced by the values the case forces on them.  GCC's
        one-word shift copy after a byte head computes its shift from the
        source cursor the head moved, so that no loop head's register pins
        it, and the alignments of S and D alone do not fix it either."""
        if self.w.kind in ("clear", "memset"):
            return False
        sub = self.word_subst(start)
        value = instantiate(rec.value, sub, [])
        amounts = shift_amounts(value)
        if not amounts:
            return False
        for _, case in split_offsets(self.w):
            pr = self.prover(start, rec.cond, [case])
            fix = pr.forced([], amounts)
            if fix is None:
                return False
            if fix and not self._bytes_ok(pr, rec, sub, fix, value):
                return False
        return True

    def _store_ok_in(self, start, rec, cases) -> bool:
        sub = self.word_subst(start)
        return all(self._bytes_ok(self.prover(start, rec.cond, [case]), rec, sub, fix)
                   for case, fix in live(cases, rec.cond))

    def _bytes_ok(self, pr, rec, sub, fix, value=None) -> bool:
        """Each byte the store puts inside [dst, dst+n) is the one expected
        there, under substitutions sub then fix (value: the stored word, if
        not the record's own)."""
        value = rec.value if value is None else value
        items = []
        for k in range(rec.size):
            w = instantiate(rec.addr + bv(k) - self.w.D, sub, fix)
            byte = instantiate(z3.Extract(8 * k + 7, 8 * k, value), sub, fix)
            exp = instantiate(self.w.expected_byte(w), sub, fix)
            items.append((byte, exp, None, None, [z3.ULT(w, self.w.N)]))
        return pr.all_bytes_ok(items)

    def _leaves_ok(self, start, cond, st, assume) -> bool:
        return any(self._leaves_ok_in(start, cond, st, assume, cases)
                   for cases in self.tries(start))

    def _leaves_ok_in(self, start, cond, st, assume, cases) -> bool:
        sub = self.word_subst(start)
        head = self.p.heads[start] if start is not None else None
        exp = self.w.expected_byte(self.w.W)
        for case, fix in live(cases, cond):
            written = instantiate(st.written, sub, fix)
            byte = instantiate(st.watched, sub, fix)
            pr = self.prover(start, cond, [case, written] + list(assume))
            start_byte = head.watched if head else self.w.DST0
            start_ok = head.written if head else z3.BoolVal(False)
            if not pr.bytes_ok(byte, exp, start_byte, start_ok):
                return False
        return True

    def word_ok(self, start, cond, value, addr) -> bool:
        sub = self.word_subst(start)
        for case, fix in self.cases(start):
            pr = self.prover(start, cond, [case])
            items = [(instantiate(z3.Extract(8 * k + 7, 8 * k, value), sub, fix),
                      z3.Select(self.w.SRC, instantiate(addr + k, sub, fix)), None, None, ())
                     for k in range(8)]
            if not pr.all_bytes_ok(items):
                return False
        return True
