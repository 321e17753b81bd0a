"""`copygen tree` and `copygen kunit`: a real kernel tree to patch, and the
kernel's own tests of the copy routines, with copygen's fault suite, run on
it; `copygen kunit --add-fault-suite DIR` writes the fault suite as a patch.

Role: command-line glue over kernel.tree.get_tree, kernel.kunit.run_commit
and kernel.faultpatch.standalone.  May import click, kernel, copygen.errors,
copygen.output.
"""
from __future__ import annotations

from dataclasses import asdict

import click

from copygen.errors import CopygenError
from copygen.kernel import faultpatch, speedsuite
from copygen.kernel import kunit as kunit_lib
from copygen.kernel.tree import get_tree
from copygen.output import (EXIT_HELP, EXIT_INPUT, EXIT_OK, EXIT_TOOL, command, envelope, exit_help,
                            output_dir)

KUNIT_FAILED = 3
KUNIT_EXIT = exit_help(EXIT_OK, EXIT_TOOL, EXIT_INPUT,
                       (KUNIT_FAILED, "a KUnit test failed (its name is shown)"))


@click.command(epilog=EXIT_HELP)
@click.option("--version", "series", default="6.12", show_default=True,
              help="The kernel series of Debian's linux-source-VERSION package.")
@click.option("--dir", "dest", default=None, type=click.Path(file_okay=False),
              help="Where the tree goes [default: $XDG_CACHE_HOME/copygen/linux-source-VERSION].")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@command("tree")
def tree(series, dest, as_json) -> int:
    """Make a kernel tree to patch from Debian's linux-source package.

    Unpacks /usr/src/linux-source-VERSION.tar.xz (apt-get install
    linux-source-6.12) outside the repository, makes it a git tree with one
    commit (every file: Debian's .gitignore ignores everything at the top)
    and gives it a committer identity for the patches' Signed-off-by.  A
    tree already there is kept.  Prints its path.  About two minutes.
    """
    if dest is not None:
        output_dir(dest, "--dir")
    path = get_tree(series, dest, tell=lambda m: click.echo(m, err=True))
    if as_json:
        envelope("tree", True, tree=str(path))
    else:
        click.echo(str(path))
    return 0


@click.command(epilog=KUNIT_EXIT)
@click.option("--kernel-tree", "tree_dir", required=True,
              type=click.Path(exists=True, file_okay=False),
              help="The top of a kernel git tree (e.g. from `copygen tree`).")
@click.argument("revs", nargs=-1)
@click.option("--no-vector", is_flag=True, help="Boot only without the V extension.")
@click.option("--no-fault-suite", is_flag=True,
              help="Boot the revisions as they are, with the kernel's own suites only.")
@click.option("--force-misaligned", "force", type=click.Choice(["fast", "slow", "both"]), default=None,
              help="For a --fast-body patch (two scalar copies in uaccess.S, or with "
                   "--routine string two memcpys and memmoves in memcpy.S; docs/speeds.md): "
                   "boot each revision with the boot probe's verdict on misaligned access "
                   "forced fast, slow, or each in turn (both), without and with V; a test-only "
                   "suite on top sets fast_unaligned_access_speed_key before KUnit runs and "
                   "counts with kprobes which body of each routine ran.  A revision without "
                   "the probe's key or without two bodies of either is refused (exit 2).")
@click.option("--add-fault-suite", "patch_dir", default=None, type=click.Path(file_okay=False),
              help="Boot nothing: commit the fault suite on top of the first REV (default HEAD) "
                   "on a new branch and write it as a patch into this directory (checkpatch "
                   "--strict run on it).")
@click.option("--branch", default=faultpatch.BRANCH, show_default=True,
              help="With --add-fault-suite: the new branch.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=2,
              help="make -j for the kernel build [default: 2: each job of a kernel build holds "
                   "its own compiler and memory, and two suit a small machine; give the cores "
                   "on a larger one].")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@command("kunit")
def kunit(tree_dir, revs, no_vector, no_fault_suite, force, patch_dir, branch, jobs, as_json) -> int:
    """Build REVS (default HEAD) of a kernel tree and run its KUnit suites.

    For each revision: copygen's fault suite (arch/riscv/lib/tests/
    usercopy_fault_kunit.c: copy_to_user, copy_from_user and clear_user
    at every size, alignment and fault offset) is put on top of it as a
    commit of its own, and the tree's tools/testing/kunit/kunit.py builds
    a kernel with it and the usercopy, memcpy and string suites (one build
    directory per tree, kept, so the next revision rebuilds only what
    differs), boots it in qemu-system-riscv64, and boots it again with the
    V extension on (-cpu rv64,v=true: the kernel's vector user copy above
    its threshold).  With --force-misaligned each boot is made once per
    speed forced, and says which of the two bodies ran: of the user copy,
    of memcpy, of memmove.  The checkout is put back as it was.
    """
    def tell(m):
        click.echo(m, err=True)
    if patch_dir is not None and force:
        raise CopygenError("--force-misaligned boots; --add-fault-suite boots nothing",
                           hint="give one of them")
    if patch_dir is not None:
        return _add_fault_suite(tree_dir, (revs or ("HEAD",))[0], output_dir(patch_dir, "--add-fault-suite"),
                                branch, as_json)
    speeds = kunit_lib.forced_speeds(force)
    for rev in revs or ("HEAD",):       # every revision checked before the first boot
        kunit_lib.check_revision(tree_dir, rev, not no_fault_suite, bool(speeds))
    runs = []
    for rev in revs or ("HEAD",):
        runs += kunit_lib.run_commit(tree_dir, rev, rev, not no_vector, jobs, tell,
                                     fault_suite=not no_fault_suite,
                                     force=speeds)
    failed = [f"{r.label}{' (V)' if r.vector else ''}{f' (forced {r.forced})' if r.forced else ''}: {t}"
              for r in runs for t in r.failed()]
    said = ("KUnit tests failed: " + ", ".join(failed[:3])
            + (f" and {len(failed) - 3} more" if len(failed) > 3 else ""))
    if not as_json:
        for r in runs:
            _print_run(r)
        if failed:
            raise CopygenError(said, exit_code=KUNIT_FAILED)
        return 0
    # one envelope, the failures in it: the runs are the result either way
    envelope("kunit", not failed, runs=[{k: v for k, v in asdict(r).items() if k != "log"}
                                         for r in runs], **({"failed": failed} if failed else {}))
    if failed:
        click.echo(f"error: {said}", err=True)
    return KUNIT_FAILED if failed else 0


def _print_run(r) -> None:
    forced = f", misaligned access forced {r.forced}" if r.forced else ""
    click.echo(f"{r.label} {r.commit[:12]}{' with V' if r.vector else ''}{forced}: "
               + ", ".join(f"{s.name} {s.passed}/{s.total}" for s in r.suites)
               + f"  (build {r.build_seconds:.0f} s, boot and tests {r.run_seconds:.0f} s)")
    if r.forced:
        click.echo(f"  {speedsuite.SUITE}: {speedsuite.describe(r.speeds)}")
    for name, case in r.fault.items():
        if not case["ok"]:
            click.echo(f"  {name}: {case['failed']} of {case['calls']} calls fail; "
                       f"the first: {case['first']}")


def _add_fault_suite(tree_dir, rev: str, outdir, branch: str, as_json: bool) -> int:
    w = faultpatch.standalone(tree_dir, outdir, branch, rev)
    if as_json:
        envelope("kunit", True, branch=w.branch, commit=w.commit, files=w.files,
                 patches=[str(w.patch)], checkpatch=w.checkpatch, calls=w.calls)
        return 0
    click.echo(f"branch {w.branch} -> {w.commit[:12]}: adds {', '.join(w.files)}")
    click.echo(f"wrote {w.patch}")
    if w.checkpatch is not None:
        click.echo(w.checkpatch.splitlines()[-1] if w.checkpatch.strip() else "checkpatch: no output")
    return 0
