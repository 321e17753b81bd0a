"""`copygen calibrate` (measure.calibrate*): a profile fitted to measurements.

The round trip: a synthetic board is the u74 profile with three parameters
changed; the emulator under it writes a measurement CSV of a routine built
from examples/kernel2021.copy; calibrating u74 with those three free gets
them back.  Then what the fit reports about itself (cross-validation, the
parameters the data leave free), and the inputs it must refuse."""
from __future__ import annotations

import functools
import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.emu.timing.profile import PROFILE_DIR, load_profile, parse_profile
from copygen.gen.build import build_file
from copygen.measure import measurements
from copygen.measure.bench import Bench, Case
from copygen.measure.calibrate import Constraint, Model, cells_of, resolve_params
from copygen.measure.calibrate_fit import Problem, cross_validate, fit
from tests.conftest import ROOT

ROUTINE = "__asm_copy_to_user"
# an in-order profile to make the synthetic board of: u74's while it is
# timed in order (u74_2021 if it is kept under that name), else x60's
BASE = next(n for n in ("u74", "u74_2021", "x60")
            if (PROFILE_DIR / f"{n}.toml").exists() and load_profile(n).engine == "inorder")
# the synthetic board: that profile with these three changed
TRUTH = {("latency", "load_to_store"): 5, ("pipeline", "taken_bubble"): 2, ("cache", "miss_store"): 30}
FREE = "latency.load_to_store,pipeline.taken_bubble,cache.miss_store"
OVERHEAD = 12           # the synthetic benchmark loop's cycles per call
MODES = {"aligned": (0, 0), "co-aligned": (3, 3), "misaligned": (1, 0)}
SIZES = (16, 64, 256, 1024, 32768)


def u74_data() -> dict:
    return tomllib.loads((PROFILE_DIR / f"{BASE}.toml").read_text())


def synthetic_profile():
    data = u74_data()
    for (table, key), value in TRUTH.items():
        data[table][key] = value
    return parse_profile(data, "synthetic")


@pytest.fixture(scope="module")
def elf(tmp_path_factory):
    out = tmp_path_factory.mktemp("calibrate")
    return build_file(ROOT / "examples" / "kernel2021.copy", out).elf


def rows(elf, sizes=SIZES, modes=MODES, routine=ROUTINE) -> list[measurements.Row]:
    """The synthetic board's cycles per call for each cell."""
    bench = Bench(elf, synthetic_profile(), max(sizes))
    out = []
    for mode, (src, dst) in modes.items():
        for n in sizes:
            cycles = bench.run(Case(ROUTINE, n, src, dst)).cycles + OVERHEAD
            out.append(measurements.Row("synthetic", "u74", 1.0, routine, "examples/kernel2021.copy",
                                        mode, n, src, dst, "orbench", "warm", 5, float(cycles),
                                        "cycles_per_call", 0.002))
    return out


def write_csv(path: Path, rows_, **header) -> Path:
    head = {"board": "synthetic", "core": "u74", "clock_ghz": "1.0", "timer": "rdcycle",
            "emulated": "no", "tool": "tests/measure/test_calibrate.py", **header}
    path.write_text(measurements.write(measurements.Table(head, rows_, str(path))))
    return path


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_the_round_trip_recovers_the_synthetic_boards_parameters(elf, tmp_path):
    csv = write_csv(tmp_path / "board.csv", rows(elf))
    out = tmp_path / "fitted.toml"
    res = run("calibrate", csv, "--profile", BASE, "--routine", f"{ROUTINE}={elf}",
              "--free", FREE + ",latency.div", "--cv", "none", "-o", out, "--json")
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)["calibration"]
    for (table, key), want in TRUTH.items():
        assert abs(got["fitted"][f"{table}.{key}"] - want) <= 0.05 * want, got["fitted"]
    assert abs(got["overhead_cycles"]["orbench"] - OVERHEAD) < 0.5
    assert got["in_sample"]["mean_abs_error_pct"] < 0.5 < got["before"]["mean_abs_error_pct"]
    # no divide in a copy: the data cannot say anything of the divider
    assert got["unconstrained"] == ["latency.div"]
    # the written profile loads, with the fitted values and its record
    prof = load_profile(out)
    assert (prof.load_to_store, prof.taken_bubble, prof.miss_store) == (5, 2, 30)
    assert prof.lat_div == load_profile(BASE).lat_div
    text = out.read_text()
    assert text.count("# fitted: board.csv") == 3
    cal = tomllib.loads(text)["calibration"]
    assert len(cal["residuals"]["cells"]) == len(MODES) * len(SIZES)
    assert "in-sample mean |error|" in cal["error"] and cal["unconstrained"] == ["latency.div"]


def test_a_fit_without_the_data_for_a_parameter_does_not_predict_its_cells(elf):
    """Leave-one-band-out: only the large band (32 KiB, past the L1) sees
    store misses, so the fold without it cannot fit miss_store and misses
    those cells (and only those), while the other folds predict theirs."""
    table = measurements.Table({}, rows(elf), "synthetic.csv")
    data = u74_data()
    params = resolve_params(FREE.split(","), data, load_profile(BASE))
    cells = cells_of(table)
    problem = Problem(Model(data, "u74", {ROUTINE: elf}, max(SIZES)), cells, params, budget=300)
    best, _ = fit(problem)
    assert best.values == tuple(TRUTH.values()) and max(abs(e) for e in best.errors) < 1e-3
    folds = {f.held_out: f for f in cross_validate(problem, "band")}
    assert sum(len(f.cells) for f in folds.values()) == len(cells)
    large = folds["large (>= 1 KiB)"]
    # miss_store kept at the profile's value: nothing left to fit it to
    assert large.values[2] == load_profile(BASE).miss_store != TRUTH["cache", "miss_store"]
    missed = [abs(e) > 0.05 for c, e in zip(large.cells, large.errors)]
    assert missed == [c.size > 16384 for c in large.cells]
    for name in ("small (< 128 B)", "medium (128 B - 1 KiB)"):
        assert max(abs(e) for e in folds[name].errors) < 1e-3


def aligned_over_misaligned(elf, prof) -> float:
    """A figure of the kind the constraints carry: a throughput ratio at 1 KiB."""
    bench = Bench(elf, prof, 1024)
    return bench.run(Case(ROUTINE, 1024, 1, 0)).cycles / bench.run(Case(ROUTINE, 1024, 0, 0)).cycles


def test_the_constraints_fold_scores_figures_the_fit_never_saw(elf):
    """Fitted on the cells alone, the model is scored on the constraint: its
    own figure against the target, never trained on it."""
    ratio = functools.partial(aligned_over_misaligned, elf)
    truth = ratio(synthetic_profile())
    table = measurements.Table({}, rows(elf, sizes=(16, 256)), "synthetic.csv")
    data = u74_data()
    params = resolve_params(FREE.split(",")[:2], data, load_profile(BASE))   # in L1: no misses
    model = Model(data, "u74", {ROUTINE: elf}, 1024)
    off = Constraint("ratio, 10 % off", truth * 1.1, ratio, 3.0)
    problem = Problem(model, cells_of(table), params, constraints=[off], budget=150)
    (fold,) = cross_validate(problem, "constraints")
    assert fold.values == tuple(TRUTH.values())[:2]  # the cells alone fix both
    ((con, got),) = fold.predicted
    assert con is off and abs(got / truth - 1) < 1e-9
    assert abs(fold.errors[0] - (1 / 1.1 - 1)) < 1e-9
    assert cross_validate(replace(problem, constraints=()), "constraints") == []


def test_cross_validation_and_a_plot_are_reported(elf, tmp_path):
    csv = write_csv(tmp_path / "board.csv", rows(elf, sizes=(16, 256, 32768)))
    out, png = tmp_path / "fitted.toml", tmp_path / "fit.png"
    res = run("calibrate", csv, "--profile", BASE, "--routine", f"{ROUTINE}={elf}",
              "--free", FREE, "-o", out, "--plot", png, "--json")
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)["calibration"]
    (cv,) = got["cross_validation"]            # --cv auto: one routine, so one mode left out
    assert cv["kind"] == "leave-one-mode-out"
    assert {f["held_out"] for f in cv["folds"]} == set(MODES)
    errs = [c["error_pct"] for c in got["cells"]]
    assert len(errs) == 9 and cv["mean_abs_error_pct"] is not None
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cal = tomllib.loads(out.read_text())["calibration"]
    assert cal["cross_validated_error_pct"] == {"leave-one-mode-out": cv["mean_abs_error_pct"]}


def refused(tmp_path, csv, *extra):
    out = tmp_path / "never.toml"
    args = ["calibrate", csv, "--profile", BASE, "--free", "taken_bubble", "-o", out]
    res = run(*args, *extra)
    assert res.exit_code == 2, res.output
    assert not out.exists()
    return res.output


def test_emulated_times_are_refused(elf, tmp_path):
    csv = write_csv(tmp_path / "qemu.csv", rows(elf, sizes=(64,)), emulated="yes")
    said = refused(tmp_path, csv, "--routine", f"{ROUTINE}={elf}")
    assert "emulator" in said and f"{csv}:" in said


def test_a_malformed_csv_is_refused_with_its_line(elf, tmp_path):
    csv = write_csv(tmp_path / "bad.csv", rows(elf, sizes=(64,)))
    lines = csv.read_text().splitlines()
    lines[-1] = lines[-1] + ",extra"
    csv.write_text("\n".join(lines) + "\n")
    said = refused(tmp_path, csv, "--routine", f"{ROUTINE}={elf}")
    assert f"{csv}:{len(lines)}" in said


def test_values_without_units_are_refused(elf, tmp_path):
    csv = write_csv(tmp_path / "nounit.csv", rows(elf, sizes=(64,)))
    text = csv.read_text().replace(",unit,", ",what,")
    csv.write_text(text)
    said = refused(tmp_path, csv, "--routine", f"{ROUTINE}={elf}")
    assert "unit" in said


def test_a_routine_the_files_do_not_hold_is_refused(elf, tmp_path):
    memcpy_rows = [replace(r, routine="memcpy") for r in rows(elf, sizes=(64,))]
    csv = write_csv(tmp_path / "memcpy.csv", memcpy_rows)
    said = refused(tmp_path, csv, "--routine", f"memcpy={elf}")
    assert "no symbol memcpy" in said and f"{csv}:" in said


def test_a_routine_with_no_code_given_or_found_is_refused(elf, tmp_path):
    csv = write_csv(tmp_path / "board.csv", rows(elf, sizes=(64,)))
    said = refused(tmp_path, csv, "--kernel-tree", tmp_path)
    assert "examples/kernel2021.copy" in said and f"{csv}:" in said


def test_the_profile_text_keeps_its_comments_and_takes_the_fitted_values():
    from copygen.measure.calibrate_toml import fitted_text
    original = "\n".join([
        'name = "core"', "", "[calibration]", 'against = "old"', 'error = "old"', "",
        "# the pipeline", "[pipeline]", "issue_width = 2   # LLVM: two pipes",
        "                  # (a second comment line)", "mispredict = 3", "",
        "[latency]", "load = 3", "", "[calibration.residuals]", "cells = []", ""])
    text = fitted_text(original, [("pipeline", "issue_width", 3), ("pipeline", "taken_bubble", 1),
                                  ("store_buffer", "drain", 2)], "board.csv",
                       {"against": "board.csv", "error": "5 %", "fitted": {"pipeline.issue_width": 3}},
                       [{"size": 8, "error_pct": 1.5}], "residuals", name="fitted")
    data = tomllib.loads(text)
    assert data["name"] == "fitted"
    assert data["pipeline"] == {"issue_width": 3, "mispredict": 3, "taken_bubble": 1}
    assert data["store_buffer"] == {"drain": 2} and data["latency"] == {"load": 3}
    assert data["calibration"]["against"] == "board.csv"
    assert data["calibration"]["residuals"]["cells"] == [{"size": 8, "error_pct": 1.5}]
    lines = text.splitlines()
    width = next(ln for ln in lines if ln.startswith("issue_width"))
    assert width.index("#") == original.splitlines()[8].index("#")     # the comments' column kept
    assert "fitted: board.csv (start 2: LLVM: two pipes)" in width
    assert "# (a second comment line)" in text and "# the pipeline" in text
    assert text.count("[calibration]") == 1 and 'against = "old"' not in text
