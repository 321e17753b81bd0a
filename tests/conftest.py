"""Shared fixtures: the examples, a built copy of each, the qemu harness."""
from __future__ import annotations

import collections
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.copy"))
# one proof cache for the whole run, shared by the xdist workers (they see
# the same run id): tests that prove the same machine code (a kernel layout
# fixture, then the same file as a patch's "before") prove it once; the
# cache is keyed by the code and the prover's own sources, and its entries
# are written whole (rename), so workers may race on one.  The run is
# named once, in the environment, by the first process to load this file
# (xdist's controller, or the only process): the workers, this file loaded
# again as tests.conftest, and a pytest run inside a test see that name;
# the process that named the run removes the store when it ends
_OWNER = "COPYGEN_TEST_RUN" not in os.environ
_RUN = os.environ.setdefault("COPYGEN_TEST_RUN", uuid.uuid4().hex)
SHARED_PROOFS = Path(tempfile.gettempdir()) / f"copygen-test-proofs-{_RUN}"
# and one store of solver answers (verify.solver.answers): a query another test
# already asked, to the character, is answered as the solver answered it
os.environ.setdefault("COPYGEN_ANSWERS", str(SHARED_PROOFS / "answers"))
# with an xdist worker per core, a proof's queries stay in its worker's
# process (verify.solver.parallel's default is a process per core): forked
# provers would only compete with the other worker for the same cores and
# cost CPU of their own (CHANGELOG.md, "The test suite", has the
# figures); tests that mean to spread a proof say jobs=2
_WORKERS = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
if _WORKERS.isdigit() and int(_WORKERS) >= (os.cpu_count() or 1):
    os.environ.setdefault("COPYGEN_JOBS", "1")


def build_text(tmp_path_factory, text: str, name: str):
    """A strategy given as text, built in a directory of its own."""
    from copygen.gen.build import build_file
    out = tmp_path_factory.mktemp(name)
    src = out / f"{name}.copy"
    src.write_text(text)
    return build_file(src, out)


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
# rough seconds of the longest groups (the sum of their tests' --durations
# in one whole run, two workers on a loaded machine): the longest go first,
# so that the two workers end together; a group not named here counts a
# second per test
GROUP_SECONDS = {"kernel_layouts_then_patch": 1000, "test_verify.py": 730,
                 "test_verdict.py": 390, "test_tune.py": 380, "test_vector_kernel.py": 350,
                 "test_size_classes.py": 240, "test_emu_vs_qemu.py": 200,
                 "test_ends_pieces.py": 200, "test_vector_proof.py": 180,
                 "test_patch_vector.py": 130, "test_verify_memmove.py": 130,
                 "test_verify_summary.py": 150,
                 "test_inline_layout.py": 130, "test_mutate.py": 100,
                 "test_align_overlap.py": 80, "test_expect_hints.py": 70,
                 "test_word_paired.py": 70, "test_install.py": 65, "test_properties.py": 50,
                 "test_verify_nowrap.py": 40, "test_json_envelope.py": 40,
                 "test_progress.py": 35, "test_computed_jump.py": 30, "test_memset_asm.py": 200,
                 "test_ends_overlap.py": 110, "test_vector_wide_proof.py": 130,
                 "test_fault_restart.py": 60, "test_vector_ff_vl.py": 20, "test_head_word.py": 50,
                 "test_short_bytes.py": 50, "test_memmove_entry.py": 45,
                 "test_fallthrough.py": 40}


def group_of(nodeid: str) -> str:
    """The xdist group of a test: its file's name, or the group SAME_WORKER
    names."""
    name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    return SAME_WORKER.get(name, name)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` with each file one group (SAME_WORKER joins some),
    the groups handed out in collection order.  The group is told from the
    node id itself: xdist's own loadgroup reads an `@group` suffix that
    pytest >= 9.2 no longer lets it add, and then spreads a file's tests
    over both workers, making its module fixtures twice."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    config.option.loadscopereorder = False
    return FileGroups(config, log)


def pytest_sessionfinish(session):
    """The run's proof store goes when the run that named it ends: a run
    leaves nothing in the temporary directory."""
    if _OWNER and not hasattr(session.config, "workerinput"):
        shutil.rmtree(SHARED_PROOFS, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The groups longest first (GROUP_SECONDS), each file's tests in their
    own order.  Tests marked `kernel` build and boot a real Linux tree for
    tens of minutes: they run only when the -m expression names them
    (`python3 -m pytest -m kernel`), never in the default run."""
    group = {it: group_of(it.nodeid) for it in items}
    tests = collections.Counter(group.values())
    first = {g: i for i, g in reversed(list(enumerate(group[it] for it in items)))}
    items.sort(key=lambda it: (-GROUP_SECONDS.get(group[it], tests[group[it]]), first[group[it]]))
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


_STARTED = time.time()


def command_defaults() -> list[str]:
    """Where the commands write by default: the relative defaults of their
    path options, read off the command line itself (relative to the
    directory a command runs in: the checkout, in a test).  Tests give
    their commands a tmp_path instead, so a run leaves in the checkout only
    the import graph that tests/test_layout.py draws for people to read."""
    import click
    from copygen.cli import main

    def walk(cmd):
        if isinstance(cmd, click.Group):
            for sub in cmd.commands.values():
                yield from walk(sub)
            return
        for p in cmd.params:
            if isinstance(p.type, click.Path) and isinstance(p.default, str) and p.default:
                yield p.default
    return sorted(set(walk(main)))


def written_during_run(dirs: list[str], root: Path = ROOT, since: float = _STARTED) -> list[str]:
    """The `dirs` under `root` that hold anything made or changed since `since`."""
    out = []
    for rel in dirs:
        d = root / rel
        if d.exists() and any(p.stat().st_mtime >= since for p in (d, *d.rglob("*"))):
            out.append(rel)
    return out


def pytest_terminal_summary(terminalreporter):
    over = sorted(((s, n) for n, s in _seconds.items() if s > UNMARKED_SLOW_SECONDS), reverse=True)
    if over:
        terminalreporter.section(f"tests not marked slow that took over {UNMARKED_SLOW_SECONDS:g} s")
        for seconds, nodeid in over:
            terminalreporter.line(f"{seconds:7.1f} s  {nodeid}")
        terminalreporter.line("mark them @pytest.mark.slow, or make them faster")
    written = written_during_run(command_defaults())
    if written:
        terminalreporter.section("written into the checkout during the run")
        terminalreporter.line(", ".join(written) + ": a command run with its default output "
                              "directory; give it one under tmp_path")
