"""Proving what bytes hold, without asking the solver to reason about arrays.

A byte the routine stored is an if-then-else tree over the stores that may
have covered dst[W]; each leaf is a byte of a loaded word (a select from the
source array), a constant, or the byte as it was at the start.  Instead of
one hard array query we check each leaf under its guard with a bit-vector
query: a source leaf must read index S + W; a start leaf must have been
correct already (the invariant); a constant must equal the expected byte.

Before splitting, registers the start invariant pins to source words
(`word` candidates) are replaced by those words, and the misalignment
(S - D) & 7 is split into its 8 values, so that funnel shifts by a
symbolic amount become fixed byte selections; under a case its value is
put in for the misalignment in every other fact and goal (`CaseValue`).
A shift amount computed on the path (from a cursor the path moved) is not
a register the split names: `forced` finds the one value the facts of a
case leave it.

Role: one check, `bytes_ok` (`all_bytes_ok` for several bytes at once).
May import z3, verify.solver.answers, verify.contract.world, verify.symbolic.z3ops, verify.symbolic.nowrap,
verify.solver.budget, verify.symbolic.presolve.
"""
from __future__ import annotations

import time

import z3

from copygen.verify.solver import answers
from copygen.verify.solver.budget import Query, budget, translated
from copygen.verify.symbolic.nowrap import lemmas
from copygen.verify.symbolic.presolve import arith_masks
from copygen.verify.symbolic.z3ops import bv, mentions

# Budget per byte query (verify.solver.budget): twice the steps of the hardest one
# answered in u74tuned's proofs (223 million units, CHANGELOG.md).
TIMEOUT_MS = 120000
# Many small goals under the same facts (a cursor's interval goals) are
# asked of one solver holding the facts, each goal pushed and popped, so
# the facts are bit-blasted once for all of them.  Z3's incremental solver
# is weaker than its one-shot bit-blasting solver on hard goals (the byte
# leaves, C3's coverage on fault paths), so only `all_valid` uses it, and
# what it gives up on within INCREMENTAL_MS is asked again of a fresh
# solver with the full budget (CHANGELOG.md, "What makes it fast
# enough", has both figures).
INCREMENTAL_MS = 10000
# the question all_valid asks, for verify.solver.answers: every goal in turn
ALL_VALID = "QF_BV, each goal in turn"
# Budget of one query over all the leaves of a store's bytes (all_bytes_ok)
# before they are asked one by one.
BATCH_MS = 10000


def leaves(e, guards=()):
    """(guards, leaf) for every path through nested If on a byte value."""
    if z3.is_app_of(e, z3.Z3_OP_ITE):
        c, a, b = e.children()
        yield from leaves(a, guards + (c,))
        yield from leaves(b, guards + (z3.Not(c),))
    else:
        yield guards, e


def select_index(e, src):
    """The index if e is SRC[index], else None."""
    if z3.is_select(e) and z3.eq(e.arg(0), src):
        return e.arg(1)
    return None


class ByteProver:
    """Checks `written_end -> byte_end == expected` leaf by leaf."""

    def __init__(self, world, base_facts: list):
        self.world = world
        # under one misalignment case every other formula has the case's
        # value put in for (S - D) & 7, in each form simplify gives it
        # (`CaseValue`); the case fact itself stays as it is
        self.case = CaseValue.of(world, base_facts)
        base_facts = self.case.facts(base_facts)
        # preconditions, BV invariants, path condition, and the no-wrap
        # lemmas of their pointer comparisons (verify.symbolic.nowrap)
        self.base = base_facts + lemmas(world, base_facts)
        # the same without the facts that only say "this access did not
        # fault" (World.fault_free), for goals that do not mention the
        # fault point: the same verdicts, and the solver no longer
        # bit-blasts one comparison with FO per user access of the path
        loose = world.fault_free(base_facts, z3.BoolVal(True))
        self.loose = self.base if len(loose) == len(base_facts) \
            else loose + lemmas(world, loose)
        self._inc: dict = {}

    def facts_for(self, formulas) -> list:
        """The base facts a query about `formulas` needs: the loose ones
        unless one of them mentions the fault point."""
        w = self.world
        if self.loose is self.base or any(mentions(f, w.FO, w.NF) for f in formulas):
            return self.base
        return self.loose

    def valid(self, facts: list, goal) -> z3.CheckSatResult:
        """unsat when the base facts and `facts` imply `goal`."""
        return self._fresh(facts, goal)

    def all_valid(self, goals: list) -> bool:
        """Every goal follows from the base facts (one incremental solver,
        in a context of its own: the same goals in the same order take the
        same steps)."""
        goals = self.case.facts(goals)
        base = self.facts_for(goals)
        asked = [*base, *goals]
        if answers.recall(asked, ALL_VALID, INCREMENTAL_MS) == z3.unsat:
            return True
        t0 = time.perf_counter()
        if not self._all_valid(base, goals):
            return False
        answers.remember(asked, ALL_VALID, INCREMENTAL_MS, z3.unsat, time.perf_counter() - t0)
        return True

    def _all_valid(self, base: list, goals: list) -> bool:
        key = base is self.loose
        if key not in self._inc:
            self._inc[key] = Query(base)
            budget(self._inc[key].solver, INCREMENTAL_MS)
        q = self._inc[key]
        for goal in goals:
            q.solver.push()
            q.solver.add(*translated(arith_masks([z3.Not(goal), *lemmas(self.world, [goal])]),
                                     q.ctx))
            r = q.solver.check()
            q.solver.pop()
            if r == z3.unknown:
                r = self._fresh([], goal)
            if r != z3.unsat:
                return False
        return True

    def _fresh(self, facts: list, goal, limit_ms: int = TIMEOUT_MS) -> z3.CheckSatResult:
        facts, goal = self.case.facts(facts), self.case.put(goal)
        return Query([*self.facts_for([*facts, goal]), *facts, z3.Not(goal),
                      *lemmas(self.world, [*facts, goal])]).check(limit_ms)

    def valid_within(self, goal, limit_ms: int) -> z3.CheckSatResult:
        """One goal, one one-shot solver, a shorter limit."""
        return self._fresh([], goal, limit_ms)

    def forced(self, facts: list, terms: list) -> list | None:
        """[(term, value)] when the facts leave each term one value; [] when
        the facts cannot hold together (nothing to check); None when some
        term may take two values or the solver gives up."""
        put = self.case.facts(facts)
        q = Query([*self.base, *put, *lemmas(self.world, put)])
        r = q.check(TIMEOUT_MS)
        if r == z3.unsat:
            return []
        if r != z3.sat:
            return None
        model = q.model()
        out = []
        for term in terms:
            there = model.eval(term, model_completion=True)
            value = z3.BitVecVal(there.as_long(), term.size())
            if self.valid(facts, term == value) != z3.unsat:
                return None
            out.append((term, value))
        return out

    def bytes_ok(self, byte, expected, start_byte=None, start_ok=None, extra=()) -> bool:
        """byte (simplified) equals expected under every guard; a leaf equal to
        start_byte is fine where start_ok (a BV fact) holds."""
        return self.all_bytes_ok([(byte, expected, start_byte, start_ok, extra)])

    def all_bytes_ok(self, items: list) -> bool:
        """bytes_ok for each (byte, expected, start_byte, start_ok, extra) of
        items.  Every leaf of every byte is one obligation (facts -> goal);
        one query asks whether any of them can fail, so the base facts are
        bit-blasted once for all of them (a store's eight bytes under one
        case are one query, not eight or more).  What that query gives up
        on within BATCH_MS is asked leaf by leaf with the full budget."""
        obligations = [ob for item in items for ob in self._obligations(*item)]
        if len(obligations) > 1:
            r = self._any_fails(obligations)
            if r != z3.unknown:
                return r == z3.unsat
        return all(self.valid(facts, goal) == z3.unsat for facts, goal in obligations)

    def _obligations(self, byte, expected, start_byte=None, start_ok=None, extra=()):
        """(facts, goal) per leaf of byte's value tree."""
        w = self.world
        exp_idx = select_index(expected, w.SRC)
        for guards, leaf in leaves(byte):
            facts = list(extra) + list(guards)
            if start_byte is not None and z3.eq(leaf, start_byte):
                goal = start_ok
            else:
                idx = select_index(leaf, w.SRC)
                if idx is not None and exp_idx is not None:
                    goal = idx == exp_idx
                elif idx is None and exp_idx is None:
                    goal = leaf == expected
                else:
                    goal = z3.BoolVal(False)     # fine only if this leaf is unreachable
            yield facts, goal

    def _any_fails(self, obligations: list) -> z3.CheckSatResult:
        """unsat when every (facts, goal) follows from the base facts: the
        disjunction of (facts and not goal) over all of them has no model."""
        obligations = [(self.case.facts(facts), self.case.put(goal)) for facts, goal in obligations]
        formulas = [f for facts, goal in obligations for f in (*facts, goal)]
        some = z3.Or(*[z3.And(*facts, z3.Not(goal)) for facts, goal in obligations])
        return Query([*self.facts_for(formulas), some,
                      *lemmas(self.world, formulas)]).check(BATCH_MS)


def shift_amounts(e) -> list:
    """The shift amounts in e that are not constants (a funnel shift's
    amount computed on the path), each once."""
    kinds = (z3.Z3_OP_BLSHR, z3.Z3_OP_BSHL, z3.Z3_OP_BASHR)
    seen, out, todo = set(), {}, [e]
    while todo:
        x = todo.pop()
        if x.get_id() in seen or not z3.is_app(x):
            continue
        seen.add(x.get_id())
        if x.decl().kind() in kinds and not z3.is_bv_value(x.arg(1)):
            out.setdefault(x.arg(1).get_id(), x.arg(1))
        todo.extend(x.children())
    return list(out.values())


def split_offsets(world):
    """The 8 cases of the source/destination misalignment."""
    off = misalignment(world)
    return [(k, off == k) for k in range(8)]


def misalignment(world):
    """(S - D) & 7, as split_offsets states its cases."""
    return (world.S - world.D) & bv(7)


class CaseValue:
    """The value one misalignment case gives (S - D) & 7, put in for that
    term wherever a formula has it.  The case fact `(S - D) & 7 == k`
    stays among the facts, so a formula with k put in is equivalent to the
    original under it.  The solver does not see by itself that `Extract(2,
    0, S) + 7 * Extract(2, 0, D)` (simplify's form of the term) is k and
    bit-blasts both; with k put in, a shift copy's byte goals are about
    fixed offsets (CHANGELOG.md has the figures)."""

    _done: dict = {}      # (ast id, k) -> (formula, with k put in)

    def __init__(self, fact=None, pairs=()) -> None:
        self.fact, self.pairs = fact, list(pairs)
        self.k = fact.arg(1).as_long() if fact is not None else None

    @classmethod
    def of(cls, world, facts: list) -> "CaseValue":
        """The case among facts, if there is one (else a no-op)."""
        off = misalignment(world)
        for f in facts:
            if z3.is_eq(f) and z3.eq(f.arg(0), off) and z3.is_bv_value(f.arg(1)):
                k = f.arg(1).as_long()
                low = z3.Extract(2, 0, world.S - world.D)
                forms = [(off, bv(k)), (z3.simplify(off), bv(k)),
                         (low, z3.BitVecVal(k, 3)), (z3.simplify(low), z3.BitVecVal(k, 3))]
                pairs = []
                for t, v in forms:
                    if not any(z3.eq(t, u) for u, _ in pairs):
                        pairs.append((t, v))
                return cls(f, pairs)
        return cls()

    def put(self, e):
        """e with the case's value put in (e itself without a case, or when
        e does not mention the term)."""
        if not self.pairs or (self.fact is not None and z3.eq(e, self.fact)):
            return e
        key = (e.get_id(), self.k)
        hit = self._done.get(key)
        if hit is not None and z3.eq(hit[0], e):
            return hit[1]
        out = z3.substitute(e, *self.pairs)
        if z3.eq(out, e):
            out = e
        else:
            out = z3.simplify(z3.substitute(z3.simplify(out), *self.pairs))
        if len(self._done) > 200000:
            self._done.clear()
        self._done[key] = (e, out)
        return out

    def facts(self, fs) -> list:
        return [self.put(f) for f in fs]


def split_alignments(world):
    """The 64 cases of the source and destination alignments, each with the
    substitutions that make them visible: S and D become their high bits
    and a constant low 3 bits, so a shift by 8 * (S & 7) (an alignment head
    built from whole words) becomes a fixed byte selection."""
    out = []
    for s in range(8):
        for d in range(8):
            cond = z3.And(world.S & bv(7) == s, world.D & bv(7) == d)
            fix = [(world.S, z3.Concat(z3.Extract(63, 3, world.S), z3.BitVecVal(s, 3))),
                   (world.D, z3.Concat(z3.Extract(63, 3, world.D), z3.BitVecVal(d, 3)))]
            out.append((cond, fix))
    return out


def instantiate(expr, subst: list, case_fix: list):
    """Replace pinned registers, then fixed-case registers, and simplify."""
    if subst:
        expr = z3.substitute(expr, *subst)
    if case_fix:
        expr = z3.substitute(expr, *case_fix)
    return z3.simplify(expr)
