"""`copygen check` and `copygen build`: the front end and the build pipeline.

Role: command-line glue over gen.front.validate and gen.build; passes the cost
profile names emu knows to the validator, and refuses two inputs that would
be built into the same directory.  May import click, gen, emu.timing.profile,
copygen.errors, copygen.output.
"""
from __future__ import annotations

from pathlib import Path

import click

from copygen.emu.timing.profile import available
from copygen.gen.build import build_file
from copygen.errors import CopygenError, Loc
from copygen.gen.front.validate import load_file
from copygen.output import (EXIT_HELP, EXIT_INPUT, EXIT_OK, command, envelope, exit_help, os_error,
                            output_dir, print_warnings)


def _each(files, as_json, fn):
    """Run fn on every file; an error in one does not stop the others.
    Returns (results, worst exit status); a failed file's result holds its
    error."""
    results, status = [], 0
    for f in files:
        try:
            results.append(fn(f))
        except (CopygenError, OSError) as raw:
            err = os_error(raw) if isinstance(raw, OSError) else raw
            status = max(status, err.exit_code)
            results.append({"file": f, "ok": False, "error": err.as_dict()})
            click.echo(err.render(), err=True)
    return results, status


def _first_error(results) -> dict:
    """The envelope's `error` when a file failed: the first one's (each
    file's own stays in its result)."""
    failed = [r["error"] for r in results if not r["ok"]]
    return {"error": failed[0]} if failed else {}


def _output_clash(files, out: Path) -> CopygenError | None:
    """Two different inputs with the same stem would be built into the same
    OUT/<stem>/, the second silently replacing the first."""
    first: dict[str, str] = {}
    for f in files:
        stem = Path(f).stem
        other = first.setdefault(stem, f)
        if Path(other).resolve() != Path(f).resolve():
            return CopygenError(f"{other} and {f} would both be built into {out / stem}/",
                                Loc(f), hint="build them one at a time with different -o, "
                                "or rename one")
    return None


@click.command(epilog=exit_help(EXIT_OK, EXIT_INPUT))
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@command("check")
def check(files, as_json) -> int:
    """Parse and validate FILES; print errors with file:line:col."""
    def one(f):
        st = load_file(f, available())
        print_warnings(st.warnings)
        if not as_json:
            click.echo(f"{f}: ok ({', '.join(st.routines())})")
        return {"file": f, "ok": True, "routines": st.routines(),
                "warnings": [w.as_dict() for w in st.warnings]}
    results, status = _each(files, as_json, one)
    if as_json:
        envelope("check", status == 0, **_first_error(results), results=results)
    return status


@click.command(epilog=EXIT_HELP)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--out", "out", default="out", show_default=True,
              type=click.Path(file_okay=False), help="Output root: one directory per file.")
@click.option("--no-link", is_flag=True, help="Only emit sources; do not run the toolchain.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@command("build")
def build(files, out, no_link, as_json) -> int:
    """Emit uaccess.S and string.c for FILES, assemble, compile and link them.

    Writes OUT/<name>/uaccess.S, string.c, include/ (the kernel-macro shim),
    copygen.ld, the objects and OUT/<name>/<name>.elf.  CROSS_COMPILE selects
    the toolchain (default riscv64-linux-gnu-).  string.c is compiled with
    the flags Kbuild gives arch/riscv/lib/string.o in a portable kernel,
    then KCFLAGS from the environment, as Kbuild appends them.
    """
    clash = _output_clash(files, Path(out))
    if clash:
        raise clash
    output_dir(out, "-o")

    def one(f):
        res = build_file(f, Path(out), link=not no_link, profiles=available())
        print_warnings(res.warnings)
        if not as_json:
            made = [p.name for p in res.files] + ([res.elf.name] if res.elf else [])
            click.echo(f"{f}: {res.outdir}/ {{{', '.join(made)}}}")
        return {"file": f, "ok": True, **res.as_dict()}
    results, status = _each(files, as_json, one)
    if as_json:
        envelope("build", status == 0, **_first_error(results), results=results)
    return status
