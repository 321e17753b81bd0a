"""`copygen bench` and `copygen rank`: the emulator's commands.

Role: command-line glue only.  Parses options, builds the .copy files with
gen.build (into a cache directory), hands the linked ELFs to emu.bench /
emu.rank, and prints through emu.render.  gen/cli.py picks up `commands`.
Every error that reaches the user is a gen.errors.CopygenError (printed on a
few lines, exit status 2), including the emulator's own (ElfError, Oops,
BenchError, ...): never a traceback.
This is the one module of `emu` that imports `gen`.
Imports: click, rich, gen.build, gen.errors, gen.validate, emu.*.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from emu.bench import KINDS, Bench, Case, Sample
from emu.errors import EmuError, ProfileError
from emu.profile import Profile, available, load_profile
from emu.rank import expected_cycles, plan, rank
from emu.render import bench_csv, bench_tables, plot_bench, rank_csv, rank_table
from emu.workload import ALIGN_MIXES, SIZE_WORKLOADS, WorkloadError, make_workload, parse_aligns, parse_sizes
from gen.build import build_file
from gen.errors import CopygenError

DEFAULT_SIZES = "1,8,16,32,64,128,256,512,1024,1448,2048,4096,8192,16384,32768"
DEFAULT_ALIGN = "0:0,1:0,4:0,7:0,3:3,5:2"
BUILD_ROOT = Path("build") / "bench"


def _reports_errors(fn):
    """Turn every expected failure into a CopygenError printed by the CLI (exit 2)."""
    @functools.wraps(fn)
    def wrapper(*args, **kw):
        as_json = kw.get("as_json", False)
        try:
            try:
                return fn(*args, **kw)
            except WorkloadError as e:
                raise CopygenError(str(e), hint="see `copygen bench --help` / `copygen rank --help` for the syntax")
            except ProfileError as e:
                raise CopygenError(str(e), hint=f"profiles: {', '.join(available())}, or a path to a .toml")
            except EmuError as e:
                raise CopygenError(f"emulator: {e}", hint="the generated code misbehaved or the ELF is "
                                   "unusable; `copygen build` the file and inspect it")
        except CopygenError as err:
            if as_json:
                click.echo(json.dumps({"ok": False, "error": err.as_dict()}, indent=2))
            click.echo(err.render(), err=True)
            sys.exit(err.exit_code)
    return wrapper


def _build(path: str, build_root: Path):
    """(strategy's target profiles, linked ELF) of one .copy file, built into a
    per-file cache directory."""
    key = hashlib.sha1(str(Path(path).resolve()).encode()).hexdigest()[:10]
    res = build_file(path, build_root / key)
    from gen.validate import load_file
    profiles = sorted({t.profile for t in load_file(path).targets})
    return profiles, res.elf


def _profile(given: str | None, profiles: list[str]) -> Profile:
    if given is None:
        if len(profiles) != 1:
            raise CopygenError(f"the files' targets use the profiles {', '.join(profiles) or 'none'}",
                               hint="choose one with --profile")
        given = profiles[0]
    return load_profile(given)


def _select(present: list[str], wanted: tuple[str, ...], default_skip: tuple[str, ...] = (),
            strict: bool = True) -> list[str]:
    """Symbols to run: `wanted` by kind name or symbol, else all but `default_skip`;
    `strict`: a wanted routine missing here is an error."""
    if not wanted:
        return [s for s in present if KINDS[s].name not in default_skip]
    out = []
    for w in wanted:
        hits = [s for s in present if w in (s, KINDS[s].name)]
        if not hits and strict:
            known = ", ".join(KINDS[s].name for s in present)
            raise CopygenError(f"no routine {w!r} here", hint=f"routines in this file: {known}")
        out += [h for h in hits if h not in out]
    return out


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=True, disable=not sys.stderr.isatty())


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--profile", default=None, help="Cost profile (default: the file's target profile).")
@click.option("--sizes", default=DEFAULT_SIZES, show_default=True,
              help="Sizes: list and ranges, e.g. 8,64,1448 or 0-64 or 0-4096/512.")
@click.option("--align", "aligns", default=DEFAULT_ALIGN, show_default=True,
              help="SRC:DST offsets from a page boundary; * = 0..7; or aligned|all|spec|src-misaligned.")
@click.option("--routine", "routines", multiple=True, help="Only this routine (kind or symbol); repeatable.")
@click.option("--cold", is_flag=True, help="Empty the modelled L1 before each call (default: warm).")
@click.option("--json", "as_json", is_flag=True, help="Print the samples as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the samples as CSV.")
@click.option("--plot", type=click.Path(dir_okay=False), help="Write a PNG: bytes/cycle against size.")
@click.option("--build-dir", default=str(BUILD_ROOT), show_default=True, type=click.Path(file_okay=False),
              help="Cache directory for the built ELF.")
@_reports_errors
def bench(file, profile, sizes, aligns, routines, cold, as_json, as_csv, plot, build_dir) -> None:
    """Cycles and bytes/cycle of each routine in FILE per (size, src, dst alignment).

    Builds FILE, runs every routine it defines (copy_to/from_user, clear_user,
    memcpy, memmove, memset) in the emulator with the cost profile, warm L1,
    and checks each result.  Offsets are from a page boundary.
    """
    if as_json and as_csv:
        raise CopygenError("--json and --csv are exclusive", hint="pick one output format")
    size_list, pairs = parse_sizes(sizes), parse_aligns(aligns)
    prof_names, elf = _build(file, Path(build_dir))
    prof = _profile(profile, prof_names)
    b = Bench(elf, prof, max(size_list), warm=not cold)
    cases = _bench_cases(_select(b.routines(), routines), size_list, pairs)
    samples: list[Sample] = []
    with _progress() as bar:
        task = bar.add_task(f"bench {Path(file).name}", total=len(cases))
        for case in cases:
            samples.append(b.run(case))
            bar.advance(task)
    if plot:
        limit = 4.0 * prof.mem_pipes if prof.mem_pipes else None
        plot_bench(samples, Path(plot), f"{Path(file).name} on {prof.name}", limit)
        click.echo(f"wrote {plot}", err=True)
    if as_json:
        click.echo(json.dumps({"ok": True, "file": file, "elf": str(elf), "profile": prof.name,
                               "warm": not cold, "samples": [s.as_dict() for s in samples]}, indent=2))
    elif as_csv:
        click.echo(bench_csv(samples), nl=False)
    else:
        console = Console()
        for t in bench_tables(samples, prof.name):
            console.print(t)


def _bench_cases(symbols: list[str], sizes: list[int], pairs: list[tuple[int, int]]) -> list[Case]:
    cases = []
    for sym in symbols:
        mine = pairs if KINDS[sym].form == "copy" else list(dict.fromkeys((0, d) for _, d in pairs))
        cases += [Case(sym, n, s, d) for n in sizes for s, d in mine]
    return cases


WORKLOAD_HELP = (f"Size distribution: {', '.join(SIZE_WORKLOADS)}, uniform:A-B, "
                 "or a .csv in LLVM libc's distribution format (one line of probabilities for sizes 0..N).")


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--profile", default=None, help="Cost profile (default: the files' target profile).")
@click.option("--workload", default="network", show_default=True, help=WORKLOAD_HELP)
@click.option("--align-mix", default="spec", show_default=True, type=click.Choice(list(ALIGN_MIXES)),
              help="Alignment mix of (src, dst) offsets.")
@click.option("--routine", "routines", multiple=True,
              help="Only this routine kind (default: all but copy_from_user, the same code as copy_to_user).")
@click.option("--json", "as_json", is_flag=True, help="Print the ranking as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the ranking as CSV.")
@click.option("--build-dir", default=str(BUILD_ROOT), show_default=True, type=click.Path(file_okay=False),
              help="Cache directory for the built ELFs.")
@_reports_errors
def rank_cmd(files, profile, workload, align_mix, routines, as_json, as_csv, build_dir) -> None:
    """Order the routines of FILES by expected cycles per call under a workload.

    Routines of the same kind (copy_to_user, clear_user, memcpy, ...) are ranked
    against each other; the expectation weighs warm-L1 cycles by the workload's
    size and alignment probabilities.
    """
    if as_json and as_csv:
        raise CopygenError("--json and --csv are exclusive", hint="pick one output format")
    wl = make_workload(workload, align_mix)
    built = [(f, *_build(f, Path(build_dir))) for f in files]
    prof = _profile(profile, sorted({p for _, ps, _ in built for p in ps}))
    max_size = max(s for s, _ in wl.sizes)
    jobs = []
    for f, _, elf in built:
        b = Bench(elf, prof, max_size)
        jobs += [(f, b, sym) for sym in _select(b.routines(), routines, ("copy_from_user",), strict=False)]
    if not jobs:
        raise CopygenError(f"none of the files defines {', '.join(routines)}",
                           hint=f"routine kinds: {', '.join(k.name for k in KINDS.values())}")
    results = []
    with _progress() as bar:
        task = bar.add_task(f"rank ({wl.name})", total=sum(len(plan(s, wl)) for _, _, s in jobs))
        for f, b, sym in jobs:
            results.append(expected_cycles(b, f, sym, wl, lambda n: bar.advance(task, n)))
    ranked = rank(results)
    if as_json:
        click.echo(json.dumps({"ok": True, "profile": prof.name, "workload": wl.as_dict(),
                               "ranking": {k: [{"rank": i, **r.as_dict(), "relative": round(rel, 4)}
                                               for i, (r, rel) in enumerate(v, 1)]
                                           for k, v in ranked.items()}}, indent=2))
    elif as_csv:
        click.echo(rank_csv(ranked), nl=False)
    else:
        Console().print(rank_table(ranked, wl.name, prof.name))
        click.echo(wl.description)


rank_cmd.name = "rank"
commands = [bench, rank_cmd]
