"""`copygen hwbench`: a benchmark for a board.

Role: command-line glue over gen.hwbench: parses the grid with
measure.workload's parsers (the defaults of `copygen bench`, plus the
public table's src+1/dst+3), builds the one static executable into the
output directory, and with --run runs it under qemu-riscv64 and writes
its CSV there.  May import click, gen.hwbench, emu.timing.profile,
measure.workload, copygen.commands_measure, copygen.errors and
copygen.output.
"""
from __future__ import annotations

import os
from pathlib import Path

import click

from copygen import __version__
from copygen.commands_measure import DEFAULT_ALIGN, DEFAULT_SIZES
from copygen.emu.timing.profile import available
from copygen.errors import CopygenError
from copygen.gen.hwbench import Settings, build_hwbench, run_emulated
from copygen.measure.workload import parse_aligns, parse_sizes
from copygen.output import EXIT_HELP, command, envelope, output_dir, print_warnings, progress

# `copygen bench`'s pairs, the public table's `unaligned` (dst+3, src+1), and
# the pairs `copygen patch` averages each alignment class over
# (patch.evidence.COPY_PAIRS, FILL_PAIRS), so that its table can take them
HWBENCH_ALIGN = DEFAULT_ALIGN + ",1:3,3:5,0:4,7:2,0:1,0:5"
MAX_SIZE = 1 << 30                  # what the executable accepts
MAX_SIZES, MAX_PAIRS = 4096, 64
MEASUREMENTS = "measurements.csv"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _settings(sizes: str, aligns: str, board: str, core: str, clock_ghz: float | None) -> Settings:
    size_list, pairs = parse_sizes(sizes), parse_aligns(aligns)
    if min(size_list) < 1 or max(size_list) > MAX_SIZE or len(size_list) > MAX_SIZES:
        raise CopygenError(f"--sizes {sizes!r}: at most {MAX_SIZES} sizes, each from 1 to "
                           f"{MAX_SIZE} bytes", hint="e.g. --sizes 8,64,1448")
    if len(pairs) > MAX_PAIRS:
        raise CopygenError(f"--align {aligns!r}: at most {MAX_PAIRS} pairs",
                           hint="e.g. --align 0:0,1:3")
    if clock_ghz is not None and not clock_ghz > 0:
        raise CopygenError(f"--clock-ghz {clock_ghz:g}: the clock must be above 0 GHz",
                           hint="e.g. --clock-ghz 1.5")
    return Settings(size_list, pairs, f"copygen hwbench {__version__}", board or "unknown",
                    core or "", "" if clock_ghz is None else f"{clock_ghz:g}")


def _run(exe: Path, quick: bool, outdir: Path) -> tuple[Path, int]:
    """The executable run under qemu-riscv64; its CSV written (whole, then
    renamed) to OUTDIR/measurements.csv.  Returns (the file, its rows)."""
    with progress() as bar:
        task = bar.add_task(f"{exe.name} under qemu-riscv64", total=None)
        text = run_emulated(exe, ["--quick"] if quick else [],
                            lambda done, total: bar.update(task, completed=done, total=total))
    path = outdir / MEASUREMENTS
    tmp = outdir / f".{MEASUREMENTS}.partial"
    tmp.write_text(text)
    os.replace(tmp, path)
    rows = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    return path, max(len(rows) - 1, 0)


def _summary(built, settings: Settings) -> list[str]:
    toggles = sum(len(o["neutralised"]) for o in built.objects)
    touched = sum(1 for o in built.objects if o["neutralised"])
    inputs = len({r.source for r in built.routines})
    lines = [f"wrote {built.executable}: {_count(len(built.routines), 'routine')} from "
             f"{_count(inputs, 'input')}, a static riscv64 Linux executable",
             f"  {_count(toggles, 'SUM toggle')} (csrs/csrc sstatus) made nops in "
             f"{_count(touched, 'object')}; objects/ holds each object before (*.kernel.o) and "
             f"after (*.user.o)"]
    for a in built.aliases:
        lines.append(f"  left out: {a['routine']} of {a['source_file']} is the same code as "
                     f"{a['same_code_as']} (name it with --routine to time it too)")
    lines.append(f"  grid: {len(settings.sizes)} sizes x {len(settings.aligns)} offset pairs; "
                 f"on the board: ./{built.executable.name} > {MEASUREMENTS}  (docs/boards.md)")
    return lines


@click.command("hwbench", epilog=EXIT_HELP)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--out", "out", required=True, type=click.Path(file_okay=False),
              help="Directory for the executable (hwbench), its C source, a README and the "
                   "objects; made when missing.")
@click.option("--board", default="unknown", show_default=True,
              help="Board name written into the CSV (the executable's --board overrides it).")
@click.option("--core", default="", help="Core name, profile-like (u74, c910, x60).")
@click.option("--clock-ghz", type=float, default=None, help="Core clock in GHz, e.g. 1.5.")
@click.option("--sizes", default=DEFAULT_SIZES, show_default=True,
              help="Sizes built in (bytes, at least 1): list and ranges, e.g. 8,64,1448 or 1-64 "
                   "or 1-4097/512.")
@click.option("--align", "aligns", default=HWBENCH_ALIGN, show_default=True,
              help="SRC:DST offset pairs built in, 0..63 from page-aligned buffers (`copygen "
                   "bench`'s and the public table's src+1/dst+3).")
@click.option("--routine", "routines", multiple=True,
              help="Only this routine: a kind (copy_to_user, copy_from_user, clear_user, memcpy, "
                   "memmove, memset) or a symbol (__memcpy, ...); repeatable.")
@click.option("--run", "run_it", is_flag=True,
              help=f"Also run it here under qemu-riscv64 and write DIR/{MEASUREMENTS} "
                   "(flagged `# emulated: yes`: a check of the harness, not a measurement).")
@click.option("--quick", is_flag=True, help="With --run: the executable's quick mode.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@command("hwbench")
def hwbench(files, out, board, core, clock_ghz, sizes, aligns, routines, run_it, quick,
            as_json) -> int:
    """Build ONE static riscv64 Linux executable that times FILES' routines on a board.

    FILES: .copy strategies and kernel-style .S files (a tree's
    arch/riscv/lib/memcpy.S, uaccess.S, ...).  Each routine is the machine
    code the kernel gets; in the uaccess bodies only the SUM toggles
    (csrs/csrc sstatus, which trap in user mode) become nops of the same
    length.  Every input's symbols are prefixed, so a candidate and a
    baseline may define the same routine: rows name the original symbol
    and the input's path (source_file).

    The executable checks each routine once per cell (size x offsets) and
    times it by two methods (orbench: a loop of calls, as ARM
    optimized-routines' string/bench; isolated: one call at a time) warm
    and cold, printing copygen-measurements 1 CSV.  Copy DIR/hwbench to the
    board, run `./hwbench > measurements.csv`, bring the file back for
    `copygen calibrate` (docs/boards.md).
    """
    if quick and not run_it:
        raise CopygenError("--quick is the mode of --run", hint="add --run, or run "
                           "`./hwbench --quick` on the board")
    settings = _settings(sizes, aligns, board, core, clock_ghz)
    outdir = output_dir(out, "-o")
    tell = (lambda msg: None) if as_json else (lambda msg: click.echo(msg, err=True))
    built = build_hwbench(list(files), outdir, settings, tuple(routines), available(), tell)
    print_warnings(built.warnings)
    measured, rows = None, None
    if run_it:
        measured, rows = _run(built.executable, quick, outdir)
    if as_json:
        envelope("hwbench", True, **built.as_dict(), sizes=settings.sizes,
                 align=[f"{s}:{d}" for s, d in settings.aligns], board=settings.board,
                 core=settings.core, clock_ghz=settings.clock_ghz,
                 measurements=str(measured) if measured else None, rows=rows)
        return 0
    for line in _summary(built, settings):
        click.echo(line)
    if measured:
        click.echo(f"wrote {measured}: {rows} rows, measured under qemu-riscv64 "
                   "(# emulated: yes)")
    return 0
