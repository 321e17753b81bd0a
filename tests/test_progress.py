"""Progress where people wait: piped (stderr not a terminal), a long command
prints one line per stage on stderr and keeps stdout for its result."""
from __future__ import annotations

import json
import subprocess
import sys

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
