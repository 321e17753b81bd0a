"""`pytest -m "not slow"` stays a fast loop: the run's summary names every
test not marked slow that took longer than UNMARKED_SLOW_SECONDS
(tests/conftest.py), over xdist's workers too, and a run keeps out of
the checkout: the summary names the commands' default output
directories that something wrote into during the run."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

SAMPLE = '''
import os
import time
import pytest

def test_fills_the_run_store():
    from conftest import SHARED_PROOFS
    SHARED_PROOFS.mkdir(parents=True, exist_ok=True)
    (SHARED_PROOFS / os.environ.get("PYTEST_XDIST_WORKER", "main")).write_text("proofs")

def test_quick():
    pass

def test_writes_where_a_command_would_by_default():
    from conftest import ROOT
    (ROOT / "build" / "cache").mkdir(parents=True, exist_ok=True)
    (ROOT / "build" / "cache" / "entry").write_text("built")

def test_sleeps_unmarked():
    time.sleep(0.6)

@pytest.mark.slow
def test_sleeps_marked():
    time.sleep(0.6)
'''


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




@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """One `pytest -n 2 --dist loadgroup` run, with tests/conftest.py, over
    SAMPLE and two copies of GROUPED (one run: each costs seconds of
    start-up), in a temporary directory of its own."""
    d = tmp_path_factory.mktemp("sample")
    shutil.copy(ROOT / "tests" / "conftest.py", d / "conftest.py")
    (d / "test_sample.py").write_text(SAMPLE)
    for name in ("test_one.py", "test_two.py"):
        (d / name).write_text(GROUPED)
    (d / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: long\n")
    (d / "tmp").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("COPYGEN_TEST_RUN", "COPYGEN_ANSWERS")}
    env.update(COPYGEN_UNMARKED_SLOW_SECONDS="0.5", MADE_LOG=str(d / "made.log"), TMPDIR=str(d / "tmp"))
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
                        "-p", "no:cacheprovider", str(d)],
                       cwd=d, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return d, r


def test_the_summary_names_unmarked_slow_tests(sample_run):
    _, r = sample_run
    summary = r.stdout.split("tests not marked slow that took over 0.5 s", 1)[1]
    assert "test_sample.py::test_sleeps_unmarked" in summary
    assert "test_sleeps_marked" not in summary and "test_quick" not in summary
    assert "test_one.py" not in summary


def test_each_file_runs_on_one_worker_and_makes_its_fixtures_once(sample_run):
    """`--dist loadgroup` (pyproject.toml) with tests/conftest.py's groups:
    a file's tests all go to one worker, so a module fixture is made once."""
    d, r = sample_run
    workers: dict[str, set] = {}
    for worker, name in re.findall(r"^\[(gw\d+)\] \[\s*\d+%\] PASSED (\S+?)::", r.stdout, re.M):
        workers.setdefault(name, set()).add(worker)
    assert sorted(workers) == ["test_one.py", "test_sample.py", "test_two.py"], r.stdout
    assert all(len(w) == 1 for w in workers.values()), workers
    assert sorted((d / "made.log").read_text().split()) == ["test_one", "test_two"]


def test_the_summary_names_what_the_run_wrote_into_the_checkout(sample_run):
    """tests/conftest.py's ROOT is the sample directory's parent here."""
    _, r = sample_run
    summary = r.stdout.split("written into the checkout during the run", 1)[1]
    assert summary.split("\n")[1].startswith("build/cache: a command run with its default")


def test_nothing_written_before_the_run_counts(tmp_path):
    from tests.conftest import command_defaults, written_during_run
    assert {"build/cache", "build/proofs", "patches"} <= set(command_defaults())
    (tmp_path / "build" / "proofs").mkdir(parents=True)
    (tmp_path / "patches").mkdir()
    dirs = command_defaults()
    assert written_during_run(dirs, tmp_path, time.time() + 5) == []
    assert written_during_run(dirs, tmp_path, time.time() - 5) == ["build/proofs", "patches"]


def test_a_run_leaves_no_proof_store_behind(sample_run):
    """The workers fill the store the controller named; the controller
    removes it when the run ends."""
    d, r = sample_run
    assert "PASSED test_sample.py::test_fills_the_run_store" in r.stdout
    assert not list((d / "tmp").glob("copygen-test-proofs-*"))


def test_groups_weigh_what_the_run_selected(monkeypatch):
    """A file's fast-loop seconds count when the run has its tests not
    marked slow, its slow seconds when it has its slow ones (`-m "not
    slow"`, `-m slow`, the whole suite); SAME_WORKER's files add up in their
    group, and a file without figures counts a second a test."""
    from tests import conftest
    monkeypatch.setattr(conftest, "FILE_SECONDS", {"test_a.py": (10, 300), "test_b.py": (50, 0),
                                                   "test_patch.py": (5, 60)})
    monkeypatch.setattr(conftest, "SAME_WORKER", {"test_patch.py": "patch", "test_c.py": "patch"})
    nodes = [("tests/x/test_a.py::f", False), ("tests/x/test_a.py::s", True),
             ("tests/x/test_b.py::f", False), ("tests/y/test_c.py::f", False),
             ("tests/y/test_c.py::g", False), ("tests/y/test_patch.py::s", True),
             ("tests/y/test_d.py::f", False)]
    assert conftest.group_seconds(nodes) == {"test_a.py": 310, "test_b.py": 50, "patch": 62,
                                             "test_d.py": 1}
    assert conftest.group_seconds([n for n in nodes if not n[1]]) == \
        {"test_a.py": 10, "test_b.py": 50, "patch": 2, "test_d.py": 1}
    assert conftest.group_seconds([n for n in nodes if n[1]]) == {"test_a.py": 300, "patch": 60}
