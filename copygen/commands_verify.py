"""`copygen verify`: the verifier's command.

Role: command-line glue over verify.inputs, verify.prove and verify.bounded;
prints a clause x routine table (or the JSON envelope).
May import click, rich, verify, gen.errors, copygen.output.
"""
from __future__ import annotations

from pathlib import Path

import click

from copygen.gen.errors import CopygenError
from copygen.output import (EXIT_HELP, EXIT_VIOLATED, ROUTINE_HELP, command, envelope, select_routines,
                            table_console)
from copygen.verify.bounded import apply_bounded
from copygen.verify.clauses import CLAUSES
from copygen.verify.inputs import linked_elf, routines
from copygen.verify.parallel import default_jobs
from copygen.verify.prove import MEMMOVE_BOUND, STAGES, prove_routine

MARK = {"proved": "[green]proved[/]", "violated": "[red]VIOLATED[/]", "unknown": "[yellow]unknown[/]"}


def _prove(elf, sym, kind, bounded, jobs, stage):
    # with --bounded every routine gets the bounded run; without it, memmove
    # still gets it for what its proof leaves unknown
    rep = prove_routine(str(elf), sym, kind, jobs=jobs,
                        memmove_bound=0 if bounded else MEMMOVE_BOUND, stage=stage)
    if bounded:
        apply_bounded(str(elf), rep, bounded, jobs)
    return rep


def _short(symbol: str) -> str:
    """copy_to_user for __asm_copy_to_user: the table stays narrow."""
    return symbol.removeprefix("__asm_").lstrip("_")


def _table(reports, console) -> None:
    """One row per clause, one column per routine (fits 80 columns)."""
    from rich.table import Table
    clauses = [c for c in CLAUSES if any(c in r.status for r in reports)]
    t = Table(title="copygen verify")
    t.add_column("clause")
    for r in reports:
        t.add_column(_short(r.symbol), justify="center")
    for c in clauses:
        cells = []
        for r in reports:
            st = r.status.get(c)
            cells.append("-" if st is None else MARK.get(st, f"[cyan]{st}[/]"))
        t.add_row(c, *cells)
    t.add_row("seconds", *[f"{r.seconds:.0f}" for r in reports])
    console.print(t)
    for r in reports:
        for c, st in r.status.items():
            if st != "proved":
                console.print(f"{r.symbol} {c} ({CLAUSES[c]}): {MARK.get(st, st)}: {r.detail.get(c, '')}")


def _progress(console):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True)


@click.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--routine", "only", multiple=True, help=ROUTINE_HELP)
@click.option("--bounded", type=click.IntRange(min=0), default=0, metavar="N",
              help="Also run every n <= N, all 64 alignment pairs and every fault offset "
                   "(memmove: every overlap of src and dst, both directions; what memmove's "
                   "proof leaves unknown is run for n <= 64 without this).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Processes each proof spreads its queries over [default: the cores].")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.option("--workdir", default="build/verify", show_default=True, type=click.Path(file_okay=False),
              help="Where a .copy or .S input is built into the ELF that is proved.")
@command("verify")
def verify(file, only, bounded, jobs, as_json, workdir) -> int:
    """Prove FILE's copy routines correct with Z3, for every n.

    FILE is a .copy strategy, a kernel-style uaccess.S (assembled against
    copygen's shim headers), an object or a linked ELF.  Each clause of the
    user-copy contract is reported on its own: proved (for every n),
    violated (with a counterexample replayed in the emulator), unknown
    (the solver or the inferred loop invariants were not strong enough) or,
    with --bounded N, holding for every n <= N.  memmove is proved for
    every overlap of its buffers, in both directions; a clause its proof
    leaves unknown is run for every overlap and every n <= 64 (or N), and
    reported "holds for n <= 64" when every run keeps it.
    """
    from rich.console import Console
    elf = linked_elf(file, Path(workdir) / Path(file).stem)
    present = routines(elf)
    wanted = select_routines([s for s, _ in present], only, file)
    todo = [(s, k) for s, k in present if s in wanted]
    if not todo:
        raise CopygenError(f"{file} defines none of the routines copygen verifies",
                           hint="expected __asm_copy_to_user, __clear_user, memcpy, memset ...")
    jobs = max(1, jobs or default_jobs())
    reports = []
    with _progress(Console(stderr=True)) as bar:
        task = bar.add_task("proving", total=len(todo) * len(STAGES))
        for sym, kind in todo:
            done = bar.tasks[0].completed

            def stage(name, sym=sym, base=done):
                bar.update(task, description=f"{sym}: {name}",
                           completed=base + STAGES.index(name))
            reports.append(_prove(elf, sym, kind, bounded, jobs, stage))
            bar.update(task, completed=done + len(STAGES))
    violated = any(st == "violated" for r in reports for st in r.status.values())
    if as_json:
        envelope("verify", not violated, file=file, elf=str(elf), reports=[r.as_dict() for r in reports])
    else:
        _table(reports, table_console())
    return EXIT_VIOLATED if violated else 0
