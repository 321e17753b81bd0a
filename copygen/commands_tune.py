"""`copygen tune FILE` and `copygen tune show DB`: the autotuner's commands.

Role: command-line glue over tune.run (plan, evaluate, prove), tune.store
and tune.report.  May import click, rich, gen, emu.profile, measure.workload,
tune, verify.cache, copygen.output.
"""
from __future__ import annotations

import json
from pathlib import Path

import click

from copygen.emu.profile import available, load_profile
from copygen.gen.errors import CopygenError
from copygen.gen.parse import read_source
from copygen.gen.validate import STRING_FNS, load_file
from copygen.measure.workload import ALIGN_MIXES, make_workload
from copygen.output import (EXIT_HELP, command, envelope, output_dir, output_file, plain_tables, print_tables,
                            progress, table_console)
from copygen.tune import report
from copygen.tune.evaluate import Job, evaluate
from copygen.tune.run import code_key, evaluate_all, plan, prove_top, ranked, winner
from copygen.tune.store import Store, eval_workload


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


@click.group(cls=_TuneGroup, epilog=EXIT_HELP)
def tune() -> None:
    """Search a sweep's strategy space (see `copygen tune --help`)."""


def _default_db(path: str) -> Path:
    p = Path(path)
    return p.with_name(p.stem + ".tune.db")


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
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Local worker processes.")
@click.option("--dask", default=None, metavar="ADDRESS",
              help="Evaluate on an existing Dask distributed scheduler (tcp://host:port).")
@click.option("--db", default=None, type=click.Path(dir_okay=False),
              help="The results store [default: FILE's name with .tune.db, next to it].")
@click.option("--top", type=click.IntRange(min=0), default=5, show_default=True,
              help="Prove this many of the best; 0 ranks without proving, and names no winner.")
@click.option("--show", "shown", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rows of the ranked table.")
@click.option("--baseline", "baselines", multiple=True, type=click.Path(dir_okay=False),
              help="A .copy file whose routine of the same kind is shown beside the ranking; repeatable.")
@click.option("--guard", "guards", multiple=True, type=click.Path(dir_okay=False),
              help="A .copy file the winner must not be slower than in any cell of the size x "
                   "alignment grid; points that are rank after those that are not.  Shown as a "
                   "baseline too; repeatable.")
@click.option("--report", "report_dir", default=None, type=click.Path(file_okay=False),
              help="Write report.md, heat maps, a Pareto plot, results.csv/json and winner.copy here.")
@click.option("--dry-run", is_flag=True,
              help="Say how many points and distinct routines there are, list the pruned points "
                   "under each reason, then stop.")
@click.option("--json", "as_json", is_flag=True, help="Print the ranking as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the ranking as CSV.")
@click.option("--build-cache", default="build/tune", show_default=True, type=click.Path(file_okay=False),
              help="Built ELFs, kept under a hash of the emitted code, shim and toolchain.")
@click.option("--proof-cache", default="build/proofs", show_default=True, type=click.Path(file_okay=False),
              help="Reports kept under a hash of the routine's machine code (shared with verify).")
@command("tune")
def run_cmd(file, sweep, profile, workload, align_mix, jobs, dask, db, top, shown, baselines,
            guards, report_dir, dry_run, as_json, as_csv, build_cache, proof_cache) -> int:
    """Search the strategy space of a sweep in FILE.

    A sweep tunes one copy_user or clear_user routine, or the memcpy or
    memset of a string block (`sweep S for LIB.memcpy`).  Expands the
    sweep (pruning points whose values do not go together), builds every
    point once (points that emit the same routine are one evaluation),
    benches each in the emulator under the workload and a size x alignment
    grid, ranks them by expected cycles per call, proves the top K with the
    full contract, and keeps everything in an SQLite store (--db) committed
    point by point: a killed run started again redoes nothing.
    """
    if as_json and as_csv:
        raise CopygenError("--json and --csv are exclusive", hint="pick one output format")
    make_workload(workload, align_mix)                        # a bad workload fails here
    output_file(db or _default_db(file), "--db")
    for path, option in ((report_dir, "--report"), (build_cache, "--build-cache"),
                         (proof_cache, "--proof-cache")):
        if path:
            output_dir(path, option)
    prof = _profile_name(file, sweep, profile)
    load_profile(prof)
    p = plan(file, sweep, prof, workload, align_mix, available())
    base_names = list(dict.fromkeys(_baseline_check(b, p.space.kind) for b in baselines + guards))
    db_path = Path(db) if db else _default_db(file)
    _say_plan(file, p, listed=dry_run)
    if dry_run:
        if as_json:
            envelope("tune", True, dry_run=True, points=len(p.points), distinct=len(p.codes),
                     pruned=[{"point": label, "reason": why} for label, why in p.space.pruned])
        return 0
    store = _open_store(db_path)
    try:
        store.add_run(p.run, file, p.space.sweep, p.space.routine, p.space.kind, prof, workload,
                      {"align_mix": align_mix, "baselines": base_names, "guards": list(guards)})
        store.add_points(p.run, p.points)
        with progress() as bar:
            task = bar.add_task(f"tune {p.space.sweep}", total=len(p.codes))
            ran = evaluate_all(store, p, prof, workload, align_mix, build_cache, jobs, dask,
                               lambda n: bar.advance(task, n))
        click.echo(f"evaluated {ran} routines ({len(p.codes) - ran} from the store {db_path})", err=True)
        base = _baselines(store, base_names, p.space.kind, prof, workload, align_mix, build_cache)
        if top:
            with progress() as bar:
                task = bar.add_task("proving", total=None)
                prove_top(store, p.run, p.space.kind, top, proof_cache, jobs,
                          lambda label: bar.update(task, description=f"proving {label}"),
                          {g: base[g] for g in guards})
        _render(store, p.run, base, shown, report_dir, as_json, as_csv, str(db_path), guards,
                ranked_only=top == 0)
    finally:
        store.close()
    return 0


def _profile_name(file: str, sweep: str | None, given: str | None) -> str:
    """--profile, else the profile of the swept routine's target."""
    if given:
        return given
    st = load_file(file, available())
    chosen = [s for s in st.sweeps if sweep in (None, s.name)]
    routine = chosen[0].routine.partition(".")[0] if chosen else None
    for r in (st.copy_user, st.clear_user, st.string):
        if r is not None and r.name == routine:
            return r.target.profile
    return st.targets[0].profile


def _open_store(path: Path) -> Store:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return Store(path)
    except OSError as err:
        raise CopygenError(f"cannot open the store {path}: {err.strerror}",
                           hint="give --db a writable path") from None


def _baseline_check(path: str, kind: str) -> str:
    st = load_file(path, available())
    if getattr(st, "string" if kind in STRING_FNS else kind) is None:
        what = "string block" if kind in STRING_FNS else f"{kind} routine"
        raise CopygenError(f"baseline {path} has no {what} (for its {kind})",
                           hint="give a file that defines one")
    return path


def _baselines(store: Store, names: list[str], kind: str, profile: str, workload: str,
               align_mix: str, cache: str) -> dict[str, dict]:
    out = {}
    for name in names:
        text = read_source(name)
        key = code_key(text, kind)
        row = store.eval_of(key, profile, eval_workload(workload, align_mix))
        if row is None:
            row = evaluate(Job(key, text, kind, profile, workload, align_mix, cache))
            store.add_eval(key, profile, eval_workload(workload, align_mix), row)
        out[name] = row
    return out


def _render(store: Store, run: str, base: dict, shown: int, report_dir, as_json, as_csv, db: str,
            guards=(), ranked_only: bool = False) -> None:
    from copygen.verify.cache import prover_fingerprint
    rows = ranked(store.results(run, prover_fingerprint()), {g: base[g] for g in guards if g in base})
    meta = next(r for r in store.runs() if r["run"] == run)
    win = winner(rows)
    table = report.table_rows(rows, base, shown)
    if report_dir:
        made = report.write_report(Path(report_dir), meta, rows, base, win, shown)
        click.echo(f"wrote {', '.join(str(m) for m in made)}", err=True)
    if as_json:
        envelope("tune", True, db=db, run={**meta, "args": json.loads(meta["args"])}, rows=table,
                 baselines={b: {k: v for k, v in e.items() if k != "grid"} for b, e in base.items()},
                 winner=None if win is None else {"point": win["point"], "label": win["label"],
                                                  "expected_cycles": win["expected"],
                                                  "text": win["text"]})
        return
    if as_csv:
        click.echo(report.csv_text(table), nl=False)
        return
    print_tables(report.rich_table(f"copygen tune: {meta['sweep']} on {meta['profile']} "
                                   f"({meta['workload']})", table, base, plain_tables()))
    console = table_console()
    if win:
        console.print(f"winner: {win['label']} ({win['expected']:.1f} expected cycles; proved)")
    elif guards:
        console.print(f"no winner: no proved point is as fast as {', '.join(guards)} in every cell "
                      "(the proof column says how many cells are slower)")
    elif ranked_only:
        console.print("no winner: --top 0 ranks without proving (give --top K to prove the best K)")
    else:
        console.print("no winner: no evaluated point is proved yet")


@tune.command("show", epilog=EXIT_HELP)
@click.argument("db", type=click.Path(dir_okay=False))
@click.option("--run", "run_id", default=None, help="Which run (default: the latest).")
@click.option("--show", "shown", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rows of the ranked table.")
@click.option("--report", "report_dir", default=None, type=click.Path(file_okay=False),
              help="Write report.md, heat maps, a Pareto plot, results.csv/json and winner.copy here.")
@click.option("--json", "as_json", is_flag=True, help="Print the ranking as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the ranking as CSV.")
@command("tune")
def show(db, run_id, shown, report_dir, as_json, as_csv) -> int:
    """Render the ranking of a store again, without computing anything."""
    if report_dir:
        output_dir(report_dir, "--report")
    store = Store.open_existing(db)
    try:
        runs = store.runs()
        if not runs:
            raise CopygenError(f"{db} holds no run")
        meta = next((r for r in runs if r["run"] == run_id), None) if run_id else runs[-1]
        if meta is None:
            raise CopygenError(f"no run {run_id} in {db}", hint=f"runs: {', '.join(r['run'] for r in runs)}")
        args = json.loads(meta["args"])
        base = {}
        for name in args.get("baselines", []):
            key = code_key(read_source(name), meta["kind"]) if Path(name).is_file() else None
            row = store.eval_of(key, meta["profile"], eval_workload(
                meta["workload"], args.get("align_mix", "spec"))) if key else None
            if row:
                base[name] = row
        _render(store, meta["run"], base, shown, report_dir, as_json, as_csv, db,
                args.get("guards", []))
    finally:
        store.close()
    return 0
