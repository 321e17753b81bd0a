"""Tables that say where their numbers come from (measure.measured and
`copygen bench --measured`): a cell a board measured shows the board's
figure, marked, with the board named; every other cell stays modelled; a
file of other code or an emulated run is not taken for this file's."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.measure import measured
from tests.conftest import ROOT

K2021 = str(ROOT / "examples" / "kernel2021.copy")
HEAD = """# copygen-measurements 1
# board: testboard
# emulated: {emulated}
# uname: Linux 6.6.20 riscv64
# date: 2026-11-30
# cpuinfo: uarch : sifive,u74-mc
board,core,clock_ghz,routine,source_file,mode,size,src_off,dst_off,method,state,reps,value,unit,spread
"""
ROWS = """testboard,u74,1.5,__asm_copy_to_user,examples/kernel2021.copy,aligned,64,0,0,orbench,warm,9,44,cycles_per_call,0.02
testboard,u74,1.5,__asm_copy_to_user,examples/kernel2021.copy,aligned,64,0,0,isolated,warm,9,40,cycles_per_call,0.01
testboard,u74,1.5,__asm_copy_to_user,examples/kernel2021.copy,misaligned,64,1,0,isolated,cold,9,200,ns_per_call,
testboard,u74,1.5,__asm_copy_to_user,other/uaccess.S,aligned,8,0,0,isolated,warm,9,7,cycles_per_call,
"""


def _file(tmp_path, emulated="no", rows=ROWS):
    path = tmp_path / "m.csv"
    path.write_text(HEAD.format(emulated=emulated) + rows)
    return str(path)


def _bench(tmp_path, *args):
    return CliRunner().invoke(main, ["bench", K2021, "--sizes", "8,64", "--align", "0:0,1:0",
                                     "--routine", "copy_to_user", "--build-cache", str(tmp_path / "c"),
                                     *args])


def test_only_this_sources_cells_are_taken_the_isolated_row_first(tmp_path):
    cells = measured.load([_file(tmp_path)], K2021)
    assert cells.get("__asm_copy_to_user", 64, 0, 0).cycles == 40          # isolated beats orbench
    assert cells.get("__asm_copy_to_user", 64, 64 + 1, 0) is None           # measured cold only
    assert cells.get("__asm_copy_to_user", 64, 1, 0, warm=False).cycles == pytest.approx(300)
    assert cells.get("__asm_copy_to_user", 8, 0, 0) is None                 # other/uaccess.S's
    assert cells.unused == 1
    assert cells.provenance() == ("measured on testboard (sifive,u74-mc, Linux 6.6.20 riscv64, "
                                  "2026-11-30)")


def test_bench_marks_the_measured_cell_and_names_the_board(tmp_path):
    r = _bench(tmp_path, "--measured", _file(tmp_path))
    assert r.exit_code == 0, r.output
    assert "m 40 (1.60)" in r.output
    assert "m: 1 of 4 cells measured on testboard" in r.output and "the rest modelled" in r.output
    plain = _bench(tmp_path)
    assert "m 40" not in plain.output and "measured" not in plain.output


def test_bench_json_keeps_both_kinds_apart(tmp_path):
    r = _bench(tmp_path, "--measured", _file(tmp_path), "--json")
    out = json.loads(r.output)
    assert out["measured_on"].startswith("measured on testboard")
    by = {(s["size"], s["src_align"]): s for s in out["samples"]}
    cell = by[64, 0]
    assert cell["source"] == "measured" and cell["measured_cycles"] == 40
    plain = json.loads(_bench(tmp_path, "--json").output)
    modelled = {(s["size"], s["src_align"]): s["cycles"] for s in plain["samples"]}
    assert {k: s["cycles"] for k, s in by.items()} == modelled     # the profile's figures kept as they are
    assert all(s["source"] == "modelled" and s["measured_cycles"] is None
               for k, s in by.items() if k != (64, 0))


@pytest.mark.parametrize("make, words", [
    (lambda p: _file(p, emulated="yes"), "under an emulator"),
    (lambda p: _file(p, rows="x,y\n"), "m.csv:8:1: error: 2 cells"),
    (lambda p: str(p / "missing.csv"), "missing.csv: error: measurements: no such file"),
])
def test_bad_measurements_are_refused_before_anything_runs(tmp_path, make, words):
    r = _bench(tmp_path, "--measured", make(tmp_path))
    assert r.exit_code == 2 and words in r.output, r.output
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").iterdir())


def test_rank_says_how_much_of_the_workload_a_board_measured(tmp_path):
    rows = ("testboard,u74,1.5,__asm_copy_to_user,examples/kernel2021.copy,aligned,8,0,0,isolated,"
            "warm,9,20,cycles_per_call,0.01\n")
    path = _file(tmp_path, rows=rows)
    pre = str(ROOT / "examples" / "pre2021.copy")
    args = ["rank", K2021, pre, "--routine", "copy_to_user", "--align-mix", "aligned",
            "--build-cache", str(tmp_path / "c"), "--measured", path]
    whole = CliRunner().invoke(main, args + ["--workload", "uniform:8-8"])
    assert whole.exit_code == 0, whole.output
    assert "100% of the workload's weight measured on testboard" in whole.output
    assert "expected 20.0 cycles per call as measured" in whole.output
    assert "pre2021.copy __asm_copy_to_user: no case of the workload measured" in whole.output
    part = json.loads(CliRunner().invoke(main, args + ["--workload", "uniform:8-9", "--json"]).output)
    got = {r["source"]: r["measured"] for r in part["ranking"]["copy_to_user"]}
    assert got[K2021]["share"] == pytest.approx(0.5) and got[K2021]["expected_cycles"] is None
    assert got[pre]["share"] == 0
