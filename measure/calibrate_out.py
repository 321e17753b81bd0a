"""What a calibration leaves behind: a fitted profile's TOML, a record, a picture.

Role: turn a measure.calibrate_fit.Calibration into (1) a JSON-ready record
of the fit (the data, the method, the fitted values, the per-cell
residuals, the cross-validated errors, the parameters the data leave
free), (2) the profile's TOML text with the fitted values put in place
(every comment kept, each fitted key's comment starting "fitted:") and a
`[calibration]` table holding that record (`against` and `error` stay
strings, as emu.timing.profile reads them), and (3) a PNG of measured
against predicted bytes/cycle per cell.  matplotlib (Agg) is imported only
when a picture is asked for.
May import measure.calibrate, measure.calibrate_fit, measure.calibrate_toml, matplotlib
(lazily) and the standard library.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from copygen.measure.calibrate import predicted_bpc
from copygen.measure.calibrate_fit import Calibration, Fold, cv_error
from copygen.measure.calibrate_toml import fitted_text

METHOD = ("least squares of the relative error of bytes/cycle (predicted/measured - 1), "
          "by a bounded integer pattern search (the engines' parameters are integers); "
          "each benchmark method's per-call overhead solved for at every point")
CV_NAMES = {"routine": "leave-one-routine-out", "mode": "leave-one-mode-out",
            "band": "leave-one-size-band-out",
            # the constraints are other routines' figures (ratios measured elsewhere on the core)
            "constraints": "leave-the-other-routines-out"}


@dataclass
class About:
    """What the fit was against, for the record."""

    data: str                         # the measurement file as given
    source: str                       # where its figures come from
    header: dict = field(default_factory=dict)
    routines: dict[str, str] = field(default_factory=dict)   # routine -> the code that was run
    profile: str = ""                 # the profile fitted (name or path)


def pct(x: float | None) -> float | None:
    return None if x is None else round(100 * x, 2)


def record(cal: Calibration, about: About) -> dict:
    """The fit as plain data (JSON and the [calibration] table)."""
    pb = cal.problem
    cells = pb.cells
    cycles = pb.model.cycles(pb.params, cal.best.values, cells)
    rows = [{"routine": c.routine, "mode": c.mode, "size": c.size, "src_off": c.src_off,
             "dst_off": c.dst_off, "method": c.method, "state": c.state,
             "measured": round(c.measured, 4),
             "predicted": round(predicted_bpc(c, cycles[c.run], cal.best.overhead), 4),
             "error_pct": pct(e), "at": c.where} for c, e in zip(cells, cal.best.errors)]
    model = pb.model
    return {
        "data": about.data, "source": about.source, "profile": about.profile,
        "routines": about.routines,
        "method": METHOD, "prior": pb.prior,
        "free": [p.name for p in pb.params],
        "bounds": {p.name: [p.lo, p.hi] for p in pb.params},
        "start": {p.name: p.start for p in pb.params}, "fitted": cal.fitted(),
        "overhead_cycles": {m: round(v, 2) for m, v in cal.best.overhead.items()},
        "in_sample": _summary(cal.best.errors),
        "before": _summary(cal.start.errors),
        "cross_validation": [{"kind": CV_NAMES[k], "mean_abs_error_pct": pct(cv_error(folds)),
                              "folds": [_fold(f, pb.params) for f in folds]}
                             for k, folds in cal.folds.items()],
        "unconstrained": cal.unconstrained,
        "sensitivity": [{"param": s.param.name, "moved_to": list(s.moves),
                         "max_error_change_pct": pct(s.max_change), "constrained": s.constrained}
                        for s in cal.sens],
        "degenerate": [list(d) for d in cal.degenerate],
        "constraints": [{"name": con.name, "target": con.target, "model": round(got, 4),
                         "error_pct": pct(got / con.target - 1)} for con, got in cal.best.constraints],
        "evaluations": cal.evaluations,
        "emulator": {"runs": model.runs, "seconds": round(model.seconds, 2),
                     "ms_per_run": round(1000 * model.seconds / max(model.runs, 1), 2)},
        "cells": rows,
    }


def _fold(f: Fold, params) -> dict:
    out = {"held_out": f.held_out, "cells": len(f.errors), "mean_abs_error_pct": pct(f.mean_abs),
           "fitted": dict(zip([p.name for p in params], f.values))}
    if f.predicted:
        out["predicted"] = [{"name": con.name, "target": con.target, "model": round(got, 4),
                             "error_pct": pct(got / con.target - 1)} for con, got in f.predicted]
    return out


def _summary(errors: list[float]) -> dict:
    if not errors:
        return {"cells": 0}
    return {"cells": len(errors), "mean_abs_error_pct": pct(sum(abs(e) for e in errors) / len(errors)),
            "rms_error_pct": pct(math.sqrt(sum(e * e for e in errors) / len(errors))),
            "max_abs_error_pct": pct(max(abs(e) for e in errors))}


def against_text(rec: dict, board: str, core: str, clock: str) -> str:
    routines = ", ".join(f"{r} ({src})" for r, src in rec["routines"].items())
    methods = ", ".join(sorted({f"{c['method']} {c['state']}" for c in rec["cells"]}))
    return (f"{Path(rec['data']).name} ({rec['source']}): {routines} on {board} ({core}"
            f"{', ' + clock + ' GHz' if clock else ''}), {len(rec['cells'])} cells, {methods}")


def error_text(rec: dict) -> str:
    ins = rec["in_sample"]
    parts = [f"bytes/cycle, predicted/measured - 1: in-sample mean |error| {ins['mean_abs_error_pct']} % "
             f"(max {ins['max_abs_error_pct']} %) over {ins['cells']} cells"]
    parts += [f"{cv['kind']} cross-validated {cv['mean_abs_error_pct']} %" for cv in rec["cross_validation"]]
    if rec["constraints"]:
        worst = max(abs(c["error_pct"]) for c in rec["constraints"])
        parts.append(f"{len(rec['constraints'])} constraints within {worst} %")
    return "; ".join(parts)


def calibration_table(rec: dict, against: str, board: str | None = None) -> dict:
    """The [calibration] table: `against` and `error` (strings, as
    emu.timing.profile reads them), the board measured, then the record's
    figures."""
    return {
        "against": against, "error": error_text(rec), "board": board,
        "data": rec["data"], "source": rec["source"], "routines": rec["routines"] or None,
        "method": rec["method"], "free": rec["free"], "start": rec["start"], "fitted": rec["fitted"],
        "overhead_cycles": rec["overhead_cycles"],
        "in_sample_mean_abs_error_pct": rec["in_sample"]["mean_abs_error_pct"],
        "in_sample_max_abs_error_pct": rec["in_sample"]["max_abs_error_pct"],
        "before_mean_abs_error_pct": rec["before"].get("mean_abs_error_pct"),
        "cross_validated": [{"kind": cv["kind"], "held_out": f["held_out"], "cells": f["cells"],
                             "mean_abs_error_pct": f["mean_abs_error_pct"]}
                            for cv in rec["cross_validation"] for f in cv["folds"]] or None,
        "cross_validated_error_pct": {cv["kind"]: cv["mean_abs_error_pct"]
                                      for cv in rec["cross_validation"]} or None,
        "unconstrained": rec["unconstrained"],
        "degenerate": rec["degenerate"] or None,
        "constraints": rec["constraints"] or None,
    }


def profile_text(original: str, cal: Calibration, rec: dict, against: str,
                 name: str | None = None, board: str | None = None) -> str:
    """The fitted profile: the original text, the fitted values in place
    with a "fitted:" comment (a free parameter the data left unconstrained
    and unmoved keeps its line and its source), the new [calibration]."""
    note = f"{Path(rec['data']).name}, see [calibration]"
    free = set(cal.unconstrained)
    moved = [(p.table, p.key, v) for p, v in zip(cal.problem.params, cal.best.values)
             if v != p.start or p.name not in free]
    residuals = [{k: r[k] for k in ("routine", "mode", "size", "src_off", "dst_off", "method", "state",
                                    "measured", "predicted", "error_pct")} for r in rec["cells"]]
    return fitted_text(original, moved, note, calibration_table(rec, against, board), residuals,
                       "Per-cell residuals of the fit: bytes/cycle measured and predicted, "
                       "error = predicted/measured - 1.", name)


def plot_fit(cal: Calibration, path: Path, title: str) -> None:
    """Measured against predicted bytes/cycle per cell (left), and both
    against size per routine and mode, with the profile's own values (right)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pb = cal.problem
    fitted = pb.model.cycles(pb.params, cal.best.values, pb.cells)
    before = pb.model.cycles(pb.params, cal.start.values, pb.cells)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 5.2))
    groups = sorted({(c.routine, c.mode, c.method, c.state) for c in pb.cells})
    top = max(max(c.measured for c in pb.cells), 1e-3) * 1.3
    low = min(c.measured for c in pb.cells) / 1.3
    ax.plot([low, top], [low, top], color="grey", lw=1)
    ax.fill_between([low, top], [low * 0.9, top * 0.9], [low * 1.1, top * 1.1], color="grey", alpha=0.15,
                    label="±10 %")
    for g in groups:
        mine = sorted((c for c in pb.cells if (c.routine, c.mode, c.method, c.state) == g), key=lambda c: c.size)
        label = f"{g[1]}: {g[0]}"      # not the symbol first: "_..." labels are hidden
        ax.scatter([c.measured for c in mine],
                   [predicted_bpc(c, fitted[c.run], cal.best.overhead) for c in mine], label=label, s=22)
        line = bx.plot([c.size for c in mine], [c.measured for c in mine], "o", label=f"{label} measured")
        color = line[0].get_color()
        bx.plot([c.size for c in mine], [predicted_bpc(c, fitted[c.run], cal.best.overhead) for c in mine],
                "-", color=color, label=f"{label} fitted")
        bx.plot([c.size for c in mine], [predicted_bpc(c, before[c.run], cal.start.overhead) for c in mine],
                ":", color=color, label=f"{label} before")
    ax.set(xscale="log", yscale="log", xlabel="measured bytes/cycle", ylabel="predicted bytes/cycle",
           title="per cell")
    ax.legend(fontsize=8)
    bx.set(xscale="log", xlabel="size (bytes)", ylabel="bytes/cycle", title="by size")
    bx.set_xscale("log", base=2)
    bx.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
