"""copygen tune --measured / tune show --measured: a board's figures of the
baselines beside the model's, the ranking left the model's; a file that
measures none of them, or was emulated, is refused before anything runs."""
from __future__ import annotations

import json

from click.testing import CliRunner

from copygen.cli import main
from copygen.measure.measurements import mode_of
from copygen.measure.rank import plan
from copygen.measure.workload import make_workload
from tests.conftest import ROOT
from tests.tune.test_tune import FOUR

WORKLOAD = "uniform:8-64"
K2021 = str(ROOT / "examples" / "kernel2021.copy")
HEAD = """# copygen-measurements 1
# board: testboard
# emulated: {emulated}
# uname: Linux 6.6.20 riscv64
# date: 2026-11-30
board,core,clock_ghz,routine,source_file,mode,size,src_off,dst_off,method,state,reps,value,unit,spread
"""


def _board(tmp_path, source="kernel2021.copy", emulated="no", every=1):
    """Rows of `source`'s copy_to_user for every `every`-th case of the
    workload WORKLOAD, each 100 cycles per call."""
    cases = [c for c, _ in plan("__asm_copy_to_user", make_workload(WORKLOAD, "spec"))][::every]
    rows = "".join(f"testboard,u74,1.5,__asm_copy_to_user,{source},{mode_of(c.src_align, c.dst_align)},"
                   f"{c.size},{c.src_align},{c.dst_align},isolated,warm,9,100,cycles_per_call,0.01\n"
                   for c in cases)
    path = tmp_path / "board.csv"
    path.write_text(HEAD.format(emulated=emulated) + rows)
    return str(path)


def _tune(tmp_path, *extra):
    src = tmp_path / "t.copy"
    src.write_text(FOUR)
    return CliRunner().invoke(main, ["tune", str(src), "--db", str(tmp_path / "t.db"), "--top", "0",
                                     "--workload", WORKLOAD, "--baseline", K2021, "--json",
                                     "--build-cache", str(tmp_path / "cache"),
                                     "--proof-cache", str(tmp_path / "proofs"), *extra])


def test_a_measured_baseline_shows_the_boards_expectation_beside_the_models(tmp_path):
    r = _tune(tmp_path, "--measured", _board(tmp_path))
    assert r.exit_code == 0, (r.output, r.stderr)
    out = json.loads(r.stdout)
    got = out["measured"][K2021]
    assert got["share"] == 1.0 and got["expected_cycles"] == 100.0
    assert got["modelled_cycles"] == out["baselines"][K2021]["expected"] != 100.0
    assert got["on"].startswith("measured on testboard")
    shown = CliRunner().invoke(main, ["tune", "show", str(tmp_path / "t.db"), "--measured",
                                      _board(tmp_path, every=2)])
    assert shown.exit_code == 0, shown.output
    line = next(ln for ln in shown.stdout.splitlines() if ln.startswith(K2021))
    assert "measured on testboard" in line and "the rest modelled only" in line


def test_a_file_measuring_none_of_them_is_refused_before_the_run(tmp_path):
    r = _tune(tmp_path, "--measured", _board(tmp_path, source="other.copy"))
    assert r.exit_code == 2
    err = json.loads(r.stdout)["error"]
    assert "no row measures a baseline" in err["message"] and "kernel2021.copy" in err["hint"]


def test_an_emulated_file_is_refused_before_anything_runs(tmp_path):
    r = _tune(tmp_path, "--measured", _board(tmp_path, emulated="yes"))
    assert r.exit_code == 2 and "emulated" in r.stdout
    assert not (tmp_path / "t.db").exists()
