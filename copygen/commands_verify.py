"""`copygen verify`: the verifier's command.

Role: command-line glue over copygen.inputs, verify.contract.inputs, verify.checks.prove, verify.counterexamples.bounded,
verify.solver.cache and verify.contract.verdict; prints a clause x routine table per file
(or the JSON envelope) and, on request, a JUnit XML report.  Register rules
(--reserve, --jump-register, a .copy's own) add clause R1 (verify.contract.rules).
May import click, rich, verify, gen.front.validate, copygen.errors, copygen.inputs,
copygen.output.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from copygen.errors import CopygenError
from copygen.inputs import linked_elf
from copygen.output import (EXIT_TOOL, JOBS_HELP, ROUTINE_HELP, command, envelope, exit_help, output_dir,
                            output_file, select_routines, table_console)
from copygen.verify.counterexamples.bounded import apply_bounded
from copygen.verify.solver.cache import ProofCache, prove_cached
from copygen.verify.contract.clauses import CLAUSES, NOT_CHECKED, PROPERTIES, PROPERTY_BROKEN, clause_text
from copygen.verify.contract.inputs import routines
from copygen.verify.contract.junit import junit_xml
from copygen.verify.solver.parallel import default_jobs
from copygen.verify.checks.prove import MEMMOVE_BOUND, STAGES, prove_routine
from copygen.verify.vector.vcompose import compose_reports
from copygen.verify.vector.vprove import prove_vectors
from copygen.verify.contract.world import VECTOR_KINDS
from copygen.verify.contract.verdict import EXIT, counts, holds_up_to, verdict, worst
from copygen.verify.contract.rules import RegisterRules, make_rules
from copygen.gen.front.validate import load_file

MARK = {"proved": "[green]proved[/]", "violated": "[red]VIOLATED[/]", "unknown": "[yellow]unknown[/]",
        NOT_CHECKED: f"[dim]{NOT_CHECKED}[/]"}
VERIFY_EXIT = exit_help(
    (EXIT["proved"], "every required clause proved (with --bounded: proved, or holding for every "
                     "n <= N, said in the first line)"),
    EXIT_TOOL,
    (EXIT["unanalysable"], "bad input (a located error with a hint), or nothing could be "
                           "analysed (the reason is shown)"),
    (EXIT["violated"], "a clause is violated (a replayed counterexample is shown)"),
    (EXIT["unknown"], "a clause stays unknown (neither proved nor violated), also when the "
                      f"runs of every n <= {MEMMOVE_BOUND} memmove gets without --bounded all "
                      "keep it"))


def _prove(elf, sym, kind, bounded, jobs, stage, all_clauses, callee=None, rules=None):
    if kind in VECTOR_KINDS:
        return prove_vectors(str(elf), stage=stage, symbol=sym)
    # with --bounded every routine gets the bounded run; without it, memmove
    # still gets it for what its proof leaves unknown
    rep = prove_routine(str(elf), sym, kind, jobs=jobs,
                        memmove_bound=0 if bounded else MEMMOVE_BOUND, stage=stage,
                        all_clauses=all_clauses, callee=callee, rules=rules)
    if bounded:
        apply_bounded(str(elf), rep, bounded, jobs)
    return rep


def _held_line(reports, console) -> None:
    """The first line when memmove's own runs (not asked for) kept what its
    proof left unknown: they are no proof, and the verdict says so."""
    held = sorted({n for reps in reports.values() for r in reps for n in r.held_up_to.values()})
    if held:
        console.print(f"unknown: not proved for every n; every n <= {held[-1]} ran and kept "
                      f"what memmove's proof left open, which is no proof (--bounded "
                      f"{held[-1]} accepts that bound)")


def _glue_line(reports, bounded: int, console) -> None:
    """The first line when a composed vector copy is proved below 2^31
    only and no --bounded N asked for a bound that covers: why that is no
    proof for every n the kernel can pass."""
    below = sorted({(r.symbol, holds_up_to(st)) for reps in reports.values() for r in reps
                    if r.symbol.endswith("+vector") for st in r.status.values()
                    if holds_up_to(st) is not None and not counts(st, bounded)})
    for sym, n in below:
        console.print(f"unknown: {sym} is proved for every n <= {n} only, not for every n: the "
                      "kernel's C glue (enter_vector_usercopy) takes n as a size_t but returns "
                      "the routines' counts as an int, and __copy_{to,from}_user and the "
                      "_nofault copies pass sizes of 2^31 or more unchecked (copy_{to,from}_user "
                      f"stop them, check_copy_size); --bounded N with N <= {n} accepts that bound")


def _short(symbol: str) -> str:
    """copy_to_user for __asm_copy_to_user: the table stays narrow."""
    return symbol.removeprefix("__asm_").lstrip("_")


def _cell(clause: str, st: str | None, require, held: int | None = None, bounded: int = 0) -> str:
    if st is None:
        return "-"
    if clause in PROPERTIES and clause not in require:
        return "yes" if st == "proved" else ("no" if st == "violated" else st)
    if held is not None:        # runs nobody asked for: shown, not a verdict
        return f"{MARK['unknown']} (n <= {held} ran)"
    if holds_up_to(st) is not None and not counts(st, bounded):   # a bound nobody asked for
        return f"[yellow]n <= {holds_up_to(st)} only[/]"
    return MARK.get(st, f"[cyan]{st}[/]")


def _table(title: str, reports, verdicts, require, console, bounded: int = 0) -> None:
    """One row per clause, one column per routine (fits 80 columns)."""
    from rich.table import Table
    clauses = [c for c in CLAUSES if any(c in r.status for r in reports)]
    t = Table(title=title)
    t.add_column("clause")
    for r in reports:
        t.add_column(_short(r.symbol), justify="center")
    for c in clauses:
        name = f"{c} (property)" if c in PROPERTIES and c not in require else c
        t.add_row(name, *[_cell(c, r.status.get(c), require, r.held_up_to.get(c), bounded)
                          for r in reports])
    t.add_row("verdict", *verdicts)
    t.add_row("seconds", *[f"{r.seconds:.0f}" for r in reports])
    console.print(t)
    for r, v in zip(reports, verdicts):
        if v == "unanalysable":
            console.print(f"{r.symbol}: nothing could be analysed: {r.detail.get('C1', '')}")
            continue
        for c, st in r.status.items():
            if c in PROPERTIES and c not in require:
                if st == "violated":
                    console.print(f"{r.symbol}: property {c}: {PROPERTY_BROKEN[c]} "
                                  f"({r.detail.get(c, '')}); not part of the contract "
                                  f"(--require {c} makes it one)")
        for callee, how in getattr(r, "calls", {}).items():
            console.print(f"{r.symbol}: its call of {callee} is taken {how}"
                          if how.startswith("by") else f"{r.symbol}: its call of {callee} is "
                          f"{how}")
        _unproved(r, require, console)


def _unproved(r, require, console) -> None:
    """What is not proved, one line per (status, reason): clauses that share
    a reason are named together."""
    groups: dict[tuple[str, str], list[str]] = {}
    for c, st in r.status.items():
        if st != "proved" and (c not in PROPERTIES or c in require):
            groups.setdefault((st, r.detail.get(c, "")), []).append(c)
    for (st, why), cs in groups.items():
        named = cs[0] + f" ({clause_text(cs[0], r.kind)})" if len(cs) == 1 else ", ".join(cs)
        console.print(f"{r.symbol} {named}: {MARK.get(st, st)}: {why}")


def _progress(console):
    """A bar on a terminal; off one (piped, a CI log) no bar: _say prints
    a line per stage instead."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True, disable=not sys.stderr.isatty())


def _say(line: str) -> None:
    """One line of progress on stderr, when no bar shows it (stdout keeps
    the result, or the --json envelope, alone)."""
    if not sys.stderr.isatty():
        click.echo(f"verify: {line}", err=True)


def _plan(files, only, workdir):
    """[(file, elf, [(symbol, kind)])], every input built and resolved
    before any proof starts (bad input fails fast)."""
    out = []
    for f in files:
        elf = linked_elf(f, Path(workdir) / Path(f).stem, tell=_say)
        present = routines(elf)
        wanted = select_routines([s for s, _ in present], only, f, strict=len(files) == 1)
        out.append((f, elf, [(s, k) for s, k in present if s in wanted]))
    if not any(todo for _, _, todo in out):
        raise CopygenError(f"no routine {', '.join(only)} in {', '.join(files)}")
    return out


def _rules(file: str, reserve: tuple[str, ...], jump: str | None) -> RegisterRules:
    """The register rules FILE's routines are proved under (clause R1): the
    options', and a .copy strategy's own (its targets' `reserve` and `jump`)."""
    regs, jumps = list(reserve), {jump} - {None}
    if file.endswith(".copy"):
        for t in load_file(file).targets:
            regs += t.reserve
            jumps |= {t.jump} - {None}
    if len(jumps) > 1:
        raise CopygenError(f"{file}: computed jumps cannot be limited to both "
                           f"{' and '.join(sorted(jumps))}", hint="give one --jump-register")
    return make_rules(regs, next(iter(jumps), None))


def _run(plan, bounded, jobs, cache, all_clauses, rules=None):
    """Prove every routine of the plan (from the cache where it has the same
    code), each file's under its register rules (`rules`: file -> rules):
    {file: [RoutineReport]}."""
    from rich.console import Console
    total = sum(len(todo) for _, _, todo in plan) * len(STAGES)
    reports = {}
    with _progress(Console(stderr=True)) as bar:
        task = bar.add_task("proving", total=total)
        for f, elf, todo in plan:
            reports[f] = []
            for sym, kind in todo:
                done = bar.tasks[0].completed

                def stage(name, sym=sym, base=done):
                    _say(f"{sym}: {name}")
                    bar.update(task, description=f"{sym}: {name}", completed=base + (STAGES.index(name) if name in STAGES else 0))
                reports[f].append(_routine(elf, sym, kind, cache, stage, bounded, jobs, all_clauses,
                                           (rules or {}).get(f)))
                bar.update(task, completed=done + len(STAGES))
    return reports


def _routine(elf, sym, kind, cache, stage, bounded, jobs, all_clauses, rules=None):
    """One routine's report, through the cache; its outcome said when piped."""
    ran = []
    rules = None if kind in VECTOR_KINDS else rules     # R1 is the scalar prover's

    def prove(callee):
        ran.append(sym)
        return _prove(elf, sym, kind, bounded, jobs, stage, all_clauses, callee, rules)
    rep = prove_cached(elf, sym, kind, cache, prove, bounded, all_clauses, rules=rules)
    _say(f"{sym}: {verdict(rep)} " + (f"({rep.seconds:.0f} s)" if ran else "(from the proof cache)"))
    return rep


def _compose(reports) -> None:
    """The composed copy and clear (verify.vector.vcompose) after the file that
    holds the vector routine, its scalar routine from the same file or, as
    a tree keeps them (uaccess_vector.S beside uaccess.S), from another
    file of the run."""
    scalar_kinds = ("to", "from", "clear")
    for f, reps in reports.items():
        if not any(r.kind in VECTOR_KINDS for r in reps):
            continue
        scalar = [r for r in reps if r.kind in scalar_kinds] or \
                 [r for g, rs in reports.items() if g != f for r in rs if r.kind in scalar_kinds]
        composed = compose_reports([r for r in reps if r.kind in VECTOR_KINDS] + scalar)
        if composed:
            _say("the composed " + " and ".join(r.symbol.lstrip("_").removeprefix("asm_")
                                               for r in composed)
                 + ": dispatch + C glue + vector + scalar")
        reps += composed


@click.command(epilog=VERIFY_EXIT)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--routine", "only", multiple=True, help=ROUTINE_HELP)
@click.option("--bounded", type=click.IntRange(min=0), default=0, metavar="N",
              help="Also run every n <= N, all 64 alignment pairs and every fault offset "
                   "(memmove: every overlap of src and dst, both directions); a clause the "
                   "proof leaves unknown that every run keeps then holds for n <= N, verdict "
                   "'bounded', exit 0.  Without this, what memmove's proof leaves unknown is "
                   f"run for n <= {MEMMOVE_BOUND} too, to find a counterexample: runs that find "
                   "none are shown, and the clause stays unknown (exit 4).")
@click.option("--require", "require", multiple=True, type=click.Choice(sorted(PROPERTIES)),
              help="Make a property part of the verdict (B2s: no load outside [src, src+n)).")
@click.option("--all-clauses", is_flag=True,
              help="Prove every clause even when a sample run already shows one violated "
                   "(by default the proof stops there: the others are 'not checked').")
@click.option("--reserve", "reserve", multiple=True, metavar="REG",
              help="Prove clause R1 too: no path writes REG (t6, x31 ...), so it holds its "
                   "entry value at every return; repeatable.  A .copy FILE's own `reserve` "
                   "and `jump` rules are added.  Scalar routines only.")
@click.option("--jump-register", default=None, metavar="REG",
              help="Prove clause R1 too: every computed jump (jalr) goes through REG, or "
                   "through ra (a return, a call).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help=JOBS_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.option("--junit", type=click.Path(dir_okay=False), default=None,
              help="Also write a JUnit XML report: one test case per routine and clause.")
@click.option("--proof-cache", default="build/proofs", show_default=True, type=click.Path(file_okay=False),
              help="Reports kept under a hash of the routine's machine code (shared with the tuner).")
@click.option("--no-cache", is_flag=True, help="Prove again even when the cache has this code.")
@click.option("--workdir", default="build/verify", show_default=True, type=click.Path(file_okay=False),
              help="Where a .copy or .S input is built into the ELF that is proved.")
@command("verify")
def verify(files, only, bounded, require, all_clauses, reserve, jump_register, jobs, as_json, junit,
           proof_cache, no_cache, workdir) -> int:
    """Prove the copy routines of FILES correct with Z3, for every n.

    Each FILE is a .copy strategy, a kernel-style uaccess.S (assembled
    against copygen's shim headers), an object or a linked ELF.  Each clause
    of the user-copy contract is reported on its own: proved (for every n),
    violated (with a counterexample replayed in the emulator), unknown (the
    solver or the inferred loop invariants were not strong enough) or, with
    --bounded N, holding for every n <= N (verdict "bounded": only --bounded
    makes runs of every n <= N part of the verdict; a composed vector copy,
    proved below 2^31 because the kernel's C glue returns an int, is
    unknown, exit 4, unless --bounded N asks for a bound below that).  A sample run that already
    breaks a clause ends the proof: the clauses no concrete run breaks are
    then "not checked" (--all-clauses proves them).  B2s (no load outside [src,
    src+n)) is a property, shown but not required, unless --require B2s.
    memmove is proved for every overlap of its buffers, in both directions.
    A vector routine and a scalar copy (in one file, or uaccess_vector.S
    and uaccess.S given together) also get the composed copy: the kernel's
    dispatch and C glue around both, a column "copy_to_user+vector"; a
    vector clear and a scalar clear likewise, "clear_user+vector"
    (docs/vector.md says what they prove).
    """
    output_dir(workdir, "--workdir")
    if not no_cache:
        output_dir(proof_cache, "--proof-cache")
    if junit:
        output_file(junit, "--junit")
    rules = {f: _rules(f, tuple(reserve), jump_register) for f in files}
    plan = _plan(files, only, workdir)
    cache = None if no_cache else ProofCache(proof_cache)
    reports = _run(plan, bounded, max(1, jobs or default_jobs()), cache, all_clauses, rules)
    _compose(reports)
    # a clause holding below a bound counts only when --bounded asked for one it covers
    verdicts = {f: [verdict(r, require, asked=bounded) for r in reps] for f, reps in reports.items()}
    overall = worst([v for vs in verdicts.values() for v in vs])
    if junit:
        Path(junit).write_text(junit_xml(reports, require, bounded))
    if as_json:
        envelope("verify", overall in ("proved", "bounded"), verdict=overall,
                 bounded=bounded or None, required_properties=list(require),
                 register_rules={f: r.as_dict() for f, r in rules.items() if r},
                 files=[{"file": f, "elf": str(elf),
                         "reports": [{**r.as_dict(), "verdict": v}
                                     for r, v in zip(reports[f], verdicts[f])]}
                        for f, elf, _ in plan])
    else:
        console = table_console()
        if overall == "bounded":          # only a --bounded N gives it (verdict's `asked`)
            console.print(f"bounded: every required clause proved or holding for every n <= "
                          f"{bounded}, not proved for every n")
        elif overall == "proved" and bounded:
            console.print(f"bounded: every n <= {bounded} checked, and every required clause is "
                          "proved for every n")
        elif overall == "unknown":
            _held_line(reports, console)
            _glue_line(reports, bounded, console)
        for f, _, _ in plan:
            _table(f"copygen verify {f}", reports[f], verdicts[f], require, console, bounded)
    return EXIT[overall]
