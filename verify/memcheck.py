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


class MemoryChecks:
    def __init__(self, proof):
        self.p = proof
        self.w = proof.world

    # --- the start of a segment --------------------------------------------
    def bv_facts(self, start) -> list:
        if start is None:
            return []
        st = self.p.heads[start]
        fs = [bv_formula(c, st.x, st.sstatus, st.watched, st.written, self.w, self.p.terms)
              for c in self.p.inv[start]]
        return [f for f in fs if f is not None]

    def word_subst(self, start) -> list:
        if start is None:
            return []
        st = self.p.heads[start]
        out = []
        for c in self.p.inv[start]:
            if c.kind == "word" and z3.is_const(st.x[c.args[0]]):
                r, b, off = c.args
                out.append((st.x[r], self.w.source_word(st.x[b] + bv(off), 8)))
        return out

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
