"""`copygen patch`: a strategy and a kernel tree in, a commit and a patch out.

Role: command-line glue over patch.run.make_patch; prints each patch's
subject, its table and proof summary, where the patch files are, and what
the tree's checkpatch said (or the JSON envelope).
May import click, patch, measure.measured, copygen.errors, verify.solver.parallel,
verify.contract.verdict, copygen.output.
"""
from __future__ import annotations

import os
from dataclasses import asdict

import click

from copygen.errors import CopygenError
from copygen.output import (EXIT_INPUT, EXIT_OK, EXIT_TOOL, JOBS_HELP, ROUTINE_KINDS, command, envelope,
                            exit_help, kind_of, named_files, output_dir)
from copygen.measure import measured
from copygen.patch import message
from copygen.patch.run import make_patch
from copygen.patch.speeds.dispatch import KEY
from copygen.patch.speeds.run import make_speeds_patch
from copygen.patch.speeds.stringrun import make_speeds_string_patch
from copygen.patch.steps import Request
from copygen.verify.contract.verdict import EXIT
from copygen.verify.solver.parallel import default_jobs

PATCH_EXIT = exit_help(EXIT_OK, EXIT_TOOL, EXIT_INPUT,
                       (EXIT["violated"], "a clause of the patched code is violated, or with "
                                          "--test kunit a KUnit test the patch breaks: nothing is "
                                          "written"),
                       (EXIT["unknown"], "a clause of the patched code stays unknown: nothing is "
                                         "written (--allow-unproven writes a draft)"))
BLOCKS = {"copy_to_user": "copy_user", "copy_from_user": "copy_user", "clear_user": "clear_user",
          "memcpy": "string", "memmove": "string", "memset": "string",
          "vector_usercopy": "vector_usercopy"}


def _block(name: str) -> str:
    if name in ("copy_user", "clear_user", "string", "vector_usercopy"):
        return name
    kind = name if name in BLOCKS else kind_of(name)
    if kind not in BLOCKS:
        raise CopygenError(f"copygen patch cannot replace `{name}`",
                           hint="--routine copy_user (copy_to_user, copy_from_user), clear_user, "
                                "string (memcpy, memmove, memset) or vector_usercopy")
    return BLOCKS[kind]


def _entries(routines: tuple[str, ...]) -> frozenset[str] | None:
    """The entry points to prove: a block name (copy_user) takes all of
    its own, a kind (copy_to_user) its symbols, a symbol itself."""
    if not routines:
        return None
    out: set[str] = set()
    if all(_block(r) in ("string", "vector_usercopy") for r in routines):
        return None
    for r in routines:
        if r in ("copy_user", "clear_user"):
            out.update(s for k, syms in ROUTINE_KINDS.items() if BLOCKS.get(k) == r for s in syms)
        else:
            out.update(ROUTINE_KINDS.get(r, (r,)))
    return frozenset(out)


def kunit_json(run) -> dict:
    """One KUnit boot as JSON (its console log left out)."""
    d = asdict(run)
    d.pop("log", None)
    return d


def branch_line(branch: str, commits: int, files: list[str]) -> str:
    """What the new branch holds: its commits and the files they change."""
    return (f"branch {branch}: {commits} commit{'' if commits == 1 else 's'} changing "
            + ", ".join(files))


def _show(res) -> None:
    for s in res.steps:
        lines = s.message.splitlines()
        click.echo(lines[0])
        click.echo("")
        if s.change.rows:
            click.echo("\n".join(message.speed(s.change.rows, s.change.calibration)
                                  + [""] + message.table(s.change.rows)))
            click.echo("")
        click.echo("\n".join(message.proofs(s.change.before, s.change.after, s.kinds, s.change.skipped)))
        click.echo("")
    if res.steps and res.steps[0].change.rules:
        click.echo("\n".join(res.steps[0].change.rules))
        click.echo("")
    click.echo(branch_line(res.branch, len(res.steps), res.files))
    for p in res.patches:
        shown = os.path.relpath(p)
        click.echo(f"wrote {p if shown.startswith('..') else shown}")
    if res.kunit:
        click.echo("KUnit, passed before -> after:")
        click.echo("\n".join(res.steps[-1].change.kunit))
    if res.checkpatch is not None:
        click.echo("checkpatch.pl --strict:")
        click.echo(res.checkpatch)


def _speeds(req: Request, fast_bodies: tuple[str, ...], tell, as_json: bool) -> int:
    """--fast-body: the two-body patch (patch.speeds.run), shown or as JSON."""
    res = make_speeds_patch(req, fast_bodies, tell)
    (step,) = res.steps
    if as_json:
        envelope("patch", True, branch=res.branch, layout=res.layout, file=res.file, files=res.files,
                 register_rules=res.rules, patches=[str(p) for p in res.patches],
                 checkpatch=res.checkpatch, stages=res.stages,
                 kunit={k: [kunit_json(r) for r in v] for k, v in res.kunit.items()},
                 speeds=speeds_json(res.speeds),
                 commits=[{"commit": step.commit, "subject": step.message.splitlines()[0],
                           "routines": list(step.kinds), "message": step.message,
                           "rows": [asdict(r) for r in step.change.rows],
                           "before": {k: [asdict(p) for p in v] for k, v in step.change.before.items()},
                           "after": {k: [asdict(p) for p in v] for k, v in step.change.after.items()}}])
        return 0
    click.echo(step.message.split("\nGenerated by copygen")[0].rstrip())
    click.echo("")
    click.echo(branch_line(res.branch, 1, res.files))
    for p in res.patches:
        shown = os.path.relpath(p)
        click.echo(f"wrote {p if shown.startswith('..') else shown}")
    if res.checkpatch is not None:
        click.echo("checkpatch.pl --strict:")
        click.echo(res.checkpatch)
    return 0


def speeds_json(sp) -> dict:
    """What a two-body patch adds to the JSON: the site, each core's probe,
    the dispatch's cost, on each fast core the fast copy against the slow
    one, the composed verdicts and the key-on proofs."""
    return {"dispatcher": sp.dispatcher, "fast": sp.fast, "key": KEY,
            "site": {"code": sp.site.code, "target": sp.site.target, "holds": sp.site.holds()},
            "probes": [asdict(p) | {"verdict": p.verdict()} for p in sp.probes],
            "dispatch_cost": [asdict(r) for r in sp.cost],
            "fast_against_slow": [asdict(r) for r in sp.versus],
            "composed": [r.as_dict() for r in sp.composed],
            "key_on": [asdict(p) for p in sp.on_proofs]}


@click.command(epilog=PATCH_EXIT)
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--kernel-tree", "tree", required=True, type=click.Path(file_okay=False, exists=True),
              help="The top of a kernel git tree.  Its arch/riscv/lib/uaccess.S is patched; "
                   "with a string block, memcpy.S, memmove.S, memset.S, string.c and the Makefile "
                   "beside it; with vector_usercopy, uaccess_vector.S and arch/riscv/Kconfig.")
@click.option("--routine", "routines", multiple=True,
              help="Only this block: copy_user, clear_user or string; repeatable [default: "
                   "FILE's copy_user and clear_user blocks, or its string block when it has no "
                   "other; beside them a string block goes in only when named].  A string block "
                   "replaces memcpy.S, memmove.S and memset.S by string.c, built by Kbuild.  A "
                   "kind (copy_to_user, copy_from_user) or a symbol replaces its "
                   "block but proves only its own entry points (the message names them).  "
                   "vector_usercopy: FILE's vector phase replaces the loop of uaccess_vector.S "
                   "and its threshold the Kconfig default RISCV_ISA_V_UCOPY_THRESHOLD (a patch "
                   "of its own).")
@click.option("-o", "--output", "outdir", default="patches", show_default=True,
              type=click.Path(file_okay=False), help="Where git format-patch writes the patches.")
@click.option("--profile", "profiles", multiple=True,
              help="Cost profile of the before/after table; repeatable [default: the targets' "
                   "profiles; with --routine vector_usercopy, every profile that times vector "
                   "code].")
@click.option("--series", is_flag=True, help="copy_user and clear_user as two patches and a cover letter.")
@click.option("--allow-unproven", is_flag=True,
              help="Write a draft even when the patched code is not proved (its subject says so).")
@click.option("--branch", default=None, help="The new branch [default: copygen/<FILE's stem>].")
@click.option("--proof-cache", default="build/proofs", show_default=True, type=click.Path(file_okay=False),
              help="Reports kept under a hash of the machine code (shared with verify and tune).")
@click.option("--no-cache", is_flag=True, help="Prove again even when the cache has this code.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help=JOBS_HELP)
@click.option("--test", "tests", type=click.Choice(["kunit"]), multiple=True,
              help="kunit: build the tree at HEAD and at the patch with its own "
                   "tools/testing/kunit/kunit.py (usercopy, memcpy and string suites), boot each "
                   "in qemu-system-riscv64 without and with the V extension, and put the results "
                   "in the message; a test the patch breaks refuses it (exit 3).  Minutes: the "
                   "first build of a tree about 10, each boot about 4.")
@click.option("--no-vector", is_flag=True, help="With --test kunit: boot only without the V extension.")
@click.option("--measured", "measured_files", multiple=True, type=click.Path(dir_okay=False),
              help="A board's measurements of the tree's files and of FILE (copygen hwbench; "
                   "docs/measurements.md; repeatable): the cases measured for both go into the "
                   "message as measured, beside the model's table.")
@click.option("--fast-body", "fast_bodies", multiple=True, type=click.Path(dir_okay=False),
              help="A `misaligned fast` strategy whose copy_user goes beside FILE's (which must be "
                   "`misaligned slow`): the scalar copy's first instruction becomes a static branch "
                   "on the boot probe's fast_unaligned_access_speed_key, taking this copy on "
                   "kernels whose harts the probe finds fast (docs/speeds.md).  The message has a "
                   "table under each --profile (default: FILE's target's) and under the fast "
                   "copy's cores (this file's target's profile, x60 and c920), each showing "
                   "the body that profile's modelled probe picks.  With --routine string, its "
                   "memcpy and memmove go into memcpy.S beside FILE's, on the same key.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@command("patch", stopped="the kernel tree's checkout is as it was")
def patch(file, tree, routines, outdir, profiles, series, allow_unproven, branch, proof_cache,
          no_cache, jobs, tests, no_vector, measured_files, fast_bodies, as_json) -> int:
    """Turn FILE's routines into a kernel patch on a new branch of a tree.

    Replaces what the strategy owns in the tree's arch/riscv/lib.  Its
    copy_user and clear_user replace only their bodies in uaccess.S
    (mainline: fallback_scalar_usercopy_sum_enabled, with no SUM handling,
    and __clear_user; a 2021-layout tree: __asm_copy_to_user and
    __clear_user).  Its string block replaces memcpy.S, memmove.S and
    memset.S by the generated string.c (a function in assembly replaces
    its .S instead) and the Makefile lines that build them.  With --routine
    vector_usercopy its vector phase replaces the loop of uaccess_vector.S
    and its threshold the default of RISCV_ISA_V_UCOPY_THRESHOLD in
    arch/riscv/Kconfig.  copygen proves the entry points that reach the
    new code before and after, benches both, and only when the new code is
    proved commits it on a new branch (the checkout is left as it was) and
    runs git format-patch.  The commit message holds the modelled
    before/after table, the proof summary and how to reproduce.
    """
    output_dir(outdir, "-o")
    named_files(profile=profiles)
    if measured_files:
        measured.load(list(measured_files), file)       # a bad or emulated file stops here
    if not no_cache:
        output_dir(proof_cache, "--proof-cache")
    req = Request(file, tree, kinds=tuple(dict.fromkeys(_block(r) for r in routines)),
                  routines=tuple(routines), outdir=outdir, profiles=tuple(profiles), series=series,
                  allow_unproven=allow_unproven, branch=branch, entries=_entries(tuple(routines)),
                  proof_cache=None if no_cache else proof_cache, jobs=max(1, jobs or default_jobs()),
                  kunit="kunit" in tests, kunit_vector=not no_vector, measured=tuple(measured_files))
    tell = lambda msg: click.echo(msg, err=True)  # noqa: E731
    if fast_bodies:
        if measured_files:
            raise CopygenError("--measured is not taken with --fast-body: a board runs one of the "
                               "two copies", hint="leave out --measured")
        if "string" not in req.kinds:
            return _speeds(req, fast_bodies, tell, as_json)
    # --fast-body --routine string: memcpy.S with two bodies, shown as a string patch
    res = (make_speeds_string_patch(req, fast_bodies, tell) if fast_bodies
           else make_patch(req, tell=tell))
    if as_json:
        envelope("patch", True, branch=res.branch, layout=res.layout, file=res.file, files=res.files,
                 register_rules=res.rules,
                 patches=[str(p) for p in res.patches], checkpatch=res.checkpatch,
                 kunit={k: [kunit_json(r) for r in v] for k, v in res.kunit.items()},
                 stages=res.stages,
                 commits=[{"commit": s.commit, "subject": s.message.splitlines()[0],
                           "routines": list(s.kinds), "message": s.message,
                           "rows": [asdict(r) for r in s.change.rows],
                           "measured_rows": [asdict(r) for r in s.change.board],
                           "measured_on": s.change.board_on or None,
                           "before": {k: [asdict(p) for p in v] for k, v in s.change.before.items()},
                           "after": {k: [asdict(p) for p in v] for k, v in s.change.after.items()}}
                          for s in res.steps])
    else:
        _show(res)
    return 0
