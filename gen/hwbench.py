"""`copygen hwbench`'s build: the kernel copy routines of .copy files and
kernel-style .S files, and a harness of our own (templates/hwbench.c.j2),
linked into ONE static riscv64 Linux executable that times them on a board
and prints copygen-measurements 1 CSV.

Each input is built as the kernel builds it (a .copy through gen.build, a
.S assembled against the shim's headers as gen.build.build_assembly does);
every symbol it defines gets the input's prefix `hwbN_` (memcpy would
clash with the C library's, and a candidate and a baseline define the same
names); then, in each object, the SUM toggles of the uaccess bodies become
nops (gen.rvobject), every other byte as it was.  Everything is made in a
scratch directory and moved into the output directory only when the
executable links: bad input leaves the output directory as it was.
May import gen.build, gen.front.parse, gen.front.validate, gen.resources,
gen.rvobject, gen.toolchain, copygen.errors and the standard library.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from copygen.errors import CopygenError, Loc, ToolError, Warning_
from copygen.gen import toolchain
from copygen.gen.build import build_file
from copygen.gen.front.parse import require_regular_file
from copygen.gen.front.validate import load_file
from copygen.gen.resources import shim_dir, templates_dir
from copygen.gen.rvobject import Patched, defined_globals, neutralise_sum

# kind -> (calling convention in the harness, its symbols, preferred first)
ENTRIES = {
    "copy_to_user": ("COPY_USER", ("__asm_copy_to_user",)),
    "copy_from_user": ("COPY_USER", ("__asm_copy_from_user",)),
    "clear_user": ("CLEAR_USER", ("__clear_user",)),
    "memcpy": ("MEM_COPY", ("memcpy", "__memcpy")),
    "memmove": ("MEM_COPY", ("memmove", "__memmove")),
    "memset": ("MEM_SET", ("memset", "__memset")),
}
SOURCES = (".copy", ".S", ".s")
# what --quick keeps of the size grid and the offset pairs when they hold it
QUICK_SIZES = (8, 64, 1448)
QUICK_ALIGN = ((0, 0), (1, 3))
EXECUTABLE = "hwbench"


@dataclass(frozen=True)
class Routine:
    """One routine the harness times."""
    name: str                   # the symbol as its input defines it
    kind: str                   # copy_to_user, clear_user, memcpy, ...
    form: str                   # its calling convention (ENTRIES)
    symbol: str                 # its name in the executable
    source: str                 # the input's path, as given

    def as_dict(self) -> dict:
        return {"routine": self.name, "kind": self.kind, "source_file": self.source,
                "symbol": self.symbol}


@dataclass(frozen=True)
class Settings:
    """What the executable prints and times unless told otherwise."""
    sizes: list[int]
    aligns: list[tuple[int, int]]
    tool: str
    board: str = "unknown"
    core: str = ""
    clock_ghz: str = ""


@dataclass
class Built:
    outdir: Path
    executable: Path
    c_source: Path
    routines: list[Routine]
    aliases: list[dict] = field(default_factory=list)       # left out: same code as a routine
    objects: list[dict] = field(default_factory=list)       # per object: both files, what changed
    warnings: list[Warning_] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"outdir": str(self.outdir), "executable": str(self.executable),
                "c_source": str(self.c_source),
                "routines": [r.as_dict() for r in self.routines], "aliases": self.aliases,
                "objects": self.objects, "warnings": [w.as_dict() for w in self.warnings]}


def check_inputs(paths: list[str], profiles=None) -> list[Warning_]:
    """Every input readable and of a kind hwbench builds, every .copy valid:
    refused before any file is written.  Returns the .copy files' warnings."""
    if not paths:
        raise CopygenError("no input files", hint="give .copy or kernel-style .S files")
    warnings: list[Warning_] = []
    seen: dict[Path, str] = {}
    for p in paths:
        require_regular_file(p)
        if Path(p).resolve() in seen:
            raise CopygenError(f"{seen[Path(p).resolve()]} is given twice", Loc(str(p)),
                               hint="each input once: its rows are named by its path")
        seen[Path(p).resolve()] = p
        if Path(p).suffix not in SOURCES:
            raise CopygenError(f"cannot benchmark a `{Path(p).suffix}` file", Loc(str(p)),
                               hint="give a .copy strategy or a kernel-style .S "
                                    "(e.g. arch/riscv/lib/memcpy.S)")
        if Path(p).suffix == ".copy":
            warnings += load_file(p, profiles).warnings
    return warnings


def prefix_of(index: int) -> str:
    """What the symbols of the input at INDEX are called by in the executable."""
    return f"hwb{index}_"


def _objects(path: str, work: Path, profiles) -> list[Path]:
    """The input's objects as the kernel's build makes them."""
    if Path(path).suffix == ".copy":
        return build_file(path, work, link=True, profiles=profiles).objects
    work.mkdir(parents=True, exist_ok=True)
    obj = work / (Path(path).stem + ".o")
    toolchain.assemble(Path(path), shim_dir() / "include", obj, vector=True)
    return [obj]


def _prepare(index: int, path: str, objs: list[Path], dest: Path):
    """Each object renamed (hwbN_ on every symbol the input defines) into
    DEST as <n>-<stem>-<object>.kernel.o, then its SUM toggles neutralised
    into .user.o.  Returns [(kernel, user, what was patched)]."""
    prefix = prefix_of(index)
    renames = {s.name: prefix + s.name for _, s in defined_globals(objs)}
    out = []
    for obj in objs:
        base = dest / f"{index}-{Path(path).stem}-{obj.stem}"
        kernel, user = base.with_suffix(".kernel.o"), base.with_suffix(".user.o")
        toolchain.redefine_symbols(obj, renames, kernel)
        out.append((kernel, user, neutralise_sum(kernel, user, path, prefix)))
    return out


def _entries(objs: list[Path]) -> dict[str, tuple]:
    """symbol -> (object, section index, value) of the entry symbols defined."""
    known = {s for _, syms in ENTRIES.values() for s in syms}
    return {s.name: (p, s.shndx, s.value) for p, s in defined_globals(objs) if s.name in known}


def choose(index: int, path: str, objs: list[Path], wanted: tuple[str, ...]):
    """(routines, aliases) of one input.  Without `wanted`: one symbol per
    kind, the preferred one, unless it is the same code as a symbol already
    chosen (copy_from_user is copy_to_user's alias in the kernel): that one
    is an alias, left out.  With `wanted`: the kinds and symbols it names."""
    defined = _entries(objs)
    routines, aliases, seen = [], [], {}
    for kind, (form, symbols) in ENTRIES.items():
        present = [s for s in symbols if s in defined]
        if wanted:
            picked = [s for s in present if s in wanted] or present[:1] * (kind in wanted)
        else:
            picked = present[:1]
        for sym in picked:
            where = defined[sym]
            if not wanted and where in seen:
                aliases.append({"routine": sym, "source_file": path, "same_code_as": seen[where]})
                continue
            seen.setdefault(where, sym)
            routines.append(Routine(sym, kind, form, prefix_of(index) + sym, path))
    return routines, aliases


def _check_names(wanted: tuple[str, ...]) -> None:
    """Each name a kind or one of its symbols: refused before any build."""
    for w in wanted:
        if w not in ENTRIES and not any(w in syms for _, syms in ENTRIES.values()):
            raise CopygenError(f"unknown routine `{w}`",
                               hint=f"a kind ({', '.join(ENTRIES)}) or one of its symbols")


def _check_defined(wanted: tuple[str, ...], routines: list[Routine], paths: list[str],
                   found: set[str]) -> None:
    """Each name answered by a routine of some input; `found`: the entry
    symbols the inputs define."""
    for w in wanted:
        if not any(w in (r.name, r.kind) for r in routines):
            raise CopygenError(f"no input defines routine `{w}`",
                               hint=f"the inputs ({', '.join(paths)}) define "
                                    f"{', '.join(sorted(found)) or 'none of the routines hwbench times'}")


def _c_string(text: str) -> str:
    """TEXT as a C string literal: quotes, backslashes and any byte that is
    not printable ASCII escaped (octal), so a path or a board name of any
    characters compiles."""
    out = []
    for b in str(text).encode("utf-8"):
        ch = chr(b)
        out.append("\\" + ch if ch in '"\\' else ch if 32 <= b < 127 and ch != "?" else f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _comment(text: str) -> str:
    return str(text).replace("*/", "* /")


def _quick(settings: Settings) -> tuple[str, str]:
    """The grid of --quick: the sizes and pairs of QUICK_* the full grid
    holds, or else its first, middle and last sizes and its first two pairs."""
    sizes = [n for n in QUICK_SIZES if n in settings.sizes]
    if not sizes:
        s = settings.sizes
        sizes = sorted({s[0], s[len(s) // 2], s[-1]})
    pairs = [p for p in QUICK_ALIGN if p in settings.aligns] or settings.aligns[:2]
    return ",".join(map(str, sizes)), ",".join(f"{a}:{b}" for a, b in pairs)


def render(routines: list[Routine], settings: Settings, inputs: list[str]) -> str:
    """The harness's C source."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates_dir()), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["c_string"] = _c_string
    env.filters["comment"] = _comment
    quick_sizes, quick_aligns = _quick(settings)
    return env.get_template("hwbench.c.j2").render(
        routines=routines, inputs=inputs, tool=settings.tool, board=settings.board,
        core=settings.core, clock_ghz=settings.clock_ghz,
        sizes=",".join(map(str, settings.sizes)),
        aligns=",".join(f"{s}:{d}" for s, d in settings.aligns),
        quick_sizes=quick_sizes, quick_aligns=quick_aligns)


README = """\
hwbench: {count} from {inputs}, built by {tool}.
Copy `hwbench` (one static riscv64 Linux executable) to the board and run
`./hwbench > measurements.csv` there (`./hwbench --help`; `--quick` for a smoke run);
bring measurements.csv back for `copygen calibrate`.  hwbench.c is its harness;
objects/ holds each input's objects as the kernel gets them (*.kernel.o, symbols
renamed) and as linked (*.user.o: only the SUM toggles are nops).
"""


def build_hwbench(paths: list[str], outdir: Path, settings: Settings, wanted: tuple[str, ...] = (),
                  profiles=None, tell=lambda msg: None) -> Built:
    """Build the executable OUTDIR/hwbench (with hwbench.c, README and
    objects/) from the inputs PATHS; `wanted` narrows the routines (kinds
    or symbols); `tell` hears each step."""
    _check_names(wanted)
    warnings = check_inputs(paths, profiles)
    stage = Path(tempfile.mkdtemp(prefix="copygen-hwbench-"))
    try:
        routines, aliases, objects, users, found = [], [], [], [], set()
        for i, path in enumerate(paths):
            tell(f"building {path}")
            objs = _objects(path, stage / "work" / str(i), profiles)
            (stage / "objects").mkdir(exist_ok=True)
            prepared = _prepare(i, path, objs, stage / "objects")
            mine, alias = choose(i, path, objs, wanted)
            found |= set(_entries(objs))
            routines += mine
            aliases += alias
            for kernel, user, patched in prepared:
                users.append(user)
                objects.append(_object_record(path, kernel, user, patched))
        _check_defined(wanted, routines, paths, found)
        if not routines:
            raise CopygenError("the inputs define none of the routines hwbench times",
                               Loc(paths[0]), hint="entry symbols: " + ", ".join(
                                   s for _, syms in ENTRIES.values() for s in syms))
        c_source = stage / "hwbench.c"
        c_source.write_text(render(routines, settings, list(paths)))
        tell(f"linking {EXECUTABLE}")
        toolchain.link_user_program([c_source], users, stage / EXECUTABLE)
        count = f"{len(routines)} routine" + ("" if len(routines) == 1 else "s")
        (stage / "README").write_text(README.format(count=count, inputs=", ".join(paths),
                                                    tool=settings.tool))
        _install(stage, Path(outdir))
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    outdir = Path(outdir)
    for o in objects:
        for key in ("kernel_object", "user_object"):
            o[key] = str(outdir / "objects" / Path(o[key]).name)
    return Built(outdir, outdir / EXECUTABLE, outdir / "hwbench.c", routines, aliases, objects,
                 warnings)


def _object_record(path: str, kernel: Path, user: Path, patched: list[Patched]) -> dict:
    return {"source_file": path, "kernel_object": str(kernel), "user_object": str(user),
            "neutralised": [p.as_dict() for p in patched]}


def _install(stage: Path, outdir: Path) -> None:
    """The finished files moved into OUTDIR, each under a temporary name
    first, so that OUTDIR never holds a half-written one."""
    outdir.mkdir(parents=True, exist_ok=True)
    for name in (EXECUTABLE, "hwbench.c", "README"):
        tmp = outdir / f".{name}.partial"
        shutil.copy2(stage / name, tmp)
        os.replace(tmp, outdir / name)
    tmp, old = outdir / ".objects.partial", outdir / ".objects.old"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(stage / "objects", tmp)
    if (outdir / "objects").exists():
        os.replace(outdir / "objects", old)
    os.replace(tmp, outdir / "objects")
    shutil.rmtree(old, ignore_errors=True)


PROGRESS = re.compile(r"^hwbench: \[(\d+)/(\d+)\]")


def run_emulated(exe: Path, args: list[str], on_progress=lambda done, total: None,
                 timeout: float = 7200) -> str:
    """Run the executable under qemu-riscv64 (flagged emulated) and return
    its CSV; `on_progress` hears (cells done, cells) as it goes.  A
    non-zero exit (a wrong routine: 3) is a ToolError with its message."""
    def line(text: str) -> None:
        m = PROGRESS.match(text)
        if m:
            on_progress(int(m.group(1)), int(m.group(2)))
    ran = toolchain.run_user_lines(exe, ["--emulated", "yes", *args], line, timeout)
    if ran.returncode != 0:
        said = [ln for ln in ran.stderr.splitlines() if not PROGRESS.match(ln)]
        status = "timed out" if ran.returncode is None else f"exit {ran.returncode}"
        raise ToolError(f"`{exe.name}` failed under qemu-riscv64 ({status})",
                        detail="\n".join(said[-20:]))
    return ran.stdout

