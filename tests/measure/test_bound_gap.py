"""bench/calibration/bound_gap.py: every retired instruction's cycles, on the in-order
model (split by cause) and on an out-of-order profile (one column, the
retire time each adds), summing to the bench's own count."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize("profile, strategy, ooo_engine", [("u74_spec", "u74tuned", False),
                                                           ("u74", "u74tuned", True),
                                                           ("c910", "c910tuned", True)])
def test_the_trace_sums_to_the_bench_cycles(profile, strategy, ooo_engine, tmp_path):
    out = tmp_path / "gap.json"
    r = subprocess.run([sys.executable, "-m", "bench.calibration.bound_gap",
                        str(ROOT / "examples" / f"{strategy}.copy"), "--profile", profile,
                        "--routine", "__clear_user", "--case", "64:0:0", "--case", "16:0:1",
                        "--trace", "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    cases = json.loads(out.read_text())["cases"]
    assert [c["size"] for c in cases] == [64, 16]
    for case in cases:
        rows = case["rows"]
        assert sum(row["cycles"] for row in rows) + 1 == case["cycles"]
        ooo = sum(row["ooo"] for row in rows)
        assert ooo == (sum(row["cycles"] for row in rows) if ooo_engine else 0)
        split = sum(row[c] for row in rows for c in ("issue", "load_to_use", "alu", "mispredict",
                                                     "serial", "dynamic", "drain", "load_to_store"))
        assert split == (0 if ooo_engine else ooo + sum(row["cycles"] for row in rows))
    assert "sd zero, 0(a0)" in r.stdout
