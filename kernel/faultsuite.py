"""The fault-offset KUnit suite: copygen's own test of the user-copy
routines' fault return, as files of a kernel tree.

render() gives the suite's C file (templates/usercopy_fault_kunit.c.j2)
and files() the whole change to a tree at a revision: the C file and a
Makefile and Kconfig.debug of their own in arch/riscv/lib/tests/, wired
into arch/riscv/lib/Makefile (`obj-y += tests/`) and
arch/riscv/Kconfig.debug (`source ...`) the way arch/riscv/kernel/tests/
is.  Every change is idempotent: a tree that has the suite already keeps
its wiring lines once.  check() refuses a tree the suite cannot build in
(no KUnit, no kunit_vm_mmap, not a RISC-V tree), naming what is missing,
before anything is written.

The suite lives in arch/riscv/lib/tests/ (KUnit's style: tests/ beside
the code under test) because its sizes come from the RISC-V routines (the
scalar copy's 64-byte block, the vector path's threshold) and it goes to
the RISC-V maintainers with the uaccess.S changes it tests.

Role: what the suite is, as text.  May import jinja2, gen.resources,
copygen.errors, gen.toolchain and the standard library.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2

from copygen.errors import CopygenError
from copygen.gen.resources import templates_dir
from copygen.gen.toolchain import run_git

SUITE = "usercopy_fault"
CONFIG = "CONFIG_RISCV_USERCOPY_FAULT_KUNIT_TEST"
TESTS_DIR = "arch/riscv/lib/tests"
SOURCE = f"{TESTS_DIR}/usercopy_fault_kunit.c"
LIB_MAKEFILE = "arch/riscv/lib/Makefile"
ARCH_KCONFIG = "arch/riscv/Kconfig.debug"
LIB_WIRING = "obj-y\t\t\t+= tests/\n"
KCONFIG_WIRING = f'source "{TESTS_DIR}/Kconfig.debug"\n'
SPDX = "# SPDX-License-Identifier: GPL-2.0-only\n"
# what the suite needs of the tree: path -> (text that must be in it, what it is)
NEEDS = {
    "include/kunit/test.h": (None, "KUnit (include/kunit/test.h)"),
    "lib/kunit/user_alloc.c": ("kunit_vm_mmap", "kunit_vm_mmap() (lib/kunit/user_alloc.c, Linux 6.10+)"),
    LIB_MAKEFILE: (None, "arch/riscv/lib/Makefile"),
    ARCH_KCONFIG: (None, "arch/riscv/Kconfig.debug"),
}


@dataclass(frozen=True)
class Params:
    """What the suite covers; the C file and the model of its calls share it."""

    dense: int = 192          # every size 0..dense: three times the largest block (64 bytes)
    tail: int = 64            # above dense, cut points within `tail` of the end too
    guard: int = 16           # bytes checked on either side of the destination
    sizes: tuple[int, ...] = (256, 511, 1024, 4103)   # beyond: the vector path, page crossings

    def all_sizes(self) -> list[int]:
        return list(range(self.dense + 1)) + list(self.sizes)


DEFAULT = Params()


def template(name: str) -> jinja2.Template:
    """One of the suite's templates (templates/usercopy_fault_kunit.*.j2)."""
    return _env().get_template(name)


@functools.lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(templates_dir()), trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True,
                              undefined=jinja2.StrictUndefined)


def classes() -> list[tuple[int, int]]:
    """(user offset, kernel offset) mod 8 of the copy cases, in KTAP order."""
    return [(u, k) for u in range(8) for k in range(8)]


def render(p: Params = DEFAULT) -> str:
    """The suite's C file."""
    rows = [", ".join(f"{{ {u}, {k} }}" for k in range(8)) + "," for u in range(8)]
    clear = ", ".join(f"{{ {u}, 0 }}" for u in range(8)) + ","
    return template("usercopy_fault_kunit.c.j2").render(
        dense=p.dense, tail=p.tail, guard=p.guard, sizes=list(p.sizes), class_rows=rows,
        clear_row=clear, suite=SUITE)


def _snippet(name: str, p: Params) -> str:
    return template(name).render(config=CONFIG[len("CONFIG_"):],
                                            object=Path(SOURCE).stem + ".o", dense=p.dense)


def _with(text: str | None, line: str) -> str:
    """`text` with `line` appended, unless it holds it already."""
    text = text or ""
    if line.split() in (ln.split() for ln in text.splitlines()):   # as make reads it: spacing aside
        return text
    return text + ("" if not text or text.endswith("\n") else "\n") + line


def show(tree: Path, rev: str, rel: str) -> str | None:
    """A file's text at `rev`, or None when it has none."""
    r = run_git(["show", f"{rev}:{rel}"], Path(tree), check=False)
    return r.stdout if r.returncode == 0 else None


def check(tree: Path, rev: str) -> None:
    """The suite can be built at `rev`, or a CopygenError (exit 2) naming
    everything missing."""
    missing = []
    for rel, (needle, what) in NEEDS.items():
        text = show(tree, rev, rel)
        if text is None or (needle and needle not in text):
            missing.append(what)
    if missing:
        raise CopygenError(f"{tree} at {rev[:12]} cannot build the fault suite: no "
                           + ", no ".join(missing),
                           hint="the suite needs a RISC-V Linux tree with KUnit and kunit_vm_mmap() "
                                "(6.10 or later); --no-fault-suite runs the stock suites only")


def files(tree: Path, rev: str, p: Params = DEFAULT) -> dict[str, str]:
    """Every file the suite adds or changes at `rev`, with its new text
    (only those that differ)."""
    check(tree, rev)
    make, kconf = f"{TESTS_DIR}/Makefile", f"{TESTS_DIR}/Kconfig.debug"
    old = {rel: show(tree, rev, rel) for rel in (SOURCE, make, kconf, LIB_MAKEFILE, ARCH_KCONFIG)}
    new = {SOURCE: render(p), LIB_MAKEFILE: _with(old[LIB_MAKEFILE], LIB_WIRING),
           ARCH_KCONFIG: _with(old[ARCH_KCONFIG], KCONFIG_WIRING)}
    rule = _snippet("usercopy_fault_kunit.Makefile.j2", p)
    new[make] = SPDX + rule if old[make] is None else _with(old[make], rule)
    entry = _snippet("usercopy_fault_kunit.Kconfig.j2", p)
    if old[kconf] is None:
        new[kconf] = SPDX + entry
    elif f"config {CONFIG[len('CONFIG_'):]}" not in old[kconf]:
        new[kconf] = old[kconf] + "\n" + entry
    return {rel: text for rel, text in new.items() if text != old.get(rel)}


def cut_wanted(p: Params, n: int, cut: int) -> bool:
    """uf_cut_wanted(): every cut point up to `dense`, above it only near both ends."""
    return n <= p.dense or cut <= p.dense or cut + p.tail >= n


def calls(p: Params, user: int) -> list[tuple[int, str, int]]:
    """(n, where, cut) of one test case's calls, in the suite's order
    (uf_size()): where is whole, after (cut bytes mapped, then the
    unmapped page) or before (the first cut bytes on the unmapped page)."""
    first = (8 - user) & 7
    out = []
    for n in p.all_sizes():
        out.append((n, "whole", 0))
        out += [(n, "after", c) for c in range(first, n + 1, 8) if cut_wanted(p, n, c)]
        out += [(n, "before", c) for c in range(first or 8, n + 1, 8) if cut_wanted(p, n, c)]
    return out


ROUTINES = ("copy_to_user", "copy_from_user", "clear_user")


def call_counts(p: Params = DEFAULT) -> dict[str, int]:
    """How many calls of each routine one boot of the suite makes."""
    per_user = [len(calls(p, u)) for u in range(8)]
    return {r: sum(per_user) * (1 if r == "clear_user" else 8) for r in ROUTINES}


CASES = {f"{r}_test": r for r in ROUTINES}
_SUBTEST = re.compile(r"# Subtest: (\w+)\s*$")
_RESULT = re.compile(r"\b(ok|not ok) \d+ (.+?)\s*(?:# SKIP.*)?$")
_DIGEST = re.compile(r"# \w+: (\w+): (\d+) calls, digest ([0-9a-f]{16})")
_FIRST = re.compile(r"(\d+) of (\d+) calls break the rule; the first: (.+?)\s*$")
_CRASH = re.compile(r"# \w+: (try faulted|try timed out|test case timed out)")
_OOPS = re.compile(r"(Unable to handle kernel [^\n]*?|epc : \S+)\s*$")


def parse_log(text: str) -> dict[str, dict]:
    """The suite's test cases in a raw KTAP log (kunit.py's test.log):
    case.parameter -> {ok, calls, digest, failed, first}, where `first`
    is the first failing call as the suite names it, or, for a case whose
    thread died (an oops), how it died and the oops's lines."""
    out: dict[str, dict] = {}
    case, pending = None, {}
    for line in text.splitlines():
        m = _SUBTEST.search(line)
        if m:
            case = m.group(1) if m.group(1) in CASES else None
            pending = {}
            continue
        if case is None:
            continue
        if m := _DIGEST.search(line):
            pending.update(calls=int(m.group(2)), digest=m.group(3))
        elif m := _FIRST.search(line):
            pending.update(failed=int(m.group(1)), first=m.group(3))
        elif m := _OOPS.search(line):
            pending.setdefault("oops", []).append(m.group(1))
        elif m := _CRASH.search(line):
            pending["first"] = f"the test case died ({m.group(1)}): " + "; ".join(pending.get("oops", []))
        elif m := _RESULT.search(line):
            if m.group(2) == case:
                case = None
                continue
            pending.pop("oops", None)
            out[f"{case}.{m.group(2)}"] = {"ok": m.group(1) == "ok", "calls": 0, "digest": "",
                                            "failed": 0, "first": "", **pending}
            pending = {}
    return out
