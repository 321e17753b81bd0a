"""What every command prints: one error renderer, one JSON envelope, one
set of exit statuses, one `--routine` vocabulary, one way to print tables
(fitted to a terminal; off one, one line per row however wide).

With `--json` every command prints exactly one JSON object on stdout, on
success and on failure alike:

    {"schema": 1, "command": "bench", "ok": true, ...the command's fields}
    {"schema": 1, "command": "bench", "ok": false, "error": {...}}

Errors are also rendered for people on stderr (file:line:col, the line, a
caret, a hint).  Library errors that are the user's business (an emulator
oops, a bad workload, an unknown profile) become a CopygenError here, so no
traceback reaches the user; so do click's usage errors (an unknown option,
a missing argument), in the envelope too when --json was given (Main).

SIGTERM unwinds a command like an error (so that what it holds is put back:
a kernel tree's checkout, temporary directories, a pool's workers) and it
ends with one line, "copygen: stopped by SIGTERM", and status 143 (128 + 15,
as a shell reports a process SIGTERM ended).  Each command's --help ends
with the statuses it can return (exit_help).
Role: part of the composition root.  May import click, rich and every layer.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path

import click
from rich.console import Console
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from copygen.emu.errors import EmuError, ProfileError
from copygen.emu.timing.profile import available
from copygen.errors import CopygenError, Loc
from copygen.measure.workload import WorkloadError

SCHEMA = 1

EXIT_OK, EXIT_TOOL, EXIT_INPUT, EXIT_VIOLATED, EXIT_UNKNOWN = 0, 1, 2, 3, 4
EXIT_STOPPED = 128 + signal.SIGTERM
# what a status means when a command gives it no meaning of its own
EXIT_MEANING = {EXIT_OK: "success",
                EXIT_TOOL: "an external tool (assembler, compiler, linker, qemu) failed, its "
                           "stderr shown",
                EXIT_INPUT: "bad input (a located error with a hint)",
                EXIT_STOPPED: "stopped by SIGTERM (one line says so)"}


def exit_help(*codes: int | tuple[int, str]) -> str:
    """The `Exit status:` footer of a command that can return `codes`: a
    number with its common meaning (EXIT_MEANING), or (number, the
    command's own meaning).  Every command can be stopped: EXIT_STOPPED
    closes each footer."""
    meant = dict(c if isinstance(c, tuple) else (c, EXIT_MEANING[c]) for c in codes)
    meant.setdefault(EXIT_STOPPED, EXIT_MEANING[EXIT_STOPPED])
    return "Exit status: " + "; ".join(f"{c} {m}" for c, m in sorted(meant.items())) + "."


# the footer of a command that can fail on its input or on a tool, no more
EXIT_HELP = exit_help(EXIT_OK, EXIT_TOOL, EXIT_INPUT)
# the top-level help's: every status some command returns
EXIT_SUMMARY = exit_help(
    EXIT_OK, EXIT_TOOL, EXIT_INPUT,
    (EXIT_VIOLATED, "verify, patch: a contract clause is violated (a replayed counterexample "
                    "is shown); kunit, patch --test kunit: a KUnit test fails"),
    (EXIT_UNKNOWN, "verify, patch: a clause stays unknown (neither proved nor violated)")) + \
    "  Each command's --help lists the statuses it can return."

# --routine takes a kind name or a symbol, in every command
ROUTINE_KINDS = {
    "copy_to_user": ("__asm_copy_to_user", "__asm_copy_to_user_sum_enabled"),
    "copy_from_user": ("__asm_copy_from_user", "__asm_copy_from_user_sum_enabled"),
    "clear_user": ("__clear_user",),
    "memcpy": ("memcpy", "__memcpy"),
    "memmove": ("memmove", "__memmove"),
    "memset": ("memset", "__memset"),
    "vector_usercopy": ("__asm_vector_usercopy", "__asm_vector_usercopy_sum_enabled"),
    "vector_clear_user": ("__asm_vector_clear_user",),
}
# -j of the commands whose work is proofs (verify, patch)
JOBS_HELP = ("Processes each proof spreads its solver queries over [default: COPYGEN_JOBS if set, "
             "else every core: a proof's queries are independent of each other, and proving is "
             "all the command does meanwhile].")
ROUTINE_HELP = ("Only this routine: a kind (copy_to_user, copy_from_user, clear_user, memcpy, "
                "memmove, memset, vector_usercopy, vector_clear_user) or a symbol "
                "(__asm_copy_to_user, ...); repeatable.")


def kind_of(symbol: str) -> str | None:
    return next((k for k, syms in ROUTINE_KINDS.items() if symbol in syms), None)


def select_routines(present: list[str], wanted: tuple[str, ...], where: str,
                    strict: bool = True) -> list[str]:
    """The symbols of `present` that `wanted` names (all of them when it names
    none), in `present`'s order.  A name no routine answers to is an error
    when `strict`."""
    if not wanted:
        return list(present)
    for w in wanted:
        if w not in ROUTINE_KINDS and kind_of(w) is None:
            raise CopygenError(f"unknown routine `{w}`",
                               hint=f"a kind ({', '.join(ROUTINE_KINDS)}) or one of its symbols")
        hits = [s for s in present if w in (s, kind_of(s))]
        if not hits and strict:
            known = ", ".join(f"{kind_of(s)} ({s})" for s in present) or "none"
            raise CopygenError(f"no routine `{w}` in {where}", hint=f"routines there: {known}")
    return [s for s in present if any(w in (s, kind_of(s)) for w in wanted)]


def envelope(command: str, ok: bool, **fields) -> None:
    """Print the command's one JSON object on stdout."""
    click.echo(json.dumps({"schema": SCHEMA, "command": command, "ok": ok, **fields}, indent=2))


def as_copygen_error(err: Exception) -> CopygenError:
    """A library's own error type, as the user sees it."""
    if isinstance(err, CopygenError):
        return err
    if isinstance(err, WorkloadError):
        return CopygenError(str(err), hint="see `copygen bench --help` / `copygen rank --help` for the syntax")
    if isinstance(err, ProfileError):
        names = ", ".join(available())
        listed = names in str(err)              # the message names them already
        return CopygenError(str(err), hint="give one of those, or the path of a profile's .toml"
                            if listed else f"profiles: {names}, or a path to a .toml")
    if isinstance(err, EmuError):
        return CopygenError(f"emulator: {err}", hint="the generated code misbehaved or the ELF is "
                            "unusable; `copygen build` the file and inspect it")
    raise err


def output_dir(path: str | Path, option: str) -> Path:
    """`path` as a directory a command may create and write into, checked
    before the command does any work, so that a bad path writes nothing."""
    p = Path(path)
    if _exists(p) and not p.is_dir():
        raise CopygenError(f"{option} needs a directory, and this is a file", Loc(str(path)),
                           hint=f"give {option} a directory (it is made when missing)")
    _can_write_in(p, option, path)
    return p


def output_file(path: str | Path, option: str) -> Path:
    """`path` as a file a command may write, checked like output_dir."""
    p = Path(path)
    if p.is_dir():
        raise CopygenError(f"{option} needs a file, and this is a directory", Loc(str(path)),
                           hint=f"give {option} a file name")
    _can_write_in(p.parent, option, path)
    return p


# options that take a name or a file: a value with this ending is a file
FILE_VALUES = {"--profile": ".toml", "--workload": ".csv"}


def named_files(**values) -> None:
    """Options that take a name or a path (--profile u74 or a .toml,
    --workload network or a .csv), given as option_name=value(s): a path
    that is no regular file is a located error, before any work."""
    for name, given in values.items():
        option = "--" + name.replace("_", "-")
        for value in ((given,) if isinstance(given, str) else given or ()):
            if value.endswith(FILE_VALUES[option]) and not _is_file(Path(value)):
                raise CopygenError(f"{option}: no such file", Loc(value),
                                   hint=f"{option} takes a name or the path of a {FILE_VALUES[option]} file")


def _is_file(p: Path) -> bool:
    try:
        return p.is_file()
    except OSError:
        return False


def _exists(p: Path) -> bool:
    try:
        return p.exists()
    except OSError:
        return False


def _can_write_in(d: Path, option: str, shown) -> None:
    """The nearest existing ancestor of `d` must be a directory in which a
    directory can be made (tried, and removed again: the one test that
    holds for root and for /proc alike)."""
    anc = d
    while not _exists(anc) and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise CopygenError(f"{option}: {anc} is a file, not a directory",
                           Loc(str(shown)), hint=f"give {option} a path under a directory")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".copygen-probe-", dir=anc))
    except OSError as err:
        raise CopygenError(f"{option}: cannot write in {anc}: {err.strerror}",
                           Loc(str(shown)), hint=f"give {option} a writable path") from None


def os_error(err: OSError) -> CopygenError:
    """A file the user named that cannot be read or written, as the user
    sees it; an OSError without a file name is no user error: re-raised."""
    if err.filename is None:
        raise err
    return CopygenError(f"cannot use {err.filename}: {err.strerror}", Loc(str(err.filename)),
                        hint="check the path and its permissions")


class Stopped(BaseException):
    """SIGTERM, raised where the command is, so that it unwinds (`finally`
    blocks run) instead of dying in the middle.  A BaseException: no
    `except Exception` swallows it."""


@contextlib.contextmanager
def _sigterm_unwinds():
    """While the command runs, SIGTERM raises Stopped; a second one ends
    the process at once.  A forked worker that kept this handler ends
    quietly.  (Only the main thread may set a handler: elsewhere, as is.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    me = os.getpid()

    def on_term(signum, frame):
        if os.getpid() != me:
            os._exit(128 + signum)
        signal.signal(signal.SIGTERM, lambda *_: os._exit(128 + signum))
        raise Stopped()
    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def command(name: str, stopped: str = ""):
    """Wrap a command body: it returns its exit status; an expected error is
    rendered on stderr (and as the JSON envelope with --json) and exits with
    its own status.  SIGTERM ends it with one line (and the envelope),
    `stopped` added to it: what the command leaves as it was."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kw):
            as_json = kw.get("as_json", False)
            try:
                with _sigterm_unwinds():
                    status = fn(*args, **kw) or EXIT_OK
            except (CopygenError, WorkloadError, EmuError, OSError) as raw:
                err = os_error(raw) if isinstance(raw, OSError) else as_copygen_error(raw)
                if as_json:
                    envelope(name, False, error=err.as_dict())
                click.echo(err.render(), err=True)
                status = err.exit_code
            except Stopped:
                err = CopygenError("stopped by SIGTERM" + (f"; {stopped}" if stopped else ""),
                                   exit_code=EXIT_STOPPED)
                if as_json:
                    envelope(name, False, error=err.as_dict())
                click.echo(f"copygen: {err.message}", err=True)
                status = EXIT_STOPPED
            sys.exit(status)
        return wrapper
    return deco


class Main(click.Group):
    """The top command.  A usage error (an unknown option, a missing
    argument, a bad value: click's) is answered on stdout with the one JSON
    envelope too when --json was given, as every other failure is; click
    renders it on stderr and exits with its status (2) as ever."""

    def make_context(self, info_name, args, parent=None, **extra):
        argv = list(args)
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except click.ClickException as err:
            self._envelope(err, argv)
            raise
        ctx.meta["copygen.argv"] = argv
        return ctx

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.ClickException as err:
            self._envelope(err, ctx.meta.get("copygen.argv", []))
            raise

    def _envelope(self, err: click.ClickException, argv: list[str]) -> None:
        if "--json" not in argv:
            return
        words = [a for a in argv if not a.startswith("-")]
        name = words[0] if words and words[0] in self.commands else "copygen"
        shown = f"copygen {name}" if name != "copygen" else name
        envelope(name, False, error=CopygenError(err.format_message(),
                                                 hint=f"see `{shown} --help`").as_dict())


def print_warnings(warnings) -> None:
    for w in warnings:
        click.echo(w.render(), err=True)


def progress() -> Progress:
    """The progress bar of long commands: on stderr, only on a terminal."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), transient=True, disable=not sys.stderr.isatty())


# the width a table is measured in off a terminal: more than any table needs
UNBOUNDED_WIDTH = 100_000


def plain_tables() -> bool:
    """Tables take their plain layout (measure.render's `plain`) when stdout
    is not a terminal: a pipe, a file, a CI log."""
    return not sys.stdout.isatty()


def table_console(width: int = 200) -> Console:
    """Where tables go: stdout; off a terminal no colour and `width`
    columns (text lines are never wrapped there)."""
    if sys.stdout.isatty():
        return Console()
    return Console(width=width, no_color=True, highlight=False, emoji=False, soft_wrap=True)


def print_tables(*tables: Table) -> None:
    """Tables on stdout.  On a terminal rich fits them to its width; off one
    each is printed at its natural width, however wide, so that no cell
    wraps and each row is one line."""
    for t in tables:
        console = table_console()
        if plain_tables():
            natural = Measurement.get(console, console.options.update_width(UNBOUNDED_WIDTH), t)
            console = table_console(max(natural.maximum, 1))
        console.print(t)
