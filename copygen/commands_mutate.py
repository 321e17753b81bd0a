"""`copygen mutate`: the mutation tool's command.

Role: command-line glue over mutate.judge: plants every single-edit bug of
the chosen kinds in a uaccess.S and prints the kill rate the qemu oracle
gives.  May import click, mutate, copygen.errors, copygen.output.
"""
from __future__ import annotations

from pathlib import Path

import click

from copygen.errors import CopygenError, Loc
from copygen.mutate.edits import KINDS
from copygen.mutate.judge import kill_table
from copygen.output import EXIT_HELP, command, envelope, progress, table_console

COLUMNS = ("mutants", "killed", "equivalent", "blind", "unassembled", "expected_clause_seen", "kill_rate")


@click.command(epilog=EXIT_HELP)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--kinds", help=f"Comma-separated mutation kinds (default: all): {', '.join(KINDS)}.")
@click.option("--include", type=click.Path(file_okay=False, exists=True), default=None,
              help="Include directory to assemble against (default: copygen's shim).")
@click.option("--count", type=click.IntRange(min=1), default=400, show_default=True, help="Random oracle cases per routine.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=2,
              help="Mutants judged at once, each by a thread that assembles it and runs its cases "
                   "under qemu-riscv64 [default: 2: each thread mostly waits for its qemu process, "
                   "so two keep two cores busy; raise it up to the cores].")
@click.option("--survivors", is_flag=True, help="List the mutants the oracle did not kill.")
@click.option("--json", "as_json", is_flag=True, help="Print the table and survivors as JSON.")
@command("mutate")
def mutate(file, kinds, include, count, jobs, survivors, as_json) -> int:
    """Plant single-edit bugs in FILE (a uaccess.S) and judge them under qemu.

    Every mutant is assembled, linked with the oracle's harness and run on the
    same cases as the original under qemu-riscv64: "killed" when some case
    behaves differently, "equivalent" when none does, "blind" when only a
    clause the user-mode oracle cannot see (S2, A1) could tell them apart.
    """
    wanted = kinds.split(",") if kinds else None
    for k in wanted or ():
        if k not in KINDS:
            raise CopygenError(f"unknown mutation kind `{k}`", hint=f"kinds: {', '.join(KINDS)}")
    if not Path(file).is_file():
        raise CopygenError(f"no such file: {file}", Loc(file))
    if Path(file).suffix == ".copy":
        raise CopygenError("a strategy, not assembly: mutate plants bugs in a .S", Loc(file),
                           hint=f"copygen build {file} -o DIR, then copygen mutate "
                                f"DIR/{Path(file).stem}/uaccess.S")
    with progress() as bar:
        task = bar.add_task("mutate", total=None)
        said: set[str] = set()

        def tell(stage, done, total):
            bar.update(task, description=stage, completed=done, total=total or None)
            if bar.disable and stage not in said:      # piped: one line per stage
                said.add(stage)
                click.echo(f"mutate: {stage}", err=True)
        table, verdicts = kill_table(Path(file), wanted, Path(include) if include else None,
                                     count, jobs, tell)
    left = [v for v in verdicts if v.status != "killed"]
    if as_json:
        envelope("mutate", True, file=file, kinds=table,
                 survivors=[{"kind": v.mutant.kind, "line": v.mutant.site, "status": v.status,
                             "description": v.mutant.description} for v in left])
        return 0
    from rich.table import Table
    t = Table(title=f"copygen mutate {Path(file).name}")
    t.add_column("kind")
    for c in COLUMNS:
        t.add_column(c.replace("_", " "), justify="right")
    for kind, row in table.items():
        t.add_row(kind, *(str(row[c]) for c in COLUMNS))
    console = table_console()
    console.print(t)
    if survivors:
        for v in left:
            console.print(f"{v.status:12} {v.mutant.kind:32} {v.mutant.description}")
    return 0
