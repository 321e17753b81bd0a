"""The forced-speed KUnit suite: boot a two-body patch (`copygen patch
--fast-body`, docs/speeds.md) with the misaligned-access probe's verdict
forced fast or slow, and count which body runs: the user copy's two
scalar copies (uaccess.S), and memcpy's and memmove's two bodies
(memcpy.S, `--routine string`), whichever the revision has.

Linux has no boot parameter for the probe's result, so a test-only
commit on top of the tested one adds a suite (templates/
usercopy_speeds_kunit.c.j2, in arch/riscv/kernel/tests/ beside the tree's
other riscv tests, under a Kconfig symbol of its own) that takes one:
`usercopy_speeds_kunit.force=fast|slow` sets fast_unaligned_access_speed_key
at late_initcall, after the probe and before any KUnit suite, so every
suite of that boot (the kernel's usercopy suite, the fault suite) runs
the bodies asked for (the kernel's memcpy and string suites too).  The
suite checks the key is as forced and, one case a routine, counts with
kprobes which body its own calls entered.  One build serves both speeds:
the parameter is on the kernel's command line.

check() refuses, before anything is written, a revision that cannot
honour the option: no probe key (or one true by default), a uaccess.S
with one scalar copy and a memcpy.S with one memcpy (no static branch to
force), no KUnit or kunit_vm_mmap(), no arch/riscv/kernel/tests/.
parse_log() reads a boot's raw KTAP: the probe's own verdict, what was
forced, and the counts of each routine.

Role: the suite as text and as a commit.  May import kernel.faultpatch,
kernel.faultsuite, gen.resources, gen.toolchain, copygen.errors, jinja2
and the standard library.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from copygen.errors import CopygenError
from copygen.kernel import faultpatch, faultsuite

SUITE = "usercopy_speeds"
CONFIG = "CONFIG_RISCV_USERCOPY_SPEEDS_KUNIT_TEST"
TESTS_DIR = "arch/riscv/kernel/tests"
SOURCE = f"{TESTS_DIR}/usercopy_speeds_kunit.c"
KCONFIG = f"{TESTS_DIR}/Kconfig.debug"
MAKEFILE = f"{TESTS_DIR}/Makefile"
UACCESS = "arch/riscv/lib/uaccess.S"
MEMCPY = "arch/riscv/lib/memcpy.S"          # a --routine string patch's two bodies
STRING_ROUTINES = {"__memcpy": "memcpy", "__memmove": "memmove"}   # the slow body: the routine
PROBE = "arch/riscv/kernel/unaligned_access_speed.c"
KEY = "fast_unaligned_access_speed_key"
PARAM = "usercopy_speeds_kunit.force"    # KBUILD_MODNAME of the object, then the parameter
SPEEDS = ("slow", "fast")
MAX_N = 160                               # every size 0..MAX_N: below every vector threshold
MACRO = "branch_if_misaligned_fast"
KEY_DEFINED = re.compile(r"^\s*DEFINE_STATIC_KEY_(FALSE|TRUE)\(\s*" + KEY + r"\s*\)", re.M)
SITE = re.compile(r"^\s*" + MACRO + r"\s+(\w+)\s*$")
FUNC = re.compile(r"^\s*SYM_FUNC_START\w*\(\s*(\w+)\s*\)")
ENDIF = re.compile(r"^endif\b")
SUBJECT = "riscv: test only: force the misaligned access speed, count the copies"
KCONFIG_ENTRY = f"""config {CONFIG[len("CONFIG_"):]}
\tbool "KUnit test of the user copy picked by misaligned access speed" if !KUNIT_ALL_TESTS
\tdepends on KUNIT && KPROBES && JUMP_LABEL && RISCV_PROBE_UNALIGNED_ACCESS && MMU
\tdefault KUNIT_ALL_TESTS
\thelp
\t  Test only.  {PARAM}=fast or =slow on the command line
\t  sets {KEY} before KUnit runs; the
\t  suite checks it and counts with kprobes which body its calls
\t  enter: the scalar copies of arch/riscv/lib/uaccess.S, the
\t  memcpy and memmove of memcpy.S.  If unsure, say N.

"""
MAKE_RULE = f"obj-$({CONFIG})\t+= {Path(SOURCE).stem}.o\n"


@dataclass(frozen=True)
class Bodies:
    """A routine's two bodies: the scalar copies of a two-body uaccess.S,
    or memcpy's or memmove's of a two-body memcpy.S."""

    dispatcher: str      # the body the static branch heads (the slow one)
    fast: str            # the body it jumps to
    routine: str = "copy"    # what the suite calls it: copy, memcpy, memmove
    file: str = UACCESS


@dataclass(frozen=True)
class Sites:
    """What a revision's forced boots count: its user copy's two bodies,
    its string functions' (memcpy, memmove), or both."""

    copy: Bodies | None = None
    string: tuple[Bodies, ...] = ()

    @property
    def bodies(self) -> tuple[Bodies, ...]:
        return ((self.copy,) if self.copy else ()) + self.string

    @property
    def routines(self) -> tuple[str, ...]:
        return tuple(b.routine for b in self.bodies)


def sites(text: str) -> list[Bodies]:
    """Every static branch of a file: the function it heads and the one it
    jumps to, in the file's order."""
    out, func = [], None
    for line in text.splitlines():
        if m := FUNC.match(line):
            func = m.group(1)
        elif (m := SITE.match(line)) and func:
            out.append(Bodies(func, m.group(1)))
    return out


def bodies(text: str) -> Bodies | None:
    """The site of uaccess.S's static branch: the function it heads and
    the one it jumps to; None for a file with one scalar copy."""
    found = sites(text)
    return found[0] if found else None


def string_bodies(text: str) -> tuple[Bodies, ...]:
    """memcpy.S's sites, memcpy's and memmove's (those the string patch
    writes: a branch heading __memcpy or __memmove); () for one body."""
    return tuple(Bodies(b.dispatcher, b.fast, STRING_ROUTINES[b.dispatcher], MEMCPY)
                 for b in sites(text) if b.dispatcher in STRING_ROUTINES)


def find(tree: Path, rev: str) -> Sites:
    """The two-body routines of `rev` (none: Sites())."""
    return Sites(bodies(faultsuite.show(tree, rev, UACCESS) or ""),
                 string_bodies(faultsuite.show(tree, rev, MEMCPY) or ""))


def check(tree: Path, rev: str) -> Sites:
    """The bodies to count, or a CopygenError (exit 2) naming why `rev`
    cannot be booted with the probe's verdict forced."""
    where = f"{tree} at {rev[:12]}"
    probe = faultsuite.show(tree, rev, PROBE) or ""
    m = KEY_DEFINED.search(probe)
    if m is None:
        raise CopygenError(f"{where} has no boot probe of misaligned access speed (no "
                           f"DEFINE_STATIC_KEY_FALSE({KEY}) in {PROBE}): there is no verdict "
                           "to force", hint="--force-misaligned needs Linux 6.10 or later with "
                                            "a --fast-body patch; leave it out")
    if m.group(1) != "FALSE":
        raise CopygenError(f"{where}: {KEY} is true by default, not the probe's verdict",
                           hint="the forced boots are written for the kernel's false-by-default key")
    found = find(tree, rev)
    if not found.bodies:
        raise CopygenError(f"{where}: {UACCESS} has one scalar copy and {MEMCPY} one memcpy "
                           f"and memmove (no {MACRO} site): forcing the probe's verdict would "
                           "pick nothing",
                           hint="give the commit of a `copygen patch --fast-body` patch")
    missing = [what for rel, (needle, what) in faultsuite.NEEDS.items()
               if rel.startswith(("include/", "lib/"))
               and ((text := faultsuite.show(tree, rev, rel)) is None
                    or (needle and needle not in text))]
    kconfig = faultsuite.show(tree, rev, KCONFIG)
    if kconfig is None or not any(ENDIF.match(ln) for ln in kconfig.splitlines()) \
            or faultsuite.show(tree, rev, MAKEFILE) is None:
        missing.append(f"{TESTS_DIR}/ (its Kconfig.debug and Makefile)")
    if missing:
        raise CopygenError(f"{where} cannot build the forced-speed suite: no " + ", no ".join(missing),
                           hint="--force-misaligned needs KUnit with kunit_vm_mmap() (6.10 or later)")
    return found


def render(found: Sites | Bodies) -> str:
    """The suite's C file: a case for each routine with two bodies (a
    Bodies alone: the user copy's)."""
    if isinstance(found, Bodies):
        found = Sites(copy=found)
    return faultsuite.template("usercopy_speeds_kunit.c.j2").render(
        bodies=found.bodies, copy=found.copy, string=found.string, key=KEY, param=PARAM,
        suite=SUITE, max_n=MAX_N)


def _kconfig(text: str) -> str:
    """Kconfig.debug with the entry before its last `endif` (inside the
    menu of the tree's riscv runtime tests)."""
    lines = text.splitlines(keepends=True)
    at = max(i for i, ln in enumerate(lines) if ENDIF.match(ln))
    return "".join(lines[:at]) + KCONFIG_ENTRY + "".join(lines[at:])


def files(tree: Path, rev: str) -> dict[str, str]:
    """The files the suite adds or changes at `rev` (checked first)."""
    b = check(tree, rev)
    kconfig, make = faultsuite.show(tree, rev, KCONFIG), faultsuite.show(tree, rev, MAKEFILE)
    out = {SOURCE: render(b)}
    if f"config {CONFIG[len('CONFIG_'):]}" not in kconfig:
        out[KCONFIG] = _kconfig(kconfig)
    out[MAKEFILE] = faultsuite._with(make, MAKE_RULE)
    return {rel: text for rel, text in out.items() if text != faultsuite.show(tree, rev, rel)}


def on_top(tree: Path, rev: str) -> str:
    """The commit that adds the suite to `rev` (the same for the same
    revision, as kernel.faultpatch.on_top makes the fault suite's)."""
    return faultpatch.commit_on_top(tree, rev, files(tree, rev), SUBJECT + "\n")


_COUNTS = re.compile(r"# speeds_copy_entered: key (on|off): (\d+) copies checked; slow copy entered "
                     r"(\d+) times, fast copy (\d+)")
_FORCED = re.compile(r"# speeds_key_as_forced: the probe left the key (on|off); forced (\w+): "
                     r"the key is (on|off)")
_STRING_COUNTS = re.compile(r"# speeds_(memcpy|memmove)_entered: key (on|off): (\d+) calls checked; "
                            r"slow (\w+) entered (\d+) times, fast (\w+) (\d+)")
_PROBE = re.compile(r"cpu(\d+): Ratio of byte access time to unaligned word access is ([\d.]+), "
                    r"unaligned accesses are (\w+)")


def _ran(checked: int, slow: int, fast: int) -> str:
    """The body the calls ran: every checked call in one, none in the other."""
    return "fast" if fast >= checked and slow == 0 else "slow" if slow >= checked and fast == 0 \
        else "both"


def parse_log(text: str, routines: tuple[str, ...] | None = None) -> dict:
    """What a boot's raw KTAP says of the speeds: the probe's verdict per
    hart, the key it left, what was forced, the key the suite found, and
    per routine its calls (checked, entered in each body) with the body
    they ran: the user copy's flat (copies, slow_entered, fast_entered),
    memcpy's and memmove's under `string`.  `ran` is the body every
    counted routine ran ("both" when any entered both or they differ);
    with `routines` (what the suite counts: Sites.routines) a routine
    that printed no counts is named in `missing` and there is no `ran`."""
    out: dict = {"probe": [{"cpu": int(c), "ratio": float(r), "verdict": v}
                           for c, r, v in _PROBE.findall(text)]}
    if m := _FORCED.search(text):
        out.update(probed_key=m.group(1), forced=None if m.group(2) == "nothing" else m.group(2),
                   key=m.group(3))
    ran = {}
    if m := _COUNTS.search(text):
        checked, slow, fast = int(m.group(2)), int(m.group(3)), int(m.group(4))
        ran["copy"] = _ran(checked, slow, fast)
        out.update(key=m.group(1), copies=checked, slow_entered=slow, fast_entered=fast)
    for m in _STRING_COUNTS.finditer(text):
        routine, checked, slow, fast = m.group(1), int(m.group(3)), int(m.group(5)), int(m.group(7))
        ran[routine] = _ran(checked, slow, fast)
        out["key"] = m.group(2)
        out.setdefault("string", {})[routine] = {
            "calls": checked, "slow": m.group(4), "fast": m.group(6), "slow_entered": slow,
            "fast_entered": fast, "ran": ran[routine]}
    missing = [r for r in routines or () if r not in ran]
    if missing:
        out["missing"] = missing
    elif ran:
        out["ran"] = next(iter(ran.values())) if len(set(ran.values())) == 1 else "both"
    return out


def describe(speeds: dict) -> str:
    """One line: what was forced and which body each routine's calls
    entered."""
    string = speeds.get("string", {})
    if "copies" not in speeds and not string:
        return "the forced-speed suite printed no counts"
    forced = f"forced {speeds['forced']}" if speeds.get("forced") else "not forced"
    parts = []
    if "copies" in speeds:
        ran = _ran(speeds["copies"], speeds["slow_entered"], speeds["fast_entered"])
        body = {"fast": "the fast copy", "slow": "the slow copy", "both": "both copies"}[ran]
        parts.append(f"{body} ran ({speeds['slow_entered']} calls entered the slow copy, "
                     f"{speeds['fast_entered']} the fast one, of {speeds['copies']})")
    for routine, c in string.items():
        body = {"fast": "the fast body", "slow": "the slow body", "both": "both bodies"}[c["ran"]]
        parts.append(f"{routine}: {body} ran ({c['slow']} entered {c['slow_entered']} times, "
                     f"{c['fast']} {c['fast_entered']}, of {c['calls']} calls)")
    parts += [f"{routine}: no counts printed" for routine in speeds.get("missing", ())]
    return f"{forced}, key {speeds.get('key', '?')}: " + "; ".join(parts)
