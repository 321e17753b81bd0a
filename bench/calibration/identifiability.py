"""What the training cells of a cross-validation fold leave free, and how
far that moves the fold's figure.

A fold of `calibrate_2024`'s cross-validation refits a profile without one
group of cells (a mode, a size band) and scores the fit on that group.  If
some free parameter changes no training cell, the search leaves it where
it started, and the fold's score on the held-out group is then the score
of that starting value, not of anything the data said.  For each fold of
bench/calibration/results/calibration_2024.json this script:

* re-makes the fold's problem (same cells, constraints, free parameters),
* finds the free parameters the training cells leave free: moving one
  across its whole bound range (others at the fold's values) changes the
  training objective by less than TOLERANCE,
* sweeps those parameters over their bounds and reports the range of the
  held-out mean |error| over points the training cells cannot tell apart
  from the fold's own (same training objective within TOLERANCE): the
  lowest figure any fit of this model could report, and the highest.

When that range straddles the goal (15 %), the fold's figure is decided by
where the search started, and no fitting method can do better from these
cells alone: more measurements (another routine, or the held-out group's
kind of cell) are what would fix it.

Usage: python -m bench.calibration.identifiability [--only u74|c910]
Writes bench/calibration/results/identifiability.json.

Imports: measure (calibrate, calibrate_fit), bench.calibration.calibrate_2024
and the standard library.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
import tomllib
from pathlib import Path

from bench.calibration.calibrate_2024 import (FITS, RESULTS, ROOT, Ratios2021, base_text, memcpy_elf,
                                              rows_of)
from bench.exits import exit_status
from copygen.emu.timing.profile import PROFILE_DIR, parse_profile
from copygen.measure.calibrate import Model, cells_of, evaluate, relative_errors, resolve_params
from copygen.measure.calibrate_fit import group_of

OUT = ROOT / "bench" / "calibration" / "results" / "identifiability.json"
KINDS = {"leave-one-mode-out": "mode", "leave-one-size-band-out": "band"}
TOLERANCE = 0.005     # relative change of the training objective counted as none
SWEEP = 9             # values tried across a parameter's bounds
MAX_POINTS = 300      # points of the sweep over the left-free parameters at most
GOAL = 15.0


def _values(cube: dict, params) -> tuple[int, ...]:
    return tuple(int(cube[p.name]) for p in params)


def _spread(p, n: int = SWEEP) -> list[int]:
    step = max(1, (p.hi - p.lo) // (n - 1))
    return sorted({*range(p.lo, p.hi + 1, step), p.hi})


def _held_out(model, params, x, train, test, cons) -> tuple[float, float]:
    """(training objective, held-out mean |error| %) at x: the held-out cells
    use the overhead fitted on the training cells, as the fold does."""
    ev = evaluate(model, params, x, train, cons)
    cycles = model.cycles(params, x, test)
    if cycles is None or not ev.errors:
        return float("inf"), float("nan")
    errs = relative_errors(test, cycles, ev.overhead)
    return ev.cost, 100 * sum(abs(e) for e in errs) / len(errs)


def fold_report(model, params, cells, cons, fold: dict, kind: str, in_sample: tuple) -> dict:
    train = [c for c in cells if group_of(c, kind) != fold["held_out"]]
    test = [c for c in cells if group_of(c, kind) == fold["held_out"]]
    x0 = _values(fold["fitted"], params)
    base_cost, base_err = _held_out(model, params, x0, train, test, cons)
    free = []
    for i, p in enumerate(params):
        costs = [_held_out(model, params, x0[:i] + (v,) + x0[i + 1:], train, test, cons)[0] for v in _spread(p)]
        if max(costs) - min(costs) <= TOLERANCE * base_cost:
            free.append(i)
    errs = []
    n = max(3, int(MAX_POINTS ** (1 / max(len(free), 1))))
    for vals in itertools.product(*[_spread(params[i], min(n, SWEEP)) for i in free]):
        x = list(x0)
        for i, v in zip(free, vals):
            x[i] = v
        cost, err = _held_out(model, params, tuple(x), train, test, cons)
        if abs(cost - base_cost) <= TOLERANCE * base_cost:
            errs.append((err, dict(zip((params[i].name for i in free), vals))))
    in_cost, in_err = _held_out(model, params, in_sample, train, test, cons)
    lo, hi = min(errs, key=lambda e: e[0]), max(errs, key=lambda e: e[0])
    return {"held_out": fold["held_out"], "cells": len(test), "fold_error_pct": round(base_err, 2),
            "recorded_error_pct": fold["mean_abs_error_pct"],
            "left_free_by_training": [params[i].name for i in free],
            "equivalent_points": len(errs),
            "lowest_error_pct": round(lo[0], 2), "lowest_at": lo[1],
            "highest_error_pct": round(hi[0], 2), "highest_at": hi[1],
            "in_sample_point": {"training_objective_vs_fold": round(in_cost / base_cost, 3),
                                "held_out_error_pct": round(in_err, 2)},
            "decided_by_start": lo[0] <= GOAL < hi[0]}


def profile_report(name: str, elf: Path, rec: dict) -> dict:
    cfg = FITS[name]
    text = base_text(name, cfg, PROFILE_DIR / f"{cfg['old']}.toml")
    data = tomllib.loads(text)
    params = resolve_params(cfg["free"], data, parse_profile(data, f"{name}.toml"))
    cells = cells_of(rows_of(cfg["core"]))
    model = Model(data, f"{name}.toml", {"memcpy": elf}, max(c.size for c in cells))
    cons = Ratios2021().constraints(cfg["ratios"]) if cfg["ratios"] else []
    in_sample = _values(rec["fitted"], params)
    out = {}
    for cv in rec["cross_validation"]:
        if cv["kind"] not in KINDS:
            continue
        folds = []
        for fold in cv["folds"]:
            t0 = time.perf_counter()
            folds.append(fold_report(model, params, cells, cons, fold, KINDS[cv["kind"]], in_sample))
            print(f"{name} {cv['kind']} {fold['held_out']}: {json.dumps(folds[-1])} "
                  f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        out[cv["kind"]] = {"recorded_mean_pct": cv["mean_abs_error_pct"], "folds": folds}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=sorted(FITS))
    args = ap.parse_args(argv)
    elf = memcpy_elf()
    fits = json.loads(RESULTS.read_text())["fits"]
    result = json.loads(OUT.read_text()) if args.only and OUT.is_file() else {}
    result.update({"fits": str(RESULTS.relative_to(ROOT)), "tolerance": TOLERANCE, "goal_pct": GOAL})
    command = "python -m bench.calibration.identifiability " + " ".join(argv or sys.argv[1:])
    for name in [args.only] if args.only else list(FITS):
        result.setdefault("profiles", {})[name] = {"command": command.strip(),
                                                   **profile_report(name, elf, fits[name])}
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
