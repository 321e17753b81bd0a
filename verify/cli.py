"""`copygen verify`: the command line of the verifier (registered by gen.cli).

Exit status: 0 no clause violated, 3 some clause violated, 2 bad input,
1 a failing external tool.  May import click, rich, verify.*, gen.errors.
"""
from __future__ import annotations

import json
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import click

from verify.clauses import CLAUSES

MARK = {"proved": "[green]proved[/]", "violated": "[red]VIOLATED[/]", "unknown": "[yellow]unknown[/]"}


def _prove(args):
    from verify.prove import prove_routine
    elf, sym, kind, bounded = args
    rep = prove_routine(str(elf), sym, kind)
    if bounded:
        from verify.bounded import apply_bounded
        apply_bounded(str(elf), rep, bounded)
    return rep


def _table(reports, console) -> None:
    from rich.table import Table
    clauses = [c for c in CLAUSES if any(c in r.status for r in reports)]
    t = Table(title="copygen verify")
    t.add_column("routine")
    for c in clauses:
        t.add_column(c, justify="center")
    t.add_column("s", justify="right")
    short = {"proved": "[green]✓[/]", "violated": "[red]✗[/]", "unknown": "[yellow]?[/]"}
    for r in reports:
        cells = []
        for c in clauses:
            st = r.status.get(c)
            cells.append("-" if st is None else short.get(st, f"[cyan]≤{st.split()[-1]}[/]"))
        t.add_row(r.symbol, *cells, f"{r.seconds:.0f}")
    console.print(t)
    for r in reports:
        for c, st in r.status.items():
            if st != "proved":
                console.print(f"{r.symbol} {c} ({CLAUSES[c]}): {MARK.get(st, st)}: {r.detail.get(c, '')}")


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--routine", "only", help="Verify only this symbol (e.g. __asm_copy_to_user).")
@click.option("--bounded", type=int, default=0, metavar="N",
              help="Also run every n <= N, all 64 alignment pairs and every fault offset.")
@click.option("-j", "--jobs", type=int, default=2, show_default=True, help="Processes.")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.option("--workdir", default="build/verify", show_default=True, type=click.Path(file_okay=False))
def verify(file, only, bounded, jobs, as_json, workdir) -> None:
    """Prove FILE's copy routines correct with Z3, for every n.

    FILE is a .copy strategy, a kernel-style uaccess.S (assembled against
    copygen's shim headers), an object or a linked ELF.  Each clause of the
    user-copy contract is reported on its own: proved (for every n),
    violated (with a counterexample replayed in the emulator), unknown
    (the solver or the inferred loop invariants were not strong enough) or,
    with --bounded N, holding for every n <= N.
    """
    from rich.console import Console
    from rich.progress import Progress

    from gen.errors import CopygenError
    from verify.inputs import linked_elf, routines
    console = Console(stderr=as_json)
    try:
        elf = linked_elf(file, Path(workdir) / Path(file).stem)
        todo = routines(elf, only)
    except CopygenError as err:
        click.echo(err.render(), err=True)
        sys.exit(err.exit_code)
    reports = []
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("proving", total=len(todo))
        with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
            futs = [pool.submit(_prove, (elf, s, k, bounded)) for s, k in todo]
            for f in as_completed(futs):
                reports.append(f.result())
                bar.advance(task)
    order = [s for s, _ in todo]
    reports.sort(key=lambda r: order.index(r.symbol))
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in reports], indent=2))
    else:
        _table(reports, console)
    sys.exit(3 if any(st == "violated" for r in reports for st in r.status.values()) else 0)


commands = [verify]
