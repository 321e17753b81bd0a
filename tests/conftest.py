"""Shared fixtures: the examples, a built copy of each, the qemu harness."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.copy"))
# one proof cache for the whole run, shared by the xdist workers (they see
# the same run id): tests that prove the same machine code (a kernel layout
# fixture, then the same file as a patch's "before") prove it once; the
# cache is keyed by the code and the prover's own sources, and its entries
# are written whole (rename), so workers may race on one
_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID")
SHARED_PROOFS = (Path(tempfile.gettempdir()) / f"copygen-test-proofs-{_RUN}" if _RUN
                 else Path(tempfile.mkdtemp(prefix="copygen-test-proofs-")))


@pytest.fixture(scope="session")
def built_examples(tmp_path_factory):
    """Every example built (emitted, assembled, compiled, linked) once."""
    from copygen.gen.build import build_file
    out = tmp_path_factory.mktemp("built")
    return {p.stem: build_file(p, out) for p in EXAMPLES}


# files whose tests prove the same machine code run on one xdist worker,
# one after the other, so the later ones find those proofs in SHARED_PROOFS:
# test_patch's "before" proofs are test_kernel_layouts' layout fixtures
SAME_WORKER = {"test_kernel_layouts.py": "kernel_layouts_then_patch",
               "test_patch.py": "kernel_layouts_then_patch"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Each file is one xdist group (`--dist loadgroup`: a file's module
    fixtures are made once), SAME_WORKER joins some files into one.
    Tests marked `kernel` build and boot a real Linux tree for tens of
    minutes: they run only when the -m expression names them
    (`python3 -m pytest -m kernel`), never in the default run."""
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group(SAME_WORKER.get(name, name)))
    if "kernel" in (config.option.markexpr or ""):
        return
    keep = [it for it in items if it.get_closest_marker("kernel") is None]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[it for it in items if it not in keep])
        items[:] = keep


# a test not marked slow that takes longer than this is named in the run's
# summary: a report, not a failure (timings on a shared machine are noisy),
# so that `-m "not slow"` stays a fast loop
UNMARKED_SLOW_SECONDS = float(os.environ.get("COPYGEN_UNMARKED_SLOW_SECONDS", "20"))
_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """Setup, call and teardown time of each test not marked slow (the
    reports of xdist's workers arrive here too)."""
    if "slow" not in report.keywords:
        nodeid = report.nodeid.split("@", 1)[0]
        _seconds[nodeid] = _seconds.get(nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    over = sorted(((s, n) for n, s in _seconds.items() if s > UNMARKED_SLOW_SECONDS), reverse=True)
    if not over:
        return
    terminalreporter.section(f"tests not marked slow that took over {UNMARKED_SLOW_SECONDS:g} s")
    for seconds, nodeid in over:
        terminalreporter.line(f"{seconds:7.1f} s  {nodeid}")
    terminalreporter.line("mark them @pytest.mark.slow, or make them faster")
