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


def assert_exact_under_qemu(exe, cases) -> None:
    """Every case run by qemu-user through the harness `exe`: the exact
    return, the bytes before it copied, the rest untouched, SUM clear."""
    from copygen.mutate import oracle as qemu
    results = qemu.run_cases(exe, cases)
    assert len(results) == len(cases)
    for case, r in zip(cases, results):
        assert r.ret == case.exact_return() and r.prefix_ok and r.rest_untouched \
            and not r.sum_at_exit, case


def assert_proved(elf, symbol: str, kind: str) -> None:
    """Every clause of `symbol` proved for every n."""
    from copygen.verify.checks.prove import prove_routine
    rep = prove_routine(str(elf), symbol, kind)
    assert all(st == "proved" for st in rep.status.values()), rep.as_dict()


@pytest.fixture(scope="session")
def built_examples(tmp_path_factory):
    """Every example built (emitted, assembled, compiled, linked) once."""
    from copygen.gen.build import build_file
    out = tmp_path_factory.mktemp("built")
    return {p.stem: build_file(p, out) for p in EXAMPLES}


# files whose tests prove the same machine code run on one xdist worker,
# one after the other, so the later ones find those proofs in SHARED_PROOFS:
# test_patch's "before" proofs are test_kernel_layouts' layout fixtures and
# test_patch_speeds' mainline "before" proofs
SAME_WORKER = {"test_kernel_layouts.py": "kernel_layouts_then_patch",
               "test_patch.py": "kernel_layouts_then_patch",
               "test_patch_speeds.py": "kernel_layouts_then_patch"}
# rough seconds of the longest files, (tests not marked slow, tests marked
# slow): the fast loop's per-file seconds and the rest of the whole suite's
# (bench/suite/results/suite_time_fast.json and suite_time.json, two
# workers).  The groups start longest first, counting only the part the run
# selected, so that the two workers end together; a file not named here
# counts a second per test
FILE_SECONDS = {"test_vector_wide_proof.py": (0, 90), "test_verify_memmove.py": (11, 66),
                "test_verify.py": (8, 68), "test_tune.py": (25, 46),
                "test_emu_vs_qemu.py": (0, 61), "test_patch_vector.py": (15, 45),
                "test_patch.py": (1, 57), "test_mutate.py": (5, 49),
                "test_patch_speeds_string.py": (0, 51), "test_fault_agreement.py": (7, 41),
                "test_ends_pieces.py": (2, 43), "test_patch_speeds.py": (2, 40),
                "test_verdict.py": (5, 36), "test_patch_rules.py": (0, 36),
                "test_head_word.py": (1, 29), "test_clear_ladder.py": (2, 24),
                "test_vector_proof.py": (6, 18), "test_memset_asm.py": (3, 21),
                "test_align_overlap.py": (1, 22), "test_vector_clear_proof.py": (11, 11),
                "test_verify_summary.py": (1, 21), "test_last_word.py": (1, 21),
                "test_vector_kernel.py": (5, 15), "test_word_paired.py": (0, 18),
                "test_size_classes.py": (1, 17), "test_expect_hints.py": (0, 17),
                "test_inline_layout.py": (1, 15), "test_verify_nowrap.py": (6, 11),
                "test_reserved_registers.py": (7, 9), "test_vector_ff_vl.py": (1, 15),
                "test_short_bytes.py": (1, 14), "test_emu_vector_vs_qemu.py": (2, 12),
                "test_fault_restart.py": (1, 13), "test_kernel_layouts.py": (0, 14),
                "test_cli_edges.py": (8, 0), "test_properties.py": (0, 13),
                "test_memmove_entry.py": (2, 10), "test_ends_overlap.py": (1, 10),
                "test_oracle_examples.py": (11, 0), "test_bench_rank.py": (11, 0),
                "test_calibrate.py": (10, 0), "test_install.py": (3, 6),
                "test_fallthrough.py": (2, 7), "test_computed_jump.py": (0, 8),
                "test_vector_run.py": (7, 0)}


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


def group_seconds(nodes: list[tuple[str, bool]]) -> dict[str, float]:
    """Each group's rough seconds in a run of `nodes` (node id, marked
    slow): per file, FILE_SECONDS' part for the tests not marked slow if
    the run has any of them, and its slow part if it has any of those; a
    file not in FILE_SECONDS a second per test."""
    kinds: dict[str, set[bool]] = collections.defaultdict(set)
    count: collections.Counter = collections.Counter()
    for nodeid, slow in nodes:
        name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
        kinds[name].add(slow)
        count[name] += 1
    out: collections.Counter = collections.Counter()
    for name, marked in kinds.items():
        fast, slow = FILE_SECONDS.get(name, (None, None))
        out[SAME_WORKER.get(name, name)] += count[name] if fast is None else \
            fast * (False in marked) + slow * (True in marked)
    return dict(out)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Tests marked `kernel` build and boot a real Linux tree for tens of
    minutes: they run only when the -m expression names them (`python3 -m
    pytest -m kernel`), never in the default run.  The groups run longest
    first (group_seconds), each file's tests in their own order."""
    if "kernel" not in (config.option.markexpr or ""):
        keep = [it for it in items if it.get_closest_marker("kernel") is None]
        if len(keep) != len(items):
            config.hook.pytest_deselected(items=[it for it in items if it not in keep])
            items[:] = keep
    group = {it: group_of(it.nodeid) for it in items}
    seconds = group_seconds([(it.nodeid, it.get_closest_marker("slow") is not None) for it in items])
    first = {g: i for i, g in reversed(list(enumerate(group[it] for it in items)))}
    items.sort(key=lambda it: (-seconds[group[it]], first[group[it]]))


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
