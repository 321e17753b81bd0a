"""`copygen calibrate`: fit a cost profile to measurements taken on a board.

Role: command-line glue.  Reads the measurements (measure.measurements),
builds each measured routine's machine code into a linked ELF
(copygen.inputs: a .copy with the generator, a kernel-style .S against the
shim, as `copygen verify` does; by default the row's source_file in a
kernel tree that `copygen tree` made), hands them to measure.calibrate /
measure.calibrate_fit, and writes the fitted profile and its picture
through measure.calibrate_out.  Every input is checked before the fit
runs, and nothing is written unless the fit ends.
May import click, rich, emu.elf, emu.timing.profile, kernel.tree, measure,
copygen.errors, copygen.inputs and copygen.output.
"""
from __future__ import annotations

import re
import tempfile
import tomllib
from pathlib import Path

import click
from rich import box
from rich.table import Table as RichTable

from copygen.emu.elf import read_elf
from copygen.emu.timing.profile import PROFILE_DIR, available, parse_profile
from copygen.errors import CopygenError, Loc
from copygen.inputs import linked_elf
from copygen.kernel.tree import cache_dir
from copygen.measure import measurements
from copygen.measure.bench import KINDS
from copygen.measure.calibrate import Model, cells_of, resolve_params
from copygen.measure.calibrate_fit import CV_KINDS, Problem, calibrate as run_calibration, default_cv
from copygen.measure.calibrate_out import About, against_text, plot_fit, profile_text, record
from copygen.output import (EXIT_HELP, command, envelope, named_files, output_file, plain_tables,
                            print_tables, progress)

DEFAULT_TREE = "linux-source-6.12"


def _profile_source(given: str) -> tuple[Path, str, dict]:
    """(file, text, data) of --profile: a name in emu/profiles or a .toml path."""
    path = Path(given) if given.endswith(".toml") else PROFILE_DIR / f"{given}.toml"
    if not path.is_file():
        raise CopygenError(f"unknown cost profile {given!r}", hint=f"profiles: {', '.join(available())}, "
                           "or a path to a .toml")
    text = path.read_text()
    try:
        return path, text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise CopygenError(f"not TOML: {err}", Loc(str(path))) from None


def _rows_of_core(table: measurements.Table, core: str | None, profile: str) -> str:
    """Keep the rows of one core (--core, else the profile's name, else the
    file's only core); returns that core."""
    cores = list(dict.fromkeys(r.core for r in table.rows))
    if core is None:
        core = profile if profile in cores else (cores[0] if len(cores) == 1 else None)
    if core is None or core not in cores:
        raise CopygenError(f"the measurements hold cores {', '.join(cores)}"
                           + (f", not {core}" if core else f", none named {profile}"),
                           Loc(table.path), hint="choose the rows with --core")
    table.rows = [r for r in table.rows if r.core == core]
    return core


def _routine_paths(table, given: tuple[str, ...], tree: Path) -> dict[str, tuple[Path, int]]:
    """routine -> (its code, the line of its first row)."""
    first = {}
    for r in table.rows:
        first.setdefault(r.routine, r)
    paths = {}
    for spec in given:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise CopygenError(f"--routine {spec!r}: give NAME=PATH (memcpy=memcpy.S)")
        if name not in first:
            raise CopygenError(f"--routine {name}: the measurements have no row of routine {name}",
                               Loc(table.path), hint=f"routines there: {', '.join(first)}")
        if not Path(path).is_file():
            raise CopygenError(f"--routine {name}: no such file", Loc(path))
        paths[name] = (Path(path), first[name].line)
    for name, row in first.items():
        if name in paths:
            continue
        src = tree / row.source_file.split("@")[0]
        if not row.source_file or not src.is_file():
            raise CopygenError(f"routine {name}: its source_file {row.source_file!r} is not in the "
                               f"kernel tree {tree}", Loc(table.path, row.line),
                               hint=f"give --routine {name}=PATH (a .S or .copy), or --kernel-tree DIR "
                                    "(`copygen tree` makes one)")
        _check_version(row.source_file, tree, table.path, row.line)
        paths[name] = (src, row.line)
    return paths


def _check_version(source: str, tree: Path, where: str, line: int) -> None:
    """Warn when the row names a kernel version the tree is not."""
    _, _, version = source.partition("@")
    try:
        text = (tree / "Makefile").read_text(errors="replace")
    except OSError:
        return
    got = dict(re.findall(r"^(VERSION|PATCHLEVEL) = (\d+)", text, re.M))
    have = f"{got.get('VERSION', '?')}.{got.get('PATCHLEVEL', '?')}"
    if version and not version.lstrip("v").startswith(have):
        click.echo(f"{where}:{line}: warning: the row's code is {source}; the kernel tree is "
                   f"Linux {have}", err=True)


def _elfs(paths: dict[str, tuple[Path, int]], csv_path: str, workdir: Path) -> dict[str, Path]:
    """Each routine's linked ELF, which must define it under its own name."""
    out = {}
    for name, (path, line) in paths.items():
        if name not in KINDS:
            raise CopygenError(f"routine {name}: copygen does not know how to call it",
                               Loc(csv_path, line), hint=f"routines it calls: {', '.join(KINDS)}")
        elf = linked_elf(path, workdir / name, tell=lambda m: click.echo(m, err=True))
        if name not in read_elf(elf).symbols:
            raise CopygenError(f"routine {name} is measured here, and {path} defines no symbol {name}",
                               Loc(csv_path, line), hint="give --routine NAME=PATH with the code "
                               "that was measured")
        out[name] = elf
    return out


def _overheads(specs: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for spec in specs:
        method, sep, value = spec.partition("=")
        try:
            out[method] = float(value)
        except ValueError:
            sep = ""
        if not sep or method not in measurements.METHODS:
            raise CopygenError(f"--overhead {spec!r}: give METHOD=CYCLES, METHOD one of "
                               f"{', '.join(measurements.METHODS)}")
    return out


def _cv_kinds(text: str, cells) -> list[str]:
    if text == "auto":
        return [default_cv(cells)]
    if text == "none":
        return []
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    # the constraints fold needs figures of other routines, which only a
    # script's Problem carries (bench/calibration/calibrate_2024.py)
    offered = [k for k in CV_KINDS if k != "constraints"]
    bad = [k for k in kinds if k not in offered]
    if bad:
        raise CopygenError(f"--cv {bad[0]!r}: give auto, none, or some of {', '.join(offered)}")
    return kinds


@click.command(epilog=EXIT_HELP)
@click.argument("measured", metavar="MEASUREMENTS.csv", type=click.Path(dir_okay=False))
@click.option("--profile", required=True, help="The profile to fit: a name (u74) or a .toml path.")
@click.option("--free", "free", multiple=True, required=True, metavar="P[=LO:HI],...",
              help="Parameters to fit, by table.key (latency.load, store_buffer.drain) or profile "
                   "field (lat_load, miss_store), optional integer bounds; comma-separated, repeatable.")
@click.option("--routine", "routines", multiple=True, metavar="NAME=PATH",
              help="The code measured as routine NAME: a .copy, a kernel-style .S, an object or ELF. "
                   "Default: the row's source_file in --kernel-tree.")
@click.option("--kernel-tree", default=None, type=click.Path(file_okay=False),
              help=f"Where rows' source_file are found [default: the cache's {DEFAULT_TREE}, "
                   "which `copygen tree` makes].")
@click.option("--core", default=None, help="Fit to the rows of this core [default: the profile's name].")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The fitted profile's TOML file.")
@click.option("--plot", type=click.Path(dir_okay=False), help="A PNG: measured against predicted per cell.")
@click.option("--name", default=None, help="The fitted profile's name [default: the profile's].")
@click.option("--cv", default="auto", show_default=True, metavar="auto|none|KIND,...",
              help="Cross-validation: leave one routine, mode or (size) band out; auto: routine, "
                   "or mode when one routine is measured.")
@click.option("--overhead", "overheads", multiple=True, metavar="METHOD=CYCLES",
              help="Hold a method's per-call overhead fixed instead of fitting it.")
@click.option("--prior", default=0.0, show_default=True, type=click.FloatRange(min=0),
              help="Weight of the squared relative moves from the profile's values in the objective.")
@click.option("--budget", default=400, show_default=True, type=click.IntRange(min=1),
              help="Most parameter points a local search evaluates.")
@click.option("--restarts", default=0, show_default=True, type=click.IntRange(min=0),
              help="Local searches from random points (fixed seed) after the one from the "
                   "profile's values; the best is kept.")
@click.option("--source", default=None, help="Where the measurements come from, for the record "
                                              "[default: the file's `# tool:` header].")
@click.option("--json", "as_json", is_flag=True, help="Print the fit as JSON.")
@command("calibrate")
def calibrate(measured, profile, free, routines, kernel_tree, core, output, plot, name, cv,
              overheads, prior, budget, restarts, source, as_json) -> int:
    """Fit PROFILE's --free parameters to MEASUREMENTS.csv taken on a board.

    Every measured cell is predicted by running the emulator on the
    routine's machine code as the benchmark method runs it (orbench: warm
    calls in a loop, plus a fitted per-call overhead), and the free
    parameters are fitted by least squares on the relative error of
    bytes/cycle.  Writes the profile with the fitted values and a
    [calibration] table: the data, the fit, per-cell residuals, a
    cross-validated error and the parameters the data leave unconstrained.
    Refuses times measured under an emulator.
    """
    named_files(profile=profile)
    table = measurements.read(measured)
    ppath, text, data = _profile_source(profile)
    base = parse_profile(data, str(ppath))
    core = _rows_of_core(table, core, base.name)
    cells = cells_of(table)
    params = resolve_params([s for spec in free for s in spec.split(",") if s.strip()], data, base)
    kinds = _cv_kinds(cv, cells)
    fixed = _overheads(overheads)
    tree = Path(kernel_tree) if kernel_tree else cache_dir() / DEFAULT_TREE
    if kernel_tree and not tree.is_dir():
        raise CopygenError("--kernel-tree: no such directory", Loc(kernel_tree),
                           hint="a kernel tree (`copygen tree` makes one)")
    paths = _routine_paths(table, routines, tree)
    out = output_file(output, "-o")
    png = output_file(plot, "--plot") if plot else None
    with tempfile.TemporaryDirectory(prefix="copygen-calibrate-") as work:
        elfs = _elfs(paths, table.path, Path(work))
        model = Model(data, str(ppath), elfs, max(c.size for c in cells))
        cal = _fit(Problem(model, cells, params, fixed_overhead=fixed, budget=budget, prior=prior,
                           restarts=restarts), kinds)
    row = table.rows[0]
    about = About(measured, source or str(table.header.get("tool", "")) or "not stated in the file",
                  dict(table.header), {r: _shown(p) for r, (p, _) in paths.items()}, str(profile))
    rec = record(cal, about)
    against = against_text(rec, row.board, core, f"{row.clock_ghz:g}" if row.clock_ghz else "")
    fitted = profile_text(text, cal, rec, against, name, board=row.board)
    parse_profile(tomllib.loads(fitted), str(out))      # what is written must load
    out.write_text(fitted)
    if png is not None:
        plot_fit(cal, png, f"{Path(measured).name}: {core} ({base.name} fitted)")
    if as_json:
        envelope("calibrate", True, output=str(out), plot=str(png) if png else None,
                 profile=base.name, core=core, calibration=rec)
    else:
        _report(rec, str(out), str(png) if png else None)
    return 0


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _fit(problem: Problem, kinds: list[str]):
    """The fit with a progress bar counting parameter points evaluated."""
    groups = {k: len({getattr(c, "band") if k == "band" else getattr(c, k) for c in problem.cells})
              for k in kinds}
    total = problem.budget * (1 + problem.restarts) * (1 + sum(n for n in groups.values() if n > 1))
    with progress() as bar:
        task = bar.add_task("calibrate", total=total)
        problem.tick = lambda: bar.advance(task)
        return run_calibration(problem, kinds)


def _table(title: str) -> RichTable:
    return RichTable(title=title, box=box.ASCII if plain_tables() else box.HEAVY_HEAD)


def _report(rec: dict, out: str, png: str | None) -> None:
    cells = _table("cells: bytes/cycle, error = predicted/measured - 1")
    for col in ("routine", "mode", "size", "method", "measured", "predicted", "error"):
        cells.add_column(col, justify="right" if col in ("size", "measured", "predicted", "error") else "left")
    for c in rec["cells"]:
        cells.add_row(c["routine"], c["mode"], str(c["size"]), f"{c['method']} {c['state']}",
                      f"{c['measured']:.3f}", f"{c['predicted']:.3f}", f"{c['error_pct']:+.1f} %")
    params = _table("free parameters")
    for col in ("parameter", "profile", "fitted", "±50 % moves errors by", "constrained"):
        params.add_column(col)
    for s in rec["sensitivity"]:
        params.add_row(s["param"], str(rec["start"][s["param"]]), str(rec["fitted"][s["param"]]),
                       f"{s['max_error_change_pct']} %", "yes" if s["constrained"] else "NO")
    print_tables(cells, params)
    ins, before = rec["in_sample"], rec["before"]
    lines = [f"in-sample mean |error| {ins['mean_abs_error_pct']} % (max {ins['max_abs_error_pct']} %) "
             f"over {ins['cells']} cells; with the profile's own values {before.get('mean_abs_error_pct')} %",
             "overhead per call: " + ", ".join(f"{m} {v} cycles" for m, v in rec["overhead_cycles"].items())]
    lines += [f"{cv['kind']} cross-validated mean |error| {cv['mean_abs_error_pct']} % ("
              + ", ".join(f"{f['held_out']}: {f['mean_abs_error_pct']} %" for f in cv["folds"]) + ")"
              for cv in rec["cross_validation"]]
    lines += [f"constraint {c['name']}: model {c['model']}, target {c['target']} ({c['error_pct']:+} %)"
              for c in rec["constraints"]]
    lines.append("unconstrained by the data: " + (", ".join(rec["unconstrained"]) or "none"))
    lines += [f"degenerate: {a} and {b} move the cells alike (cos {c}): only a combination is fitted"
              for a, b, c in rec["degenerate"]]
    emu = rec["emulator"]
    lines.append(f"emulator: {emu['runs']} runs, {emu['ms_per_run']} ms each; {rec['evaluations']} points")
    lines.append(f"wrote {out}" + (f" and {png}" if png else ""))
    for ln in lines:
        click.echo(ln)
