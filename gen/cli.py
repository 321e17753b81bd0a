"""The command line: parse options, call one library function, print.

Exit status: 0 success, 1 an external tool failed, 2 bad input.
May import click, rich, gen.*; later pillars (emu, verify) plug their
commands in through `register` below.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from gen import __version__
from gen.errors import CopygenError


def _print_warnings(warnings) -> None:
    for w in warnings:
        click.echo(w.render(), err=True)


def _fail(err: CopygenError, as_json: bool) -> int:
    if as_json:
        click.echo(json.dumps({"ok": False, "error": err.as_dict()}, indent=2))
    click.echo(err.render(), err=True)
    return err.exit_code


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="copygen")
def main() -> None:
    """copygen: compile copy strategies into RISC-V kernel routines.

    A `.copy` file describes a strategy (threshold, alignment head, unrolled
    word loop, shift copy, tail, fault policy, target core).  copygen emits
    kernel-ready uaccess.S and string.c, builds them with the real RISC-V
    toolchain (${CROSS_COMPILE}gcc/ld), and links one ELF for the emulator
    and the verifier.

    Exit status: 0 ok, 1 an external tool failed, 2 bad input.
    """


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def check(files, as_json) -> None:
    """Parse and validate FILES; print errors with file:line:col."""
    from gen.validate import load_file
    results, status = [], 0
    for f in files:
        try:
            st = load_file(f)
        except CopygenError as err:
            status = max(status, err.exit_code)
            results.append({"file": f, "ok": False, "error": err.as_dict()})
            click.echo(err.render(), err=True)
            continue
        _print_warnings(st.warnings)
        results.append({"file": f, "ok": True, "routines": st.routines(),
                        "warnings": [w.as_dict() for w in st.warnings]})
        if not as_json:
            click.echo(f"{f}: ok ({', '.join(st.routines())})")
    if as_json:
        click.echo(json.dumps(results, indent=2))
    sys.exit(status)


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--out", "out", default="out", show_default=True,
              type=click.Path(file_okay=False), help="Output root: one directory per file.")
@click.option("--no-link", is_flag=True, help="Only emit sources; do not run the toolchain.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def build(files, out, no_link, as_json) -> None:
    """Emit uaccess.S and string.c for FILES, assemble, compile and link them.

    Writes OUT/<name>/uaccess.S, string.c, include/ (the kernel-macro shim),
    copygen.ld, the objects and OUT/<name>/<name>.elf.  CROSS_COMPILE selects
    the toolchain (default riscv64-linux-gnu-).
    """
    from gen.build import build_file
    results, status = [], 0
    for f in files:
        try:
            res = build_file(f, Path(out), link=not no_link)
        except CopygenError as err:
            status = max(status, err.exit_code)
            results.append({"source": f, "ok": False, "error": err.as_dict()})
            click.echo(err.render(), err=True)
            continue
        _print_warnings(res.warnings)
        results.append({"ok": True, **res.as_dict()})
        if not as_json:
            made = [p.name for p in res.files] + ([res.elf.name] if res.elf else [])
            click.echo(f"{f}: {res.outdir}/ {{{', '.join(made)}}}")
    if as_json:
        click.echo(json.dumps(results, indent=2))
    sys.exit(status)


def register(command) -> None:
    """Add a subcommand from another pillar (emu: bench/rank; verify: verify)."""
    main.add_command(command)


def _load_plugins() -> None:
    for module in ("emu.cli", "verify.cli"):
        try:
            mod = __import__(module, fromlist=["commands"])
        except ModuleNotFoundError as err:
            if err.name != module:
                raise
            continue
        for cmd in getattr(mod, "commands", ()):
            main.add_command(cmd)


_load_plugins()
