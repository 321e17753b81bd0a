"""bench/tune/tune_goals.py --routine: one routine measured, its entry of the
goals JSON replaced, every other routine's entry kept as it was, and the
count of goal cells not met taken over all of them."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

from bench.tune import tune_goals

TUNED = str(ROOT / "examples" / "u74tuned.copy")
BASE = str(ROOT / "examples" / "kernel2021.copy")


@pytest.fixture
def two_sizes(monkeypatch):
    monkeypatch.setattr(tune_goals, "GRID_SIZES", (16, 64))


def _kept_entry() -> dict:
    """A copy routine's entry as a full run writes it: 3 cells missed."""
    return {"command": "python -m bench.tune.tune_goals (full run)",
            "cycles": {"aligned": {"16": 30.0}},
            "never_slower": {BASE: [{"class": "aligned", "size": 16}] * 2},
            "bound": [{"met": True}, {"met": False}]}


def test_one_routine_replaces_its_entry_and_keeps_the_others(two_sizes, tmp_path, capsys):
    out = tmp_path / "goals.json"
    out.write_text(json.dumps({"tuned": TUNED, "profile": "u74", "command": "full",
                               "routines": {"__asm_copy_to_user": _kept_entry(),
                                            "__clear_user": {"stale": True}},
                               "failing_cells": 99}))
    argv = [TUNED, "--profile", "u74", "--baseline", BASE, "--routine", "__clear_user",
            "--out", str(out)]
    assert tune_goals.main(argv) == 0
    got = json.loads(out.read_text())
    assert got["command"] == "full"                               # the full run's, kept
    assert got["routines"]["__asm_copy_to_user"] == _kept_entry()
    clear = got["routines"]["__clear_user"]
    assert "stale" not in clear and clear["command"].endswith("--out " + str(out))
    assert sorted(clear["cycles"]) == [f"dst+{d}" for d in range(8)]
    assert sorted(map(int, clear["cycles"]["dst+1"])) == [16, 64]
    assert list(clear["never_slower"]) == [BASE]
    assert got["failing_cells"] == 3 + tune_goals.failing_cells(clear)
    assert "memcpy" not in capsys.readouterr().out                 # nothing else measured


def test_a_json_of_another_strategy_is_not_merged_into(two_sizes, tmp_path):
    out = tmp_path / "goals.json"
    out.write_text(json.dumps({"tuned": BASE, "profile": "u74", "routines": {}}))
    with pytest.raises(SystemExit, match="give --out a file of its own"):
        tune_goals.main([TUNED, "--routine", "__clear_user", "--out", str(out)])


def test_a_kernels_own_uaccess_s_is_a_baseline(monkeypatch, tmp_path):
    """A kernel's uaccess.S, assembled as Kbuild would, is a baseline like a
    .copy: an aligned 8 B clear stores one word there, where the 2021
    clear (measured here as the tuned file) takes the byte loop, and the
    JSON names the cell under the file's name."""
    monkeypatch.setattr(tune_goals, "GRID_SIZES", (8, 64))
    kernel = str(ROOT / "tests" / "kernel_style" / "mainline_layout.S")
    pre2021 = str(ROOT / "examples" / "pre2021.copy")
    out = tmp_path / "goals.json"
    argv = [BASE, "--profile", "u74", "--baseline", pre2021, "--baseline", kernel,
            "--routine", "__clear_user", "--out", str(out)]
    assert tune_goals.main(argv) == 0
    clear = json.loads(out.read_text())["routines"]["__clear_user"]
    assert list(clear["never_slower"]) == [pre2021, kernel]
    theirs = tune_goals.grid(tune_goals._baseline_elf(Path(kernel), tmp_path / "k"), "u74",
                             ("__clear_user",))["__clear_user"]
    slower = {(c["class"], c["size"]) for c in clear["never_slower"][kernel]}
    assert slower == {(c, n) for c, row in theirs.items() for n, t in row.items()
                      if clear["cycles"][c][str(n)] > t}
    assert ("dst+0", 8) in slower
    with pytest.raises(SystemExit, match="not found"):
        tune_goals.main([TUNED, "--baseline", str(tmp_path / "uaccess.S"),
                         "--routine", "__clear_user", "--out", str(out)])


def test_u74tuned_is_nowhere_slower_than_the_recorded_linux_612_cells(built_examples):
    """Issue 36's goal 1 against a real kernel, under the u74_spec profile the
    routines were tuned on: bench/tune/results/tune_goals_u74_spec.json
    records the cells of Linux 6.12's own uaccess.S (assembled from the
    Debian tree by the real toolchain; the tree is not here in CI).  The
    u74tuned routines as built now must be at or below each of them, so a
    change to the lowering that loses a cell to 6.12 fails here."""
    recorded = json.loads((ROOT / "bench" / "tune" / "results" / "tune_goals_u74_spec.json").read_text())
    ours = tune_goals.grid(built_examples["u74tuned"].elf, "u74_spec",
                           ("__asm_copy_to_user", "__clear_user"))
    for routine, cells in ours.items():
        bases = recorded["routines"][routine]["baselines"]
        tree = next(v for k, v in bases.items() if k.endswith("arch/riscv/lib/uaccess.S"))
        slower = [(c, n, cells[c][int(n)], t) for c, row in tree.items() for n, t in row.items()
                  if cells[c][int(n)] > t + 0.01]      # t is rounded to 0.01
        assert slower == [], (routine, slower)
