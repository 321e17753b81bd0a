"""A board's figures of a tuning run's baselines and winner: what a
measurement file (docs/measurements.md) holds of each, under the run's
workload, beside the model's expectation.  The ranking is not touched:
only routines the board ran have figures.

Role: reading measurements against a ranking.  May import measure.measured,
measure.rank, measure.workload, tune.evaluate, copygen.errors and the
standard library.
"""
from __future__ import annotations

from copygen.errors import CopygenError, Loc
from copygen.measure import measured
from copygen.measure.rank import plan
from copygen.measure.workload import make_workload
from copygen.tune.evaluate import SYMBOL


def on_board(r, files) -> dict | None:
    """{baseline or "winner": what the board measured of it under the run's
    workload}, for each the files have rows of; None without files.  A file
    with rows of none of them is an error naming what it could have held."""
    if not files:
        return None
    args = r.meta.get("args") or {}
    wl = make_workload(r.meta["workload"], args.get("align_mix", "spec"))
    cases = plan(SYMBOL[r.meta["kind"]], wl)
    sources = {b: (b, e.get("expected")) for b, e in r.baselines.items()}
    if r.winner:
        sources["winner"] = ("winner.copy", r.winner["expected"])
    out = {}
    for label, (source, modelled) in sources.items():
        cells = measured.load(list(files), source)
        share, cycles = measured.expectation(cells, cases)
        if share:
            out[label] = {"source": measured.source_name(source), "share": round(share, 4),
                          "expected_cycles": None if cycles is None else round(cycles, 2),
                          "modelled_cycles": modelled, "on": cells.provenance()}
    if not out:
        wanted = ", ".join(measured.source_name(s) for s, _ in sources.values()) or "none (no baseline, no winner)"
        raise CopygenError("no row measures a baseline or the winner under the run's workload",
                           Loc(files[0]), hint=f"rows are matched by source_file: {wanted}")
    return out
