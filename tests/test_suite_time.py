"""bench/suite/suite_time.py: a pytest run's durations summed per file, the
slowest steps first, the summary line's count and wall time."""
from __future__ import annotations

import json
import sys

from tests.conftest import ROOT

from bench.suite import suite_time

LOG = """bringing up nodes...
============================= slowest durations ==============================
12.50s call     tests/test_a.py::test_one[x]
3.00s setup    tests/test_b.py::test_two
2.25s call     tests/test_a.py::test_three
0.01s teardown tests/test_b.py::test_two
(40 durations < 0.005s hidden.  Use -vv to show these durations.)
1510 passed, 2 deselected in 1459.93s (0:24:19)
"""


def test_a_log_is_summed_per_file_and_sorted(tmp_path):
    log, out = tmp_path / "run.log", tmp_path / "t.json"
    log.write_text(LOG)
    assert suite_time.main(["--from-log", str(log), "--out", str(out), "--note", "idle"]) == 0
    got = json.loads(out.read_text())
    assert (got["passed"], got["wall_seconds"], got["note"]) == (1510, 1459.93, "idle")
    assert got["per_file"] == {"tests/test_a.py": 14.75, "tests/test_b.py": 3.01}
    assert list(got["per_file"]) == ["tests/test_a.py", "tests/test_b.py"]
    assert got["worker_seconds"] == 17.76
    assert [s["seconds"] for s in got["slowest"]] == [12.5, 3.0, 2.25, 0.01]
    assert got["slowest"][0]["test"] == "tests/test_a.py::test_one[x]"


def test_a_log_without_a_summary_is_refused(tmp_path, capsys):
    log = tmp_path / "run.log"
    log.write_text("12.50s call     tests/test_a.py::test_one\n")
    assert suite_time.main(["--from-log", str(log), "--out", str(tmp_path / "t.json")]) == 2
    assert "no pytest summary line" in capsys.readouterr().err
    assert not (tmp_path / "t.json").exists()


def test_yardsticks_timed_around_a_logged_run_are_kept(tmp_path):
    log, out = tmp_path / "run.log", tmp_path / "t.json"
    log.write_text(LOG)
    assert suite_time.main(["--from-log", str(log), "--out", str(out),
                            "--yardstick", "17.2", "--yardstick", "24"]) == 0
    stick = json.loads(out.read_text())["yardstick"]
    assert stick["cpu_seconds"] == [17.2, 24.0] and "copygen verify" in stick["command"]
    assert json.loads(out.read_text())["cost_in_yardsticks"] == round(17.76 / 20.6, 1)


def test_the_fast_loop_is_written_beside_the_whole_suite():
    results = ROOT / "bench" / "suite" / "results"
    assert suite_time.default_out([]) == results / "suite_time.json"
    assert suite_time.default_out(["-m", "slow"]) == results / "suite_time.json"
    assert suite_time.default_out(["-m", "not slow"]) == results / "suite_time_fast.json"
    assert suite_time.default_out(["-x", "-mnot  slow"]) == results / "suite_time_fast.json"
