"""`copygen tune FILE` and `copygen tune show DB`: the autotuner's commands.

Role: command-line glue over tune.session (tune_sweep, show_store): parses
the options, checks the paths it will write, draws the stages as progress
bars and prints the ranking through tune.report; with --measured, the
board's figures of the baselines and the winner beside the model's.  May
import click, rich, copygen.errors, measure.workload, measure.dispatch,
measure.measured, tune.session, tune.report, copygen.output.
"""
from __future__ import annotations

import contextlib
import re
import sys

import click

from copygen.errors import CopygenError
from copygen.measure import measured
from copygen.measure.dispatch import parse_vector_state
from copygen.measure.workload import ALIGN_MIXES, make_workload
from copygen.output import (EXIT_HELP, EXIT_INPUT, EXIT_OK, command, envelope, exit_help, named_files,
                            output_dir, output_file, plain_tables, print_tables, progress, table_console)
from copygen.tune import report
from copygen.tune.session import Ranking, Request, Watch, default_db, on_board, show_store, tune_sweep

MEASURED_HELP = ("A board's measurements (docs/measurements.md; repeatable), e.g. hwbench run on the "
                 "baselines and on the report's winner.copy: for each of those the board measured, the "
                 "share of the workload's calls measured and the expected cycles as measured, beside "
                 "the model's.  The ranking stays the model's.")


class _TuneGroup(click.Group):
    """Two forms: `copygen tune FILE [OPTIONS]` walks a sweep, `copygen tune
    show DB [OPTIONS]` renders a store again.  The first is the group's own
    help; its command has no name of its own a user types."""

    def parse_args(self, ctx, args):
        if not args or args[0] not in ("show", "-h", "--help"):
            args = [RUN, *args]
        return super().parse_args(ctx, args)

    def format_help(self, ctx, formatter):
        walk = self.commands[RUN]
        walk.format_help(_WalkContext(walk, info_name=RUN, parent=ctx), formatter)
        with formatter.section("Also"):
            formatter.write_dl([("show DB [OPTIONS]", self.commands["show"].get_short_help_str(70)
                                 + "  (copygen tune show --help)")])


class _WalkContext(click.Context):
    """The walk's usage and errors name `copygen tune`, the form a user types."""

    @property
    def command_path(self) -> str:
        return self.parent.command_path if self.parent else super().command_path


class _Walk(click.Command):
    context_class = _WalkContext


# the walk's internal name in the group: never typed, never shown
RUN = "run"


class ByteCount(click.ParamType):
    """A positive number of bytes: 1024, or with a binary suffix, 1K / 1KiB."""

    name = "BYTES"
    _FORM = re.compile(r"(\d+)\s*(k|kib)?", re.IGNORECASE)

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        m = self._FORM.fullmatch(str(value).strip())
        if m is None or int(m[1]) == 0:
            self.fail(f"{value!r} is not a size in bytes: give a positive whole number, "
                      "e.g. 1024 or 1KiB", param, ctx)
        return int(m[1]) * (1024 if m[2] else 1)


MAX_TEXT_HELP = ("Most .text bytes the tuned routine may have (1024, 1KiB): a point whose "
                 "routine has more ranks after every point that has not, is not proved, "
                 "cannot win, and is shown as pruned (\"text N B > max M B\").  It applies to "
                 "the routine the sweep tunes (__asm_copy_to_user for copy_user, whose "
                 "code __asm_copy_from_user shares; __clear_user; memcpy; memset) and to no "
                 "other: those are the same in every point.  Counted as measure.size does: "
                 "the symbol's st_size, fault exits included, __ex_table not.")


VECTOR_STATE_HELP = ("Share of vector calls that find the user's vector state dirty: clean (0, "
                     "the default: the kernel vector section only switches the unit on and off), "
                     "dirty (1: it saves and restores the user's vector registers and CSRs too, "
                     "about 200 cycles on x60 and x280), or a number from 0 to 1 (0.25).  It "
                     "prices the section around each vector call of a point with a `vector` line "
                     "(shim/vector_section.S, as bench/tune/vector_threshold.py measures it), so it "
                     "moves the threshold the tuner picks.  Evaluations are kept per state: a "
                     "store's results under one state are never reused for another.")


# piped, a stage's count is reported about this many times
PIPED_STEPS = 20


@click.group(cls=_TuneGroup, epilog=EXIT_HELP)
def tune() -> None:
    """Search a sweep's strategy space (see `copygen tune --help`)."""


def _say_plan(file: str, p, listed: bool) -> None:
    """The sweep's size first, then one line per reason points were pruned
    for, with its count (the most common first); `listed`: each pruned
    point under its reason."""
    click.echo(f"{file}: sweep `{p.space.sweep}` over {p.space.kind} {p.space.routine}: "
               f"{len(p.points)} points ({len(p.space.pruned)} pruned), {len(p.codes)} distinct routines",
               err=True)
    by_reason: dict[str, list[str]] = {}
    for label, why in p.space.pruned:
        by_reason.setdefault(why, []).append(label)
    for why, labels in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        many = f"{len(labels)} point{'s' if len(labels) > 1 else ''}"
        if listed:
            click.echo(f"pruned {many}: {why}", err=True)
            for label in labels:
                click.echo(f"    {label}", err=True)
        else:
            click.echo(f"pruned {many}: {why} (e.g. {labels[0]}; --dry-run lists them)", err=True)


@tune.command(RUN, cls=_Walk, hidden=True, epilog=EXIT_HELP)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--sweep", default=None, help="The sweep to walk (default: the file's only sweep).")
@click.option("--profile", default=None, help="Cost profile (default: the swept routine's target profile).")
@click.option("--workload", default="network", show_default=True, help="Size distribution, as for `copygen rank`.")
@click.option("--align-mix", default="spec", show_default=True, type=click.Choice(list(ALIGN_MIXES)),
              help="Alignment mix of (src, dst) offsets, as for `copygen rank`.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1,
              help="Points evaluated at once, each in a local worker process; each proof of the "
                   "top K spreads its queries over as many [default: 1: the run stays in one "
                   "process (a sweep runs for long, and takes more cores only when told); up to "
                   "the cores speeds a large one].")
@click.option("--dask", default=None, metavar="ADDRESS",
              help="Evaluate on an existing Dask distributed scheduler (tcp://host:port).")
@click.option("--db", default=None, type=click.Path(dir_okay=False),
              help="The results store [default: build/tune/<FILE's stem>.tune.db, under the "
                   "current directory, as the build cache].")
@click.option("--top", type=click.IntRange(min=0), default=5, show_default=True,
              help="Prove this many of the best (the benched entry point of each; every entry "
                   "point, both copy directions, of the best until one has them all: only such a "
                   "point is proved and can win); 0 ranks without proving, and names no winner.")
@click.option("--show", "shown", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rows of the ranked table.")
@click.option("--baseline", "baselines", multiple=True, type=click.Path(dir_okay=False),
              help="A .copy file whose routine of the same kind is shown beside the ranking, or a "
                   "kernel assembly file that defines it (arch/riscv/lib/memset.S, assembled "
                   "against copygen's kernel-header shim); repeatable.")
@click.option("--guard", "guards", multiple=True, type=click.Path(dir_okay=False),
              help="A routine the winner must be at least as fast as in every cell of the size x "
                   "alignment grid: a .copy file's routine of the swept kind, or a kernel .S file that "
                   "defines it.  A point slower than a guard in some cell ranks after every point "
                   "that is not, and cannot win.  Shown as a baseline too; repeatable.")
@click.option("--guard-kernel-tree", "guard_trees", multiple=True, type=click.Path(file_okay=False),
              help="A Linux tree whose own file of the swept routine guards it, as --guard "
                   "would: arch/riscv/lib/memcpy.S or memset.S for a string sweep, uaccess.S for "
                   "copy_user and clear_user (read in place, never copied); repeatable.")
@click.option("--max-text", type=ByteCount(), default=None, help=MAX_TEXT_HELP)
@click.option("--vector-state", default="clean", show_default=True, metavar="clean|dirty|SHARE",
              help=VECTOR_STATE_HELP)
@click.option("--report", "report_dir", default=None, type=click.Path(file_okay=False),
              help="Write report.md, heat maps, a Pareto plot of cycles against .text bytes, "
                   "results.csv/json and winner.copy here.")
@click.option("--dry-run", is_flag=True,
              help="Say how many points and distinct routines there are, list the pruned points "
                   "under each reason, then stop.")
@click.option("--json", "as_json", is_flag=True, help="Print the ranking as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the ranking as CSV.")
@click.option("--measured", "measured_files", multiple=True, type=click.Path(dir_okay=False),
              help=MEASURED_HELP)
@click.option("--build-cache", default="build/tune", show_default=True, type=click.Path(file_okay=False),
              help="Built ELFs, kept under a hash of the emitted code, shim and toolchain.")
@click.option("--proof-cache", default="build/proofs", show_default=True, type=click.Path(file_okay=False),
              help="Reports kept under a hash of the routine's machine code (shared with verify).")
@command("tune")
def run_cmd(file, sweep, profile, workload, align_mix, jobs, dask, db, top, shown, baselines,
            guards, guard_trees, max_text, vector_state, report_dir, dry_run, as_json, as_csv, measured_files,
            build_cache, proof_cache) -> int:
    """Search the strategy space of a sweep in FILE.

    A sweep tunes one copy_user or clear_user routine, or the memcpy or
    memset of a string block (`sweep S for LIB.memcpy`).  Expands the
    sweep (pruning points whose values do not go together), builds every
    point once (points that emit the same routine are one evaluation),
    benches each in the emulator under the workload and a size x alignment
    grid, measures each routine's .text bytes, ranks them by expected
    cycles per call, proves the top K with the full contract (a point is
    proved when every entry point of it is: both directions of a user
    copy, every function of a string block), and keeps
    everything in an SQLite store (--db) committed point by point: a killed
    run started again redoes nothing.
    """
    if as_json and as_csv:
        raise CopygenError("--json and --csv are exclusive", hint="pick one output format")
    _check_measured(measured_files)
    named_files(profile=profile, workload=workload)
    make_workload(workload, align_mix)                        # a bad workload fails here
    vector_dirty = parse_vector_state(vector_state)
    output_file(db or default_db(file), "--db")
    for path, option in ((report_dir, "--report"), (build_cache, "--build-cache"),
                         (proof_cache, "--proof-cache")):
        if path:
            output_dir(path, option)
    req = Request(file, sweep, profile, workload, align_mix, jobs, dask, db, top, shown, tuple(baselines),
                  tuple(guards), tuple(guard_trees), report_dir, dry_run, build_cache, proof_cache,
                  max_text, vector_dirty)
    watch = Watch(planned=lambda p: _say_plan(file, p, listed=dry_run),
                  tell=lambda message: click.echo(message, err=True), stage=_stage)
    p, ranking = tune_sweep(req, watch)
    if ranking is None:
        if as_json:
            envelope("tune", True, dry_run=True, points=len(p.points), distinct=len(p.codes),
                     pruned=[{"point": label, "reason": why} for label, why in p.space.pruned])
        return 0
    _print(ranking, as_json, as_csv, on_board(ranking, measured_files))
    return 0


def _check_measured(files) -> None:
    """Each file reads and is a board's, before anything runs."""
    for f in files:
        measured.load([f], "")


def _board_lines(board: dict) -> list[str]:
    lines = []
    for label, b in board.items():
        said = (f"expected {b['expected_cycles']:.1f} cycles per call as measured"
                if b["expected_cycles"] is not None else "the rest modelled only")
        modelled = f" (modelled: {b['modelled_cycles']:.1f})" if b["modelled_cycles"] is not None else ""
        lines.append(f"{label} ({b['source']}): {b['share']:.0%} of the workload's weight {b['on']}; "
                     f"{said}{modelled}")
    return lines


@contextlib.contextmanager
def _stage(description: str, total: int | None):
    """A stage of the run as a progress bar on a terminal: step(n) advances
    it, step(text) says what it is doing.  Piped, one line for the stage,
    one for each thing it says it is doing (a proof), and one per
    evaluated point (per twentieth of the stage's count, when larger)."""
    if not sys.stderr.isatty():
        click.echo(f"tune: {description}" + (f" ({total})" if total else ""), err=True)
        every = max(1, (total or 0) // PIPED_STEPS)
        done, said = [0], [0]

        def step(x):
            if isinstance(x, str):
                click.echo(f"tune: {x}", err=True)
                return
            done[0] += x
            if x and (done[0] - said[0] >= every or done[0] == total):
                said[0] = done[0]
                click.echo(f"tune: {description}: {done[0]}" + (f" of {total}" if total else "")
                           + " evaluated", err=True)
        yield step
        return
    with progress() as bar:
        task = bar.add_task(description, total=total)
        yield lambda x: bar.update(task, description=x) if isinstance(x, str) else bar.advance(task, x)


def _print(r: Ranking, as_json: bool, as_csv: bool, board: dict | None = None) -> None:
    pruned = [p for p in r.rows if p.get("pruned")]
    if r.written:
        click.echo(f"wrote {', '.join(str(m) for m in r.written)}", err=True)
    win = r.winner
    if as_json:
        envelope("tune", True, db=r.db, run=r.meta, rows=r.table, max_text=r.max_text,
                 vector_state=report.vector_state(r.meta),
                 pruned=[{"point": p["label"], "reason": p["pruned"]} for p in pruned],
                 baselines={b: {k: v for k, v in e.items() if k != "grid"} for b, e in r.baselines.items()},
                 winner=None if win is None else {"point": win["point"], "label": win["label"],
                                                  "expected_cycles": win["expected"],
                                                  "text_bytes": win["text_bytes"],
                                                  "entry_points": win.get("entry_points"),
                                                  "text": win["text"]},
                 measured=board)
        return
    if as_csv:
        click.echo(report.csv_text(r.table), nl=False)
        return
    print_tables(report.rich_table(f"copygen tune: {r.meta['sweep']} on {r.meta['profile']} "
                                   f"({r.meta['workload']}{report.vector_note(r.meta)})",
                                   r.table, r.baselines, plain_tables()))
    console = table_console()
    if pruned:
        console.print(f"pruned by --max-text {r.max_text} B: {len(pruned)} of "
                      f"{sum(p['expected'] is not None for p in r.rows)} evaluated points "
                      f"(e.g. {pruned[0]['label']}: {pruned[0]['pruned']})")
    if win:
        entries = ", ".join(report.short_name(e) for e in win.get("entry_points") or [])
        console.print(f"winner: {win['label']} ({win['expected']:.1f} expected cycles; proved"
                      + (f": {entries})" if entries else ")"))
    elif any(p.get("verdict") == "proved" for p in pruned):
        console.print(f"no winner: every point proved has more than --max-text {r.max_text} B "
                      "of .text (or fails a guard)")
    elif not any(p.get("verdict") == "proved" for p in r.rows) and any(
            p.get("verdict") not in (None, "proved") for p in r.rows):
        console.print("no winner: no point tried has every entry point proved (the proof "
                      "column says which are)")
    elif r.guards:
        console.print(f"no winner: no proved point is as fast as "
                      f"{', '.join(report.shown_names(r.guards).values())} in every cell "
                      "(the proof column says how many cells are slower)")
    elif r.ranked_only:
        console.print("no winner: --top 0 ranks without proving (give --top K to prove the best K)")
    else:
        console.print("no winner: no evaluated point is proved yet")
    for line in _board_lines(board or {}):
        console.print(line)


@tune.command("show", epilog=exit_help(EXIT_OK, EXIT_INPUT))
@click.argument("db", type=click.Path(dir_okay=False))
@click.option("--run", "run_id", default=None, help="Which run (default: the latest).")
@click.option("--show", "shown", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rows of the ranked table.")
@click.option("--report", "report_dir", default=None, type=click.Path(file_okay=False),
              help="Write report.md, heat maps, a Pareto plot of cycles against .text bytes, "
                   "results.csv/json and winner.copy here.")
@click.option("--max-text", type=ByteCount(), default=None,
              help="Rank under this .text limit instead of the run's own (see `copygen tune "
                   "--help`); a point the run left unproved, being over its own limit, shows as not proved.")
@click.option("--json", "as_json", is_flag=True, help="Print the ranking as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the ranking as CSV.")
@click.option("--measured", "measured_files", multiple=True, type=click.Path(dir_okay=False),
              help=MEASURED_HELP)
@command("tune")
def show(db, run_id, shown, report_dir, max_text, as_json, as_csv, measured_files) -> int:
    """Render the ranking of a store again, without computing anything."""
    if report_dir:
        output_dir(report_dir, "--report")
    _check_measured(measured_files)
    ranking = show_store(db, run_id, shown, report_dir, max_text)
    _print(ranking, as_json, as_csv, on_board(ranking, measured_files))
    return 0
