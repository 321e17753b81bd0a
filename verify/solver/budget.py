"""Solver budgets that do not depend on the machine's load.

Z3's `timeout` is wall-clock: on a machine busy with other proofs a query
gives up where an idle one would not, and a verdict would then depend on
what else ran.  A budget here is given in milliseconds of this idle
machine and set as a resource limit (`rlimit`, Z3's count of its own
steps) of UNITS_PER_MS units per millisecond, with a wall-clock backstop
BACKSTOP times longer for a query that spends its time outside the counted
steps.

The steps a query takes also depend on the context's history (term ids,
caches): the same query asked again in one context can take a different
number of steps (a factoring query: 6.7 to 31.9 million units in four
asks).  So a one-shot query is translated into a context of its own: the
same facts give the same steps and the same answer, whatever ran before it
in the process and however busy the machine is.

A one-shot query about bit-vectors goes to Z3's SMT core first, behind
the cheap rewrites (simplify, propagate-values, solve-eqs, elim-uncnstr):
on the prover's queries (64-bit sums, comparisons, masks of pointers and
counts) it answers in a fraction of the steps of QF_BV's default, which
bit-blasts the whole query for one SAT search (CHANGELOG.md has the
figures).  Only where the core gives up within the budget does the
default solver get the query, with the budget again: every query either
can answer is answered, and each answer is the solver's own.

Role: `budget` (limits on a solver), `Query` (a one-shot query in a
fresh context) and `shared_check` (one check in the caller's context),
whose answers verify.solver.answers may already know.  A Query asks the
solver its formulas as verify.symbolic.presolve writes them; shared_check, the
vector prover's, as they come (there the rewrite costs more than it
saves: CHANGELOG.md).  May import z3,
verify.solver.answers, verify.symbolic.presolve and the standard library.
"""
from __future__ import annotations

import time

import z3

from copygen.verify.solver import answers
from copygen.verify.symbolic.presolve import arith_masks

# Units per idle millisecond: bench/verify/solver_units.py logs every query of
# `copygen verify` with its units and seconds; CHANGELOG.md has the
# figures this rate comes from.
UNITS_PER_MS = 4000
# Wall-clock backstop, in multiples of the budget's idle time.
BACKSTOP = 10
# The SMT core's pipeline for a Query about bit-vectors; CORE False asks
# QF_BV's default alone (bench/verify/prover_ab.py measures one against the other).
CORE_TACTICS = ("simplify", "propagate-values", "solve-eqs", "elim-uncnstr", "smt")
CORE = True


def budget(s: z3.Solver, ms: int) -> None:
    """Limit each check of s to ms idle milliseconds' worth of steps."""
    s.set("rlimit", ms * UNITS_PER_MS)
    s.set("timeout", ms * BACKSTOP)


# how shared_check asks, for verify.solver.answers
SHARED = "one check on a solver of the caller's context"


def shared_check(facts: list, ms: int) -> tuple[z3.CheckSatResult, z3.Solver | None]:
    """One check of facts on a solver of the caller's context, within a
    budget: (answer, the solver, for a sat answer's model), or (unsat,
    None) when verify.solver.answers kept that answer.  Only unsat is kept: such
    a solver shares the context's history, so where it gives up may
    depend on what ran before."""
    limit = ms * UNITS_PER_MS
    if answers.recall(facts, SHARED, limit) == z3.unsat:
        return z3.unsat, None
    s = z3.Solver()
    budget(s, ms)
    assert_all(s, facts)
    t0 = time.perf_counter()
    r = s.check()
    answers.remember(facts, SHARED, limit, r, time.perf_counter() - t0)
    return r, s


def translated(fs, ctx: z3.Context) -> list:
    """fs in ctx, translated together so that shared subterms are
    translated once (one vector of terms, one call into Z3)."""
    fs = list(fs)
    if not fs:
        return []
    src = fs[0].ctx
    vec = z3.AstVector(ctx=src)
    for f in fs:
        z3.Z3_ast_vector_push(src.ref(), vec.vector, f.as_ast())
    out = vec.translate(ctx)
    return [type(f)(z3.Z3_ast_vector_get(ctx.ref(), out.vector, i), ctx)
            for i, f in enumerate(fs)]


def assert_all(s: z3.Solver, facts: list) -> None:
    """Assert facts (formulas of s's context) on s, without the Python
    API's per-argument casts."""
    ref, solver = s.ctx.ref(), s.solver
    for f in facts:
        z3.Z3_solver_assert(ref, solver, f.as_ast())


class Query:
    """facts, in a context of their own, checked within a budget; the
    model of a sat answer evaluates formulas of the caller's context.
    `solver` holds the facts for callers that push goals on it (an
    incremental solver of the logic's default); `check` asks a one-shot
    solver first (see the module's docstring)."""

    def __init__(self, facts, logic: str = "QF_BV") -> None:
        self.ctx = z3.Context()
        self.logic = logic
        self.facts = translated(arith_masks(facts), self.ctx)
        self._solver: z3.Solver | None = None
        self._answered: z3.Solver | None = None

    @property
    def solver(self) -> z3.Solver:
        """A solver of the logic's default holding the facts, made when
        first asked for (a query the SMT core answers never needs it)."""
        if self._solver is None:
            self._solver = z3.SolverFor(self.logic, ctx=self.ctx)
            assert_all(self._solver, self.facts)
        return self._solver

    def _core_first(self) -> bool:
        return CORE and self.logic == "QF_BV"

    def _solvers(self):
        """The solvers `check` asks, in order, until one answers: for a
        query about bit-vectors the SMT core's pipeline, then `solver`
        (made only if the core gives up)."""
        if self._core_first():
            core = z3.Then(*[z3.Tactic(t, ctx=self.ctx) for t in CORE_TACTICS],
                           ctx=self.ctx).solver()
            assert_all(core, self.facts)
            yield core
        yield self.solver

    def check(self, ms: int) -> z3.CheckSatResult:
        """The answer within ms idle milliseconds' worth of steps for each
        solver asked: one the answer store kept for this very query
        (verify.solver.answers), or the solvers'."""
        limit = ms * UNITS_PER_MS
        asked = f"{self.logic}, core first" if self._core_first() else self.logic
        known = answers.recall(self.facts, asked, limit)
        if known is not None:
            return known
        t0 = time.perf_counter()
        for s in self._solvers():
            budget(s, ms)
            r = s.check()
            self._answered = s
            if r != z3.unknown:
                break
        answers.remember(self.facts, asked, limit, r, time.perf_counter() - t0,
                         self._answered.reason_unknown() if r == z3.unknown else "")
        return r

    def true_in_model(self, fs) -> list[bool]:
        """For each of fs: true in the model of the last (sat) check."""
        m = self.answered().model()
        return [z3.is_true(m.eval(f, model_completion=True))
                for f in translated(fs, self.ctx)]

    def answered(self) -> z3.Solver:
        """The solver that gave the last answer (`solver` before any)."""
        return self._answered if self._answered is not None else self.solver

    def model(self) -> "QueryModel":
        """The model of the last (sat) check, for terms of the caller's context."""
        return QueryModel(self)


class QueryModel:
    """A Query's model that evaluates terms of the caller's context: the
    model comes from the query's own context, so which model the solver
    picks does not depend on what else ran in the process."""

    def __init__(self, query: Query) -> None:
        self.query, self.m = query, query.answered().model()

    def eval(self, e, model_completion: bool = False):
        return self.m.eval(e.translate(self.query.ctx), model_completion=model_completion)
