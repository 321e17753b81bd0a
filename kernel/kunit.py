"""The kernel's own tests of the copy routines, and copygen's fault suite,
run by the tree's kunit.py.

run_commit() checks one commit out (detached; the caller's checkout is
put back afterwards), builds a small kernel with the tree's
tools/testing/kunit/kunit.py and a kunitconfig of the usercopy, memcpy and
string suites, boots it in qemu-system-riscv64 and reads the KTAP results
(kunit.py --json).  With `fault_suite` (the default) what is checked out
is the commit with copygen's fault suite on top (kernel.faultpatch.on_top:
a commit of its own, the same for the same commit), and the kunitconfig
enables it too; its first failing call and its digests are read from the
raw KTAP (kernel.faultsuite.parse_log).  With `vector` the same kernel is booted again with the
V extension on (`-cpu rv64,v=true`), so that __asm_copy_to_user takes the
vector path above riscv_v_usercopy_threshold and the scalar fallback below
it.  With `force` (a two-body patch, docs/speeds.md) the forced-speed suite
(kernel.speedsuite) goes on top too, and the one kernel is booted once per
speed, the probe's verdict forced on its command line; each Run says what
was forced and which body ran, of each routine with two (the user copy's
scalar copies, memcpy's and memmove's).  One build directory per tree is kept
between runs, so a second commit rebuilds only what differs.

A build that fails is a ToolError carrying the compiler's error lines
(exit 1); a missing qemu-system-riscv64, OpenSBI or kunit.py is a
ToolError naming the package.  Failing tests are results, not errors: the
caller decides.

Role: the test step of the real-kernel loop.  May import gen.toolchain,
copygen.errors, kernel.tree, kernel.faultsuite, kernel.faultpatch,
kernel.speedsuite and the standard library.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from copygen.errors import CopygenError, ToolError
from copygen.gen.toolchain import cross_prefix, host_program, require_file, run_git, run_logged
from copygen.kernel import faultpatch, faultsuite, speedsuite
from copygen.kernel.tree import cache_dir

# The kernel's own suites, and two options every build has: CONFIG_JUMP_LABEL,
# without which uaccess.S's branch_if_misaligned_fast emits nothing and a
# two-body patch (copygen patch --fast-body) boots its slow copy alone; and
# CONFIG_KPROBES, with which the forced boots' suite (kernel.speedsuite)
# counts which copy ran.  Both are in every build so that one build
# directory serves every run: toggling either rebuilds most of the kernel.
STOCK_KUNITCONFIG = """CONFIG_KUNIT=y
CONFIG_USERCOPY_KUNIT_TEST=y
CONFIG_MEMCPY_KUNIT_TEST=y
CONFIG_STRING_KUNIT_TEST=y
CONFIG_JUMP_LABEL=y
CONFIG_KPROBES=y
"""
KUNITCONFIG = STOCK_KUNITCONFIG + f"{faultsuite.CONFIG}=y\n"
SUITES = ("usercopy", "memcpy", "string", faultsuite.SUITE)
OPENSBI = Path("/usr/share/qemu/opensbi-riscv64-generic-fw_dynamic.bin")
KUNIT = "tools/testing/kunit/kunit.py"
VECTOR_CPU = "-cpu rv64,v=true,vlen=128"
ELAPSED = re.compile(r"Elapsed time: ([\d.]+)s total, ([\d.]+)s configuring, ([\d.]+)s building, "
                     r"([\d.]+)s running")
SUITE_START = re.compile(r"^\[(\d\d):(\d\d):(\d\d)\] =+ (\w+) \(\d+ subtests\) =+$", re.M)
SUITE_END = re.compile(r"^\[(\d\d):(\d\d):(\d\d)\] =+ \[[A-Z]+\] (\w+) =+$", re.M)
ERROR_LINE = re.compile(r"([Ee]rror:|Error \d|\*\*\* \[|undefined reference|multiple definition)")


@dataclass(frozen=True)
class Suite:
    name: str
    passed: int
    total: int
    failed: tuple[str, ...] = ()


@dataclass
class Run:
    """One boot of one commit's kernel."""

    label: str               # what the caller calls the commit: base, patched, ...
    commit: str
    vector: bool
    suites: list[Suite] = field(default_factory=list)
    build_seconds: float = 0.0
    run_seconds: float = 0.0
    log: str = ""
    vector_threshold: int | None = None   # bytes; the build's RISCV_ISA_V_UCOPY_THRESHOLD
    tested: str = ""         # the commit booted: `commit` with the fault suite on top, or itself
    suite_seconds: dict = field(default_factory=dict)   # suite -> seconds it ran (kunit.py's clock)
    fault: dict = field(default_factory=dict)   # fault suite: test -> {calls, digest, first}
    forced: str = ""         # the probe's verdict forced on the command line: fast | slow | ""
    speeds: dict = field(default_factory=dict)  # forced-speed suite: speedsuite.parse_log

    @property
    def ok(self) -> bool:
        return bool(self.suites) and not self.failed() and all(s.passed == s.total for s in self.suites)

    def failed(self) -> list[str]:
        out = [f"{s.name}.{t}" for s in self.suites for t in s.failed]
        if self.forced and self.speeds.get("ran") != self.forced and not any(
                s.name == speedsuite.SUITE and s.failed for s in self.suites):
            # the suite's own checks did not run, or said nothing of the copies
            out.append(f"{speedsuite.SUITE} (forced {self.forced}: "
                       f"{speedsuite.describe(self.speeds)})")
        return out


def first_failures(runs: list[Run], names) -> list[str]:
    """For each failing fault-suite test in `names`, one line naming its
    first failing call (from the runs' KTAP)."""
    prefix = faultsuite.SUITE + "."
    out = []
    for r in runs:
        for name in names:
            case = r.fault.get(name[len(prefix):]) if name.startswith(prefix) else None
            if case and not case["ok"] and case.get("first"):
                out.append(f"  {name}{' (V)' if r.vector else ''}: {case['failed']} of "
                           f"{case['calls']} calls fail, the first: {case['first']}")
    return out


def build_dir(tree: Path) -> Path:
    """The one build directory kept for this tree (outside it)."""
    return cache_dir() / "build" / Path(tree).resolve().name


def check_ready(tree: Path) -> None:
    """Everything a run needs is there, or a ToolError naming the package."""
    if not (Path(tree) / KUNIT).is_file():
        raise ToolError(f"{Path(tree) / KUNIT} not found",
                        hint="--kernel-tree must be a whole kernel tree (linux-source-6.12 has it)")
    host_program("qemu-system-riscv64", "qemu-system-misc")
    require_file(OPENSBI, "qemu-system-data", "OpenSBI (qemu-system-riscv64's firmware)")
    for tool in ("flex", "bison", "bc"):
        host_program(tool, tool)


def _cases(grp: dict, prefix: str = "") -> list[tuple[str, str]]:
    """(name, status) of a group's test cases; a parameterised case is a
    group of its own, its parameters named case.parameter."""
    out = [(prefix + c["name"], c.get("status")) for c in grp.get("test_cases", [])]
    for sub in grp.get("sub_groups", []):
        out += _cases(sub, f"{prefix}{sub['name']}.")
    return out


def _suites(doc: dict) -> list[Suite]:
    out = []
    for grp in doc.get("sub_groups", []):
        cases = _cases(grp)
        failed = tuple(n for n, st in cases if st not in ("PASS", "SKIP"))
        out.append(Suite(grp["name"], sum(st == "PASS" for _, st in cases), len(cases), failed))
    return out


def check_tree(tree: Path, rev: str = "HEAD", fault_suite: bool = True) -> None:
    """A CopygenError (exit 2) naming what the tree lacks for a run: the
    tree's kunit.py, and with `fault_suite` what the suite needs."""
    if not (Path(tree) / KUNIT).is_file():
        raise CopygenError(f"{Path(tree) / KUNIT} not found: the tree has no KUnit",
                           hint="--kernel-tree must be a whole kernel tree (linux-source-6.12 has it)")
    if fault_suite:
        faultsuite.check(Path(tree), rev)


def check_revision(tree: Path, rev: str, fault_suite: bool = True, force: bool = False) -> str:
    """The commit `rev` names, once it is known that a run can use it
    (check_tree, and speedsuite.check when the probe's verdict is to be
    forced): a CopygenError (exit 2) otherwise, nothing written."""
    r = run_git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], Path(tree), check=False)
    if r.returncode != 0:
        raise CopygenError(f"{rev} is not a commit of {tree}", hint="give a branch, a tag or a hash")
    commit = r.stdout.strip()
    check_tree(tree, commit, fault_suite)
    if force:
        speedsuite.check(Path(tree), commit)
    return commit


def vector_threshold(bdir: Path) -> int | None:
    """The size from which the kernel's __asm_copy_to_user takes the vector
    path (CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD of the build), or None when the
    kernel has no vector user copy."""
    config = Path(bdir) / ".config"
    text = config.read_text() if config.is_file() else ""
    if "CONFIG_RISCV_ISA_V=y" not in text:
        return None
    m = re.search(r"^CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD=(\d+)", text, re.M)
    return int(m.group(1)) if m else None


def suite_seconds(output: str) -> dict[str, int]:
    """How long each suite ran, from the timestamps of kunit.py's lines
    opening and closing it (whole seconds)."""
    def at(m) -> int:
        return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
    started = {m.group(4): at(m) for m in SUITE_START.finditer(output)}
    return {m.group(4): (at(m) - started[m.group(4)]) % 86400
            for m in SUITE_END.finditer(output) if m.group(4) in started}


def errors(output: str) -> str:
    """The compiler's and make's error lines of a build's output."""
    lines = [ln for ln in output.splitlines() if ERROR_LINE.search(ln)]
    return "\n".join(lines[:40]) or "\n".join(output.splitlines()[-40:])


def kunitconfig(fault_suite: bool = True, speeds: bool = False) -> str:
    """The kunitconfig of a run: the stock suites, the fault suite's and
    the forced-speed suite's symbols when those are on top."""
    return ((KUNITCONFIG if fault_suite else STOCK_KUNITCONFIG)
            + (f"{speedsuite.CONFIG}=y\n" if speeds else ""))


def config_file(bdir: Path, fault_suite: bool = True, speeds: bool = False) -> Path:
    """The kunitconfig of a build directory, written beside it (one per
    build directory: two trees' runs never share it)."""
    config = bdir.parent / f"{bdir.name}.kunitconfig"
    config.write_text(kunitconfig(fault_suite, speeds))
    return config


def _kunit(tree: Path, bdir: Path, sub: str, vector: bool, jobs: int, out: Path, tell,
           only: str | None = None, fault_suite: bool = True, force: str = "") -> tuple:
    config = config_file(bdir, fault_suite, bool(force))
    args = [KUNIT, sub, "--arch=riscv", f"--cross_compile={cross_prefix()}",
            f"--kunitconfig={config}", f"--build_dir={bdir}", f"--json={out}", "--timeout=1200"]
    if sub == "run":
        args.append(f"--jobs={jobs}")
    if vector:
        args.append(f"--qemu_args={VECTOR_CPU}")
    if force:
        args.append(f"--kernel_args={speedsuite.PARAM}={force}")
    if only:
        args.append(f"{only}.*")
    started = time.monotonic()
    r = run_logged("python3", args, "python3", cwd=tree, log=bdir.parent / f"{bdir.name}.{sub}.log",
                   on_line=lambda ln: tell(ln) if ln.startswith(("Building", "Starting", "Testing"))
                   else None)
    return r, time.monotonic() - started


@dataclass(frozen=True)
class _Boot:
    """What every boot of one run_commit() shares."""

    tree: Path
    bdir: Path
    commit: str          # the commit asked for
    tested: str          # what is checked out: the commit, with the fault suite on top
    label: str
    jobs: int
    only: str | None
    fault_suite: bool
    counted: tuple[str, ...] = ()   # forced boots: the routines whose bodies the suite counts


def forced_speeds(force: str | None) -> tuple[str, ...]:
    """The speeds an option value asks to force: fast, slow, both (slow
    first: the copy the kernel runs before its probe) or none."""
    if not force:
        return ()
    if force == "both":
        return speedsuite.SPEEDS
    if force not in speedsuite.SPEEDS:
        raise CopygenError(f"cannot force misaligned access `{force}`", hint="fast, slow or both")
    return (force,)


def run_commit(tree: Path, commit: str, label: str, vector_too: bool = True, jobs: int = 2,
               tell=lambda msg: None, only: str | None = None, fault_suite: bool = True,
               force: tuple[str, ...] = ()) -> list[Run]:
    """Build and boot `commit` of `tree`; without and (vector_too) with V.
    `only`: run the suites matching that glob alone (e.g. usercopy), a
    shorter boot.  `fault_suite`: with copygen's fault suite added to the
    commit (a tree that cannot build it is refused, exit 2, untouched).
    `force`: the speeds (fast, slow) to force the misaligned-access probe's
    verdict to, one boot each (without and with V), with the forced-speed
    suite on top, counting the bodies of each routine that has two; a
    commit that cannot honour it (no probe key, one scalar copy and one
    memcpy) is refused, exit 2, untouched."""
    tree = Path(tree)
    commit = check_revision(tree, commit, fault_suite, bool(force))
    check_ready(tree)
    bdir = build_dir(tree)
    bdir.mkdir(parents=True, exist_ok=True)
    tested = faultpatch.on_top(tree, commit) if fault_suite else commit
    if force:
        tested = speedsuite.on_top(tree, tested)
    boot = _Boot(tree, bdir, commit, tested, label, jobs, only, fault_suite,
                 speedsuite.find(tree, commit).routines if force else ())
    back = head_ref(tree)
    plan = [(speed, v) for speed in (force or ("",)) for v in ((False, True) if vector_too else (False,))]
    run_git(["checkout", "-q", "--detach", tested], tree)
    try:
        # the first boot builds (kunit.py run); the others boot that kernel (exec)
        runs = [_one(boot, v, tell, speed, build=i == 0) for i, (speed, v) in enumerate(plan)]
    finally:
        run_git(["checkout", "-q", back], tree)
    return runs


def head_ref(tree: Path) -> str:
    """The branch HEAD is on (or its commit when detached), to go back to."""
    r = run_git(["symbolic-ref", "-q", "--short", "HEAD"], tree, check=False)
    return r.stdout.strip() if r.returncode == 0 else run_git(["rev-parse", "HEAD"], tree).stdout.strip()


def _one(b: _Boot, vector: bool, tell, force: str = "", build: bool = True) -> Run:
    # the label may be a revision such as copygen/x: a file name of its own
    name = re.sub(r"[^\w.+-]", "_", b.label)
    out = b.bdir.parent / f"{b.bdir.name}.{name}{'.' + force if force else ''}{'.v' if vector else ''}.json"
    out.unlink(missing_ok=True)
    what = (f"{b.label} ({b.commit[:12]}){' with V' if vector else ''}"
            + (f", misaligned access forced {force}" if force else ""))
    tell(f"kunit: {'building and booting' if build else 'booting'} {what}")
    r, seconds = _kunit(b.tree, b.bdir, "run" if build else "exec", vector, b.jobs, out, tell,
                        b.only, b.fault_suite, force)
    m = ELAPSED.search(r.stdout)
    build_s = float(m.group(3)) if m else 0.0
    if not out.is_file():
        if "Building KUnit Kernel" in r.stdout and "Starting KUnit Kernel" not in r.stdout:
            raise ToolError(f"the kernel at {what} does not build", detail=errors(r.stdout))
        raise ToolError(f"kunit.py gave no results for {what} (exit {r.returncode})",
                        detail="\n".join(r.stdout.splitlines()[-30:]))
    suites = _suites(json.loads(out.read_text()))
    if not suites:
        raise CopygenError(f"no KUnit suite ran at {what}", hint=f"see {b.bdir.parent}")
    raw = b.bdir / "test.log"
    log = raw.read_text(errors="replace") if raw.is_file() else ""
    run = Run(b.label, b.commit, vector, suites, build_s, seconds - build_s, r.stdout,
              vector_threshold(b.bdir) if vector else None, b.tested, suite_seconds(r.stdout),
              faultsuite.parse_log(log), force,
              speedsuite.parse_log(log, b.counted) if force else {})
    tell(f"kunit: {what}: " + ", ".join(f"{s.name} {s.passed}/{s.total}" for s in suites))
    if force:
        tell(f"kunit: {what}: {speedsuite.describe(run.speeds)}")
    return run
