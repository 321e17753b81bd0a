"""The checks of every clause of the contract for one explored proof: what
each return and loop head must satisfy (registers, SUM, the count, the
bytes written and left alone), built as verify.checks.query.Check objects,
run over several processes; and termination, a decreasing measure per loop.

verify.checks.prove runs these once the invariants are known; the first
failing check of a clause is its failure (verify.counterexamples.replay
replays it).

Role: check the clauses of one verify.invariants.houdini.Proof.  May import z3,
verify.contract.clauses, verify.checks.rulecheck, verify.checks.coverage,
verify.invariants.candidates, verify.invariants.houdini, verify.solver.parallel,
verify.contract.world, verify.symbolic.z3ops, verify.checks.query.
"""
from __future__ import annotations

from dataclasses import replace

import z3

from copygen.verify.contract.clauses import OVERLAP_KINDS, STRING_KINDS
from copygen.verify.checks.rulecheck import kept_at_return
from copygen.verify.checks.coverage import cover_goals, inside_goals
from copygen.verify.invariants.candidates import NEVER
from copygen.verify.invariants.houdini import Proof
from copygen.verify.solver.parallel import fork_map
from copygen.verify.contract.world import CALLEE_SAVED, SR_SUM
from copygen.verify.symbolic.z3ops import bv
from copygen.verify.checks.query import Check


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
        string = self.w.kind in STRING_KINDS
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
                self._saved(start, end.cond, end.state, end.pc)
                if string:
                    self._string_return(start, end.cond, end.state, end.pc)
                else:
                    self._user_return(start, end.cond, end.state, end.pc)

    def _saved(self, start, cond, st, pc) -> None:
        """A1 and R1 at a return: callee-saved and reserved registers kept."""
        w = self.w
        saved = z3.And(*[st.x[r] == w.R0[r] for r in CALLEE_SAVED])
        if st.ret_target is not None:
            saved = z3.And(saved, st.ret_target == (w.RA0 & bv(~1)))
        self._bv("A1", start, cond, saved, pc, "callee-saved register or ra changed")
        kept = kept_at_return(w, st)
        if kept is not None:
            self._bv("R1", start, cond, kept, pc, "a reserved register changed at a return")

    def _string_return(self, start, cond, st, pc) -> None:
        """C1 at a return of a string function: dst returned, every byte written right."""
        w = self.w
        self._bv("C1", start, cond, st.x[10] == w.D, pc, "does not return dst")
        # memmove, dst == src: a byte left unwritten holds its
        # source byte (Linux's memmove.S returns at once)
        same = [w.D != w.S] if w.kind in OVERLAP_KINDS else []
        self.checks.extend(self._cover("C1", start, cond + same, st, w.N, pc,
                                       "a byte not written"))
        self._data("C1", start, cond, st, pc, "a byte holds the wrong value")

    def _user_return(self, start, cond, st, pc) -> None:
        """S1 and C1..C5 at a return of a user access: SUM, the count, the
        bytes counted as copied and those counted as not."""
        w = self.w
        ret = st.x[10]
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
