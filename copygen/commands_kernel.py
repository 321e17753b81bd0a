"""`copygen tree` and `copygen kunit`: a real kernel tree to patch, and the
kernel's own tests of the copy routines run on it.

Role: command-line glue over kernel.tree.get_tree and
kernel.kunit.run_commit.  May import click, kernel, copygen.errors,
copygen.output.
"""
from __future__ import annotations

from dataclasses import asdict

import click

from copygen.errors import CopygenError
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
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=2,
              help="make -j for the kernel build [default: 2: each job of a kernel build holds "
                   "its own compiler and memory, and two suit a small machine; give the cores "
                   "on a larger one].")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@command("kunit")
def kunit(tree_dir, revs, no_vector, jobs, as_json) -> int:
    """Build REVS (default HEAD) of a kernel tree and run its KUnit suites.

    For each revision: the tree's tools/testing/kunit/kunit.py builds a
    kernel with the usercopy, memcpy and string suites (one build directory
    per tree, kept, so the next revision rebuilds only what differs), boots
    it in qemu-system-riscv64, and boots it again with the V extension on
    (-cpu rv64,v=true: the kernel's vector user copy above its threshold).
    The checkout is put back as it was.
    """
    def tell(m):
        click.echo(m, err=True)
    runs = []
    for rev in revs or ("HEAD",):
        runs += kunit_lib.run_commit(tree_dir, rev, rev, not no_vector, jobs, tell)
    failed = [f"{r.label}{' (V)' if r.vector else ''}: {t}" for r in runs for t in r.failed()]
    if as_json:
        envelope("kunit", not failed, runs=[{k: v for k, v in asdict(r).items() if k != "log"}
                                             for r in runs])
    else:
        for r in runs:
            click.echo(f"{r.label} {r.commit[:12]}{' with V' if r.vector else ''}: "
                       + ", ".join(f"{s.name} {s.passed}/{s.total}" for s in r.suites)
                       + f"  (build {r.build_seconds:.0f} s, boot and tests {r.run_seconds:.0f} s)")
    if failed:
        raise CopygenError("KUnit tests failed: " + ", ".join(failed), exit_code=KUNIT_FAILED)
    return 0
