"""The kernel's own tests of the copy routines, run by the tree's kunit.py.

run_commit() checks one commit out (detached; the caller's checkout is
put back afterwards), builds a small kernel with the tree's
tools/testing/kunit/kunit.py and a kunitconfig of the usercopy, memcpy and
string suites, boots it in qemu-system-riscv64 and reads the KTAP results
(kunit.py --json).  With `vector` the same kernel is booted again with the
V extension on (`-cpu rv64,v=true`), so that __asm_copy_to_user takes the
vector path above riscv_v_usercopy_threshold and the scalar fallback below
it.  One build directory per tree is kept between runs, so a second
commit rebuilds only what differs.

A build that fails is a ToolError carrying the compiler's error lines
(exit 1); a missing qemu-system-riscv64, OpenSBI or kunit.py is a
ToolError naming the package.  Failing tests are results, not errors: the
caller decides.

Role: the test step of the real-kernel loop.  May import gen.toolchain,
copygen.errors, kernel.tree and the standard library.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from copygen.errors import CopygenError, ToolError
from copygen.gen.toolchain import cross_prefix, host_program, require_file, run_git, run_logged
from copygen.kernel.tree import cache_dir

KUNITCONFIG = """CONFIG_KUNIT=y
CONFIG_USERCOPY_KUNIT_TEST=y
CONFIG_MEMCPY_KUNIT_TEST=y
CONFIG_STRING_KUNIT_TEST=y
"""
SUITES = ("usercopy", "memcpy", "string")
OPENSBI = Path("/usr/share/qemu/opensbi-riscv64-generic-fw_dynamic.bin")
KUNIT = "tools/testing/kunit/kunit.py"
VECTOR_CPU = "-cpu rv64,v=true,vlen=128"
ELAPSED = re.compile(r"Elapsed time: ([\d.]+)s total, ([\d.]+)s configuring, ([\d.]+)s building, "
                     r"([\d.]+)s running")
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

    @property
    def ok(self) -> bool:
        return bool(self.suites) and all(s.passed == s.total for s in self.suites)

    def failed(self) -> list[str]:
        return [f"{s.name}.{t}" for s in self.suites for t in s.failed]


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


def _suites(doc: dict) -> list[Suite]:
    out = []
    for grp in doc.get("sub_groups", []):
        cases = grp.get("test_cases", [])
        failed = tuple(c["name"] for c in cases if c.get("status") not in ("PASS", "SKIP"))
        out.append(Suite(grp["name"], sum(c.get("status") == "PASS" for c in cases), len(cases), failed))
    return out


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


def errors(output: str) -> str:
    """The compiler's and make's error lines of a build's output."""
    lines = [ln for ln in output.splitlines() if ERROR_LINE.search(ln)]
    return "\n".join(lines[:40]) or "\n".join(output.splitlines()[-40:])


def _kunit(tree: Path, bdir: Path, sub: str, vector: bool, jobs: int, out: Path, tell,
           only: str | None = None) -> tuple:
    config = bdir.parent / "copygen.kunitconfig"
    config.write_text(KUNITCONFIG)
    args = [KUNIT, sub, "--arch=riscv", f"--cross_compile={cross_prefix()}",
            f"--kunitconfig={config}", f"--build_dir={bdir}", f"--json={out}", "--timeout=1200"]
    if sub == "run":
        args.append(f"--jobs={jobs}")
    if vector:
        args.append(f"--qemu_args={VECTOR_CPU}")
    if only:
        args.append(f"{only}.*")
    started = time.monotonic()
    r = run_logged("python3", args, "python3", cwd=tree, log=bdir.parent / f"{bdir.name}.{sub}.log",
                   on_line=lambda ln: tell(ln) if ln.startswith(("Building", "Starting", "Testing"))
                   else None)
    return r, time.monotonic() - started


def run_commit(tree: Path, commit: str, label: str, vector_too: bool = True, jobs: int = 2,
               tell=lambda msg: None, only: str | None = None) -> list[Run]:
    """Build and boot `commit` of `tree`; without and (vector_too) with V.
    `only`: run that suite alone (e.g. usercopy), a shorter boot."""
    tree = Path(tree)
    check_ready(tree)
    bdir = build_dir(tree)
    bdir.mkdir(parents=True, exist_ok=True)
    back = head_ref(tree)
    commit = run_git(["rev-parse", "--verify", f"{commit}^{{commit}}"], tree).stdout.strip()
    run_git(["checkout", "-q", "--detach", commit], tree)
    try:
        runs = [_one(tree, bdir, commit, label, False, jobs, tell, only)]
        if vector_too:
            runs.append(_one(tree, bdir, commit, label, True, jobs, tell, only))
    finally:
        run_git(["checkout", "-q", back], tree)
    return runs


def head_ref(tree: Path) -> str:
    """The branch HEAD is on (or its commit when detached), to go back to."""
    r = run_git(["symbolic-ref", "-q", "--short", "HEAD"], tree, check=False)
    return r.stdout.strip() if r.returncode == 0 else run_git(["rev-parse", "HEAD"], tree).stdout.strip()


def _one(tree: Path, bdir: Path, commit: str, label: str, vector: bool, jobs: int, tell,
         only: str | None = None) -> Run:
    out = bdir.parent / f"{bdir.name}.{label}{'.v' if vector else ''}.json"
    out.unlink(missing_ok=True)
    what = f"{label} ({commit[:12]}){' with V' if vector else ''}"
    tell(f"kunit: {'booting' if vector else 'building and booting'} {what}")
    r, seconds = _kunit(tree, bdir, "exec" if vector else "run", vector, jobs, out, tell, only)
    m = ELAPSED.search(r.stdout)
    build_s = float(m.group(3)) if m else 0.0
    if not out.is_file():
        if "Building KUnit Kernel" in r.stdout and "Starting KUnit Kernel" not in r.stdout:
            raise ToolError(f"the kernel at {what} does not build", detail=errors(r.stdout))
        raise ToolError(f"kunit.py gave no results for {what} (exit {r.returncode})",
                        detail="\n".join(r.stdout.splitlines()[-30:]))
    suites = _suites(json.loads(out.read_text()))
    if not suites:
        raise CopygenError(f"no KUnit suite ran at {what}", hint=f"see {bdir.parent}")
    run = Run(label, commit, vector, suites, build_s, seconds - build_s, r.stdout,
              vector_threshold(bdir) if vector else None)
    tell(f"kunit: {what}: " + ", ".join(f"{s.name} {s.passed}/{s.total}" for s in suites))
    return run
