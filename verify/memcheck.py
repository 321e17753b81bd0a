"""Checks about memory contents at a segment's end: the cursor and word
invariants, and the data clauses of the contract, through verify.dataproof.

Role: assemble the bit-vector facts of a segment's start (preconditions,
register invariants, path condition), the substitutions that pin registers
to source words, and the misalignment case split.  May import z3 and
verify.candidates, verify.dataproof.
"""
from __future__ import annotations

import z3

from verify.candidates import Cand, bv_formula, cursor_extent
from verify.dataproof import ByteProver, instantiate, split_offsets
from verify.z3ops import bv

SHIFT_TERMS = ("OFF", "SHR", "NSHR", "SHL")


def _head_var(st, r):
    """The fresh variable of register r in a loop-head state and the term it
    is written against (fresh_state writes x = term + var)."""
    for v in z3_vars(st.x[r]):
        if v.decl().name().endswith(f"_x{r}"):
            return v, z3.simplify(st.x[r] - v)
    return None, None


def z3_vars(e) -> list:
    out, todo, seen = [], [e], set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.append(t)
        todo += t.children()
    return out


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
        if any(z3.eq(var, v) for v in z3_vars(e)):
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


class MemoryChecks:
    def __init__(self, proof):
        self.p = proof
        self.w = proof.world
        self._subst: dict = {}

    # --- the start of a segment --------------------------------------------
    def bv_facts(self, start) -> list:
        if start is None:
            return []
        st = self.p.heads[start]
        fs = [bv_formula(c, st.x, st.sstatus, st.watched, st.written, self.w, self.p.terms)
              for c in self.p.inv[start]]
        return [f for f in fs if f is not None]

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
        if start not in self._subst:
            self._subst[start] = pinned(self.p.heads[start], self.p.inv[start], self.w,
                                        self.p.terms)
        return self._subst[start]

    def cases(self, start) -> list[tuple]:
        """[(case condition, substitutions)]: one case unless the start pins
        registers to the shift amounts, then one per misalignment."""
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
        if cand.kind == "cursor":
            ext = cursor_extent(cand, st.x, st.written, self.w)
            if self.prover(start, end.cond).valid([], ext) != z3.unsat:
                return False
            return self.written_bytes_ok(start, end.cond, st, [])
        r, b, off = cand.args
        return self.word_ok(start, end.cond, st.x[r], st.x[b] + bv(off))

    def written_bytes_ok(self, start, cond, st, assume) -> bool:
        """written -> dst[W] == expected, on the state st at a segment end."""
        sub = self.word_subst(start)
        head = self.p.heads[start] if start is not None else None
        exp = self.w.expected_byte(self.w.W)
        for case, fix in self.cases(start):
            written = instantiate(st.written, sub, fix)
            byte = instantiate(st.watched, sub, fix)
            pr = self.prover(start, cond, [case, written] + list(assume))
            if pr.vacuous():
                continue
            start_byte = head.watched if head else self.w.DST0
            start_ok = head.written if head else z3.BoolVal(False)
            if not pr.bytes_ok(byte, exp, start_byte, start_ok):
                return False
        return True

    def word_ok(self, start, cond, value, addr) -> bool:
        sub = self.word_subst(start)
        for case, fix in self.cases(start):
            pr = self.prover(start, cond, [case])
            if pr.vacuous():
                continue
            for k in range(8):
                byte = instantiate(z3.Extract(8 * k + 7, 8 * k, value), sub, fix)
                exp = z3.Select(self.w.SRC, instantiate(addr + k, sub, fix))
                if not pr.bytes_ok(byte, exp):
                    return False
        return True
