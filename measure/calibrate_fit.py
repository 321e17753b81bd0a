"""Fit free profile parameters to measured cells; cross-validate; find what the data leave free.

Role: the search of `copygen calibrate` over measure.calibrate's model.
The engines' parameters are integers (emu.timing.profile refuses anything
else, and a cycle count of 2.5 would mean nothing to the in-order
schedule), so the fit is a bounded integer search rather than a
continuous least-squares solver: two coarse sweeps of each parameter
across its bounds, then compass moves that shrink from half its value to
1, each success followed further along its direction (doubling), then a
rounded Gauss-Newton step of the continuous relaxation and moves of two
parameters at once (for coupled ones, e.g. a miss cost and a bubble).  Only strict improvements are taken,
so a parameter the data do not move keeps the profile's value.  The
per-call overheads are solved for at every point (measure.calibrate).

Cross-validation refits from the profile's own values with one group of
cells left out (a routine; or, with one routine, a mode or a size band)
and scores the left-out cells.  When the fit has constraints (figures of
other routines measured on the same core, such as throughput ratios), a
further fold refits without them and scores them: a check on routines the
fit never saw.  A free parameter is unconstrained when
moving it by half its value (at least 1) either way changes no cell's
error by more than that cell's noise (its spread, else 1 %); two free
parameters are degenerate when their moves change the cells' errors in
proportion (|cos| > 0.99): the data fix only a combination of them.

May import measure.calibrate and the standard library.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Callable, Sequence

from copygen.measure.calibrate import (DEFAULT_NOISE, Cell, Constraint, Evaluation, Model, Param,
                                       evaluate, relative_errors)

Objective = Callable[[tuple[int, ...]], Evaluation]
CV_KINDS = ("routine", "mode", "band", "constraints")


def search(objective: Objective, params: Sequence[Param], budget: int,
           tick: Callable[[], None] = lambda: None, restarts: int = 0) -> tuple[Evaluation, int]:
    """(best evaluation, evaluations made): a local search from the params'
    start values, then from `restarts` random points (a fixed seed, so a
    fit is reproducible), each with `budget` evaluations at most."""
    seen: dict[tuple, Evaluation] = {}

    def ev(x: tuple) -> Evaluation:
        if x not in seen:
            seen[x] = objective(x)
            tick()
        return seen[x]

    rng = random.Random(len(params))
    best = _local(ev, params, ev(tuple(p.start for p in params)), budget, seen)
    for _ in range(restarts):
        x = [rng.randint(p.lo, min(p.hi, max(2 * p.start, p.start + 8))) for p in params]
        found = _local(ev, params, ev(tuple(x)), len(seen) + budget, seen)
        if found.cost < best.cost:
            best = found
    return best, len(seen)


def _local(ev, params, best: Evaluation, budget: int, seen: dict) -> Evaluation:
    """Coarse sweeps, then compass, Gauss-Newton and paired moves from `best`."""
    for _ in range(2):
        best = _scan(ev, params, best, budget, seen)
    steps = [max(1, abs(v) // 2) for v in best.values]
    while len(seen) < budget and params:
        moved = _compass(ev, params, best, steps)
        if moved is not None:
            best = moved
            continue
        if any(s > 1 for s in steps):
            steps = [max(1, s // 2) for s in steps]
            continue
        moved = _newton(ev, params, best) or _pairs(ev, params, best)
        if moved is None:
            break
        best = moved
    return best


def _clamp(params, x: list[int]) -> tuple[int, ...]:
    return tuple(min(max(v, p.lo), p.hi) for p, v in zip(params, x))


def _scan(ev, params, best: Evaluation, budget: int, seen: dict) -> Evaluation:
    """One coarse sweep, a parameter at a time: a few values across its
    bounds and around its value, the best taken (so that a parameter whose
    effect only shows far from the profile's value is not left behind)."""
    for i, p in enumerate(params):
        if len(seen) >= budget:
            break
        v = best.values[i]
        grid = {p.lo, p.hi, v - 1, v + 1, v // 2, 2 * v, v + 4}
        grid |= {p.lo + (p.hi - p.lo) * k // 4 for k in (1, 2, 3)}
        for g in sorted(grid):
            x = list(best.values)
            x[i] = g
            cand = ev(_clamp(params, x))
            if cand.cost < best.cost:
                best = cand
    return best


def _compass(ev, params, best: Evaluation, steps: list[int]) -> Evaluation | None:
    """The first strict improvement along one coordinate, followed further
    (the step doubling) while it keeps improving; None when there is none."""
    for i, step in enumerate(steps):
        for sign in (1, -1):
            x = list(best.values)
            x[i] += sign * step
            cand = ev(_clamp(params, x))
            if not cand.cost < best.cost:
                continue
            k = 2
            while True:
                x = list(best.values)
                x[i] += sign * step * k
                further = ev(_clamp(params, x))
                if not further.cost < cand.cost:
                    return cand
                cand, k = further, 2 * k
    return None


def _newton(ev, params, best: Evaluation) -> Evaluation | None:
    """A damped Gauss-Newton step of the continuous relaxation, rounded:
    the Jacobian by forward differences of one (or a sixteenth of the
    value), the step solved for a few dampings; the first rounded point
    that improves, or None.  It finds moves along a valley of coupled
    parameters (a bigger miss cost and a smaller taken-branch bubble) that
    single and paired steps of one do not."""
    x0, r0 = best.values, best.residuals
    cols = []
    for i, p in enumerate(params):
        h = max(1, abs(x0[i]) // 16)
        x = list(x0)
        x[i] = x0[i] + h if x0[i] + h <= p.hi else x0[i] - h
        probe = ev(_clamp(params, x))
        if len(probe.residuals) != len(r0):
            cols.append([0.0] * len(r0))
            continue
        d = x[i] - x0[i]
        cols.append([(a - b) / d for a, b in zip(probe.residuals, r0)])
    jtj = [[sum(a * b for a, b in zip(ci, cj)) for cj in cols] for ci in cols]
    jtr = [sum(a * b for a, b in zip(ci, r0)) for ci in cols]
    for damping in (1e-4, 1e-2, 1.0):
        step = _solve([[v + (damping * jtj[i][i] + 1e-12 if i == j else 0.0) for j, v in enumerate(row)]
                       for i, row in enumerate(jtj)], [-v for v in jtr])
        if step is None:
            continue
        cand = ev(_clamp(params, [round(v + s) for v, s in zip(x0, step)]))
        if cand.cost < best.cost:
            return cand
    return None


def _solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """x with a x = b (Gaussian elimination, partial pivoting); None if singular."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        piv = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[piv][c]) < 1e-15:
            return None
        m[c], m[piv] = m[piv], m[c]
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))) / m[r][r]
    return x


def _pairs(ev, params, best: Evaluation) -> Evaluation | None:
    """The best strict improvement moving two parameters by one each, or None."""
    found = best
    n = len(params)
    for i in range(n):
        for j in range(i + 1, n):
            for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                x = list(best.values)
                x[i] += si
                x[j] += sj
                cand = ev(_clamp(params, x))
                if cand.cost < found.cost:
                    found = cand
    return found if found is not best else None


@dataclass
class Problem:
    """What a fit is asked: the model, the cells, the free parameters,
    extra constraints, overheads held fixed, an evaluation budget."""

    model: Model
    cells: list[Cell]
    params: list[Param]
    constraints: Sequence[Constraint] = ()
    fixed_overhead: dict[str, float] = field(default_factory=dict)
    budget: int = 400
    prior: float = 0.0
    restarts: int = 0
    tick: Callable[[], None] = lambda: None

    def objective(self, cells: Sequence[Cell]) -> Objective:
        return lambda x: evaluate(self.model, self.params, x, cells, self.constraints,
                                  self.fixed_overhead, prior=self.prior)


def fit(problem: Problem, cells: Sequence[Cell] | None = None) -> tuple[Evaluation, int]:
    """The best point for `cells` (default: all of the problem's)."""
    return search(problem.objective(cells or problem.cells), problem.params, problem.budget,
                  problem.tick, problem.restarts)


@dataclass
class Fold:
    """One cross-validation fold: the group left out and how its cells fared."""

    kind: str
    held_out: str
    values: tuple[int, ...]
    overhead: dict[str, float]
    cells: list[Cell]
    errors: list[float]
    # the constraints fold: each left-out constraint and the model's figure for it
    predicted: list[tuple[Constraint, float]] = field(default_factory=list)

    @property
    def mean_abs(self) -> float:
        return sum(abs(e) for e in self.errors) / len(self.errors)


def constraints_out(problem: Problem) -> list[Fold]:
    """One fold: the fit made on the cells alone, scored on the constraints
    (empty when the problem has none, or the model cannot run one)."""
    if not problem.constraints:
        return []
    best, _ = search(lambda x: evaluate(problem.model, problem.params, x, problem.cells, (),
                                        problem.fixed_overhead, prior=problem.prior),
                     problem.params, problem.budget, problem.tick, problem.restarts)
    got = [(con, problem.model.constraint(problem.params, best.values, con)) for con in problem.constraints]
    if any(g is None for _, g in got):
        return []
    return [Fold("constraints", f"{len(got)} constraints", best.values, best.overhead, [],
                 [g / con.target - 1 for con, g in got], got)]


def group_of(cell: Cell, kind: str) -> str:
    return {"routine": cell.routine, "mode": cell.mode, "band": cell.band}[kind]


def cross_validate(problem: Problem, kind: str) -> list[Fold]:
    """Leave-one-`kind`-out folds (none when the cells have a single group)."""
    if kind == "constraints":
        return constraints_out(problem)
    groups = list(dict.fromkeys(group_of(c, kind) for c in problem.cells))
    if len(groups) < 2:
        return []
    folds = []
    for g in groups:
        train = [c for c in problem.cells if group_of(c, kind) != g]
        test = [c for c in problem.cells if group_of(c, kind) == g]
        best, _ = fit(problem, train)
        # a method only the left-out cells use has no trained overhead: 0
        cycles = problem.model.cycles(problem.params, best.values, test)
        errs = relative_errors(test, cycles, best.overhead)
        folds.append(Fold(kind, g, best.values, best.overhead, test, errs))
    return folds


def cv_error(folds: list[Fold]) -> float | None:
    """Mean |error| over every left-out cell of the folds."""
    errs = [abs(e) for f in folds for e in f.errors]
    return sum(errs) / len(errs) if errs else None


@dataclass
class Sensitivity:
    """How far the cells' errors move when one free parameter moves by half."""

    param: Param
    moves: tuple[int, ...]            # the values tried
    max_change: float                 # largest |change| of any cell's error
    changes: list[float]              # per cell, for the value above the fit
    constrained: bool


def sensitivities(problem: Problem, best: Evaluation) -> list[Sensitivity]:
    out = []
    noise = [c.spread if c.spread else DEFAULT_NOISE for c in problem.cells]
    for i, p in enumerate(problem.params):
        v = best.values[i]
        step = max(1, abs(v) // 2)
        moves = (v + step, v - step) if v - step >= 0 else (v + step,)
        biggest, first = 0.0, None
        constrained = False
        for m in moves:
            x = list(best.values)
            x[i] = m
            ev = evaluate(problem.model, problem.params, tuple(x), problem.cells,
                          overhead=best.overhead)
            if not ev.errors:       # no valid profile there: the data cannot say
                continue
            d = [a - b for a, b in zip(ev.errors, best.errors)]
            first = d if first is None else first
            biggest = max(biggest, max(abs(e) for e in d))
            constrained |= any(abs(e) > n for e, n in zip(d, noise))
        out.append(Sensitivity(p, moves, biggest, first or [0.0] * len(problem.cells), constrained))
    return out


def degenerate_pairs(sens: list[Sensitivity], limit: float = 0.99) -> list[tuple[str, str, float]]:
    """Pairs of constrained parameters whose moves change the cells in proportion."""
    out = []
    live = [s for s in sens if s.constrained]
    for a in range(len(live)):
        for b in range(a + 1, len(live)):
            x, y = live[a].changes, live[b].changes
            nx, ny = math.hypot(*x), math.hypot(*y)
            if nx and ny:
                cos = sum(p * q for p, q in zip(x, y)) / (nx * ny)
                if abs(cos) > limit:
                    out.append((live[a].param.name, live[b].param.name, round(cos, 4)))
    return out


@dataclass
class Calibration:
    """Everything a fit found, for the profile, the report and the plot."""

    problem: Problem
    start: Evaluation                 # the profile's own values (overheads fitted)
    best: Evaluation
    evaluations: int
    folds: dict[str, list[Fold]]      # cross-validation kind -> folds
    sens: list[Sensitivity]
    degenerate: list[tuple[str, str, float]]

    @property
    def unconstrained(self) -> list[str]:
        return [s.param.name for s in self.sens if not s.constrained]

    def fitted(self) -> dict[str, int]:
        return {p.name: v for p, v in zip(self.problem.params, self.best.values)}


def calibrate(problem: Problem, cv_kinds: Sequence[str]) -> Calibration:
    """Fit, cross-validate by each of `cv_kinds`, and probe the fitted point."""
    start = problem.objective(problem.cells)(tuple(p.start for p in problem.params))
    best, evaluations = fit(problem)
    folds = {kind: cross_validate(problem, kind) for kind in cv_kinds}
    sens = sensitivities(problem, best)
    return Calibration(problem, start, best, evaluations, {k: f for k, f in folds.items() if f},
                       sens, degenerate_pairs(sens))


def default_cv(cells: Sequence[Cell]) -> str:
    """Leave-one-routine-out; with one routine, leave-one-mode-out; with one
    mode too, leave-one-band-out."""
    for kind in CV_KINDS[:3]:
        if len({group_of(c, kind) for c in cells}) > 1:
            return kind
    return "band"
