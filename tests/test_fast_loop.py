"""`pytest -m "not slow"` stays a fast loop: the run's summary names every
test not marked slow that took longer than UNMARKED_SLOW_SECONDS
(tests/conftest.py), over xdist's workers too."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from tests.conftest import ROOT

SAMPLE = '''
import time
import pytest

def test_quick():
    pass

def test_sleeps_unmarked():
    time.sleep(0.6)

@pytest.mark.slow
def test_sleeps_marked():
    time.sleep(0.6)
'''


def test_the_summary_names_unmarked_slow_tests(tmp_path):
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: long\n")
    env = {**os.environ, "COPYGEN_UNMARKED_SLOW_SECONDS": "0.5"}
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", str(tmp_path)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = r.stdout.split("tests not marked slow that took over 0.5 s", 1)[1]
    assert "test_sample.py::test_sleeps_unmarked" in summary
    assert "test_sleeps_marked" not in summary and "test_quick" not in summary


GROUPED = '''
import os
import pytest

@pytest.fixture(scope="module")
def made(tmp_path_factory):
    with open(os.environ["MADE_LOG"], "a") as f:
        f.write(__name__ + "\\n")

@pytest.mark.parametrize("i", range(6))
def test_uses_the_module_fixture(made, i):
    pass

@pytest.mark.slow
def test_marked(made):
    pass
'''


def test_each_file_runs_on_one_worker_and_makes_its_fixtures_once(tmp_path):
    """`--dist loadgroup` (pyproject.toml) with tests/conftest.py's groups:
    a file's tests all go to one worker, so a module fixture is made once."""
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    for name in ("test_one.py", "test_two.py"):
        (tmp_path / name).write_text(GROUPED)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: long\n")
    env = {**os.environ, "MADE_LOG": str(tmp_path / "made.log")}
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
                        "-p", "no:cacheprovider", str(tmp_path)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    workers: dict[str, set] = {}
    for worker, name in re.findall(r"^\[(gw\d+)\] \[\s*\d+%\] PASSED (\S+?)::", r.stdout, re.M):
        workers.setdefault(name, set()).add(worker)
    assert sorted(workers) == ["test_one.py", "test_two.py"], r.stdout
    assert all(len(w) == 1 for w in workers.values()), workers
    assert sorted((tmp_path / "made.log").read_text().split()) == ["test_one", "test_two"]
