"""`copygen verify`: the command line of the verifier (registered by gen.cli).

Exit status: 0 no clause violated, 3 some clause violated, 2 bad input,
1 a failing external tool.  May import click, rich, verify.*, gen.errors.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from verify.clauses import CLAUSES

MARK = {"proved": "[green]proved[/]", "violated": "[red]VIOLATED[/]", "unknown": "[yellow]unknown[/]"}


def _prove(elf, sym, kind, bounded, jobs):
    from verify.prove import MEMMOVE_BOUND, prove_routine
    # with --bounded every routine gets the bounded run; without it, memmove
    # still gets it for what its proof leaves unknown
    rep = prove_routine(str(elf), sym, kind, jobs=jobs,
                        memmove_bound=0 if bounded else MEMMOVE_BOUND)
    if bounded:
        from verify.bounded import apply_bounded
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
    mark = {"proved": "[green]proved[/]", "violated": "[red]VIOLATED[/]",
            "unknown": "[yellow]unknown[/]"}
    for c in clauses:
        cells = []
        for r in reports:
            st = r.status.get(c)
            cells.append("-" if st is None else mark.get(st, f"[cyan]{st}[/]"))
        t.add_row(c, *cells)
    t.add_row("seconds", *[f"{r.seconds:.0f}" for r in reports])
    console.print(t)
    for r in reports:
        for c, st in r.status.items():
            if st != "proved":
                console.print(f"{r.symbol} {c} ({CLAUSES[c]}): {MARK.get(st, st)}: {r.detail.get(c, '')}")


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--routine", "only", help="Verify only this symbol (e.g. __asm_copy_to_user).")
@click.option("--bounded", type=int, default=0, metavar="N",
              help="Also run every n <= N, all 64 alignment pairs and every fault offset "
                   "(memmove: every overlap of src and dst, both directions; what memmove's "
                   "proof leaves unknown is run for n <= 64 without this).")
@click.option("-j", "--jobs", type=int, default=None,
              help="Processes each proof spreads its queries over [default: the cores].")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.option("--workdir", default="build/verify", show_default=True, type=click.Path(file_okay=False))
def verify(file, only, bounded, jobs, as_json, workdir) -> None:
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
    from rich.progress import Progress

    from gen.errors import CopygenError
    from verify.inputs import linked_elf, routines
    from verify.parallel import default_jobs
    console = Console(stderr=as_json)
    try:
        elf = linked_elf(file, Path(workdir) / Path(file).stem)
        todo = routines(elf, only)
    except CopygenError as err:
        click.echo(err.render(), err=True)
        sys.exit(err.exit_code)
    reports = []
    jobs = max(1, jobs or default_jobs())
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("proving", total=len(todo))
        for sym, kind in todo:
            bar.update(task, description=f"proving {sym}")
            reports.append(_prove(elf, sym, kind, bounded, jobs))
            bar.advance(task)
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in reports], indent=2))
    else:
        _table(reports, console)
    sys.exit(3 if any(st == "violated" for r in reports for st in r.status.values()) else 0)


commands = [verify]
