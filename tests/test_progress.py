"""Progress where people wait: piped (stderr not a terminal), a long command
prints one line per stage on stderr and keeps stdout for its result."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from copygen.cli import main
from tests.conftest import ROOT

SOURCE = ROOT / "tests" / "asm" / "memset_bytes.S"


def _verify(tmp_path, *extra):
    return subprocess.run([sys.executable, "-m", "copygen", "verify", str(SOURCE), "--json",
                           "--workdir", str(tmp_path / "w"), "--proof-cache", str(tmp_path / "proofs"),
                           *extra], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_verify_piped_says_each_stage_of_each_routine_on_stderr(tmp_path):
    ran = _verify(tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["verdict"] == "proved"      # stdout: the envelope alone
    lines = ran.stderr.splitlines()
    assert lines[0] == f"verify: building {SOURCE}"
    assert "verify: memset: sample runs" in lines
    assert "verify: memset: induction (Houdini)" in lines
    assert lines[-1].startswith("verify: memset: proved (") and lines[-1].endswith(" s)")
    again = _verify(tmp_path)
    assert again.stderr.splitlines()[-1] == "verify: memset: proved (from the proof cache)"


@pytest.mark.slow
def test_tune_piped_says_each_stage_and_each_proof(tmp_path):
    """A tuning run's stages (evaluation, proofs) are one line each on
    stderr when piped, and each proof it starts says which point."""
    src = tmp_path / "t.copy"
    src.write_text("target u74 { xlen 64; misaligned slow }\n"
                   "clear_user k for u74 { small below 8; align dst; words unroll 2; tail bytes; "
                   "fault exact }\n"
                   "sweep s for k { words unroll [1, 2] }\n")
    ran = subprocess.run([sys.executable, "-m", "copygen", "tune", str(src), "--db",
                          str(tmp_path / "t.db"), "--top", "1", "-j", "1", "--workload", "small",
                          "--proof-cache", str(tmp_path / "proofs"), "--build-cache",
                          str(tmp_path / "cache"), "--json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["command"] == "tune"
    lines = ran.stderr.splitlines()
    assert "tune: tune s (2)" in lines and "tune: proving" in lines
    assert any(line.startswith("tune: proving words unroll") for line in lines), lines


def test_tune_piped_says_each_point_it_evaluates(tmp_path):
    """Piped, a tuning run's evaluation says each point as it is done (a
    run's stage line alone left a long sweep silent for minutes)."""
    src = tmp_path / "k.copy"
    src.write_text((ROOT / "examples" / "kernel2021.copy").read_text()
                   + "sweep s for kernel2021 { small below [71, 96] }\n")
    r = CliRunner().invoke(main, ["tune", str(src), "--db", str(tmp_path / "t.db"), "--top", "0",
                                  "--workload", "uniform:0-64", "--build-cache", str(tmp_path / "cache"),
                                  "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["command"] == "tune"
    lines = r.stderr.splitlines()
    assert lines.index("tune: tune s (2)") < lines.index("tune: tune s: 1 of 2 evaluated") \
        < lines.index("tune: tune s: 2 of 2 evaluated")


def test_a_long_piped_stage_says_its_count_every_twentieth(capsys):
    from copygen.commands_tune import PIPED_STEPS, _stage
    with _stage("tune big", 100) as step:
        for _ in range(100):
            step(1)
    said = [ln for ln in capsys.readouterr().err.splitlines() if ln.endswith(" evaluated")]
    assert len(said) == PIPED_STEPS and said[-1] == "tune: tune big: 100 of 100 evaluated"
