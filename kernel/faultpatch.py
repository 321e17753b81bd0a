"""The fault suite as a commit: under a commit being tested, and as a
patch of its own that a kernel developer takes.

on_top() makes the commit that adds the suite to a revision (plumbing: a
temporary index, commit-tree; the checkout, the index and the branches
are not touched); commit_on_top() does the same for any test-only files
(kernel.speedsuite's).  Its author, committer and dates are fixed (copygen's
identity, the parent's commit date), so the same revision always gives
the same commit and the kept build directory sees the same files.

standalone() writes the suite as a patch a maintainer can take: a commit
on top of HEAD signed off by the tree's git identity, on a new branch,
`git format-patch`ed into a directory and checked with the tree's
scripts/checkpatch.pl --strict.

Role: the fault suite's git side.  May import kernel.faultsuite,
kernel.tree, gen.toolchain, copygen.errors, jinja2 and the standard library.
"""
from __future__ import annotations

import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from copygen.errors import CopygenError
from copygen.gen.toolchain import run_checkpatch, run_git
from copygen.kernel import faultsuite
from copygen.kernel.tree import AUTHOR

BRANCH = "copygen/usercopy-fault-kunit"
WIDTH = 72
SUBJECT = "riscv: lib: add a KUnit test of the user copy fault return"


@dataclass
class Written:
    """What standalone() made."""

    branch: str
    commit: str
    files: list[str]
    patch: Path
    checkpatch: str | None = None
    calls: dict[str, int] = field(default_factory=dict)


def _git(tree: Path, *args, **kw):
    return run_git(list(args), Path(tree), **kw)


def rev_parse(tree: Path, rev: str) -> str:
    r = _git(tree, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if r.returncode != 0:
        raise CopygenError(f"{rev} is not a commit of {tree}", hint="give a branch, a tag or a hash")
    return r.stdout.strip()


def message(p: faultsuite.Params = faultsuite.DEFAULT, signoff: str | None = None) -> str:
    """The commit message of the suite's patch."""
    text = faultsuite.template("usercopy_fault_kunit.msg.j2").render(
        p=p, subject=SUBJECT, calls=sum(faultsuite.call_counts(p).values()), suite=faultsuite.SUITE,
        config=faultsuite.CONFIG)
    subject, *paras = text.strip().split("\n\n")
    body = [textwrap.fill(" ".join(para.split()), WIDTH, break_on_hyphens=False) for para in paras]
    return "\n\n".join([subject, *body]) + "\n" + (f"\nSigned-off-by: {signoff}\n" if signoff else "")


def _commit(tree: Path, parent: str, files: dict[str, str], msg: str, env: dict) -> str:
    with tempfile.TemporaryDirectory(prefix="copygen-fault-") as tmp:
        idx = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(tree, "read-tree", parent, env=idx)
        for rel, text in files.items():
            blob = _git(tree, "hash-object", "-w", f"--path={rel}", "--stdin", stdin=text).stdout.strip()
            _git(tree, "update-index", "--add", "--cacheinfo", f"100644,{blob},{rel}", env=idx)
        tree_id = _git(tree, "write-tree", env=idx).stdout.strip()
    return _git(tree, "commit-tree", tree_id, "-p", parent, "-F", "-", stdin=msg, env=env).stdout.strip()


def on_top(tree: Path, rev: str, p: faultsuite.Params = faultsuite.DEFAULT) -> str:
    """The commit that adds the suite to `rev` (rev itself when it has the
    suite as copygen would write it)."""
    parent = rev_parse(tree, rev)
    return commit_on_top(tree, parent, faultsuite.files(tree, parent, p), message(p))


def commit_on_top(tree: Path, rev: str, files: dict[str, str], msg: str) -> str:
    """A test-only commit of `files` on `rev` (rev itself when there are
    none).  Its author, committer and dates are fixed (copygen's identity,
    the parent's commit date): the same files on the same revision give
    the same commit, and the kept build directory sees the same tree."""
    parent = rev_parse(tree, rev)
    if not files:
        return parent
    date = _git(tree, "log", "-1", "--format=%cI", parent).stdout.strip()
    env = {**AUTHOR, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return _commit(tree, parent, files, msg, env)


def _identity(tree: Path) -> str:
    got = []
    for key in ("user.name", "user.email"):
        r = _git(tree, "config", "--get", key, check=False)
        if r.returncode != 0 or not r.stdout.strip():
            raise CopygenError(f"git has no {key} for {tree}",
                               hint=f"set it: git -C {tree} config {key} '...' (it signs the patch off)")
        got.append(r.stdout.strip())
    return f"{got[0]} <{got[1]}>"


def standalone(tree: Path, outdir: Path, branch: str = BRANCH, rev: str = "HEAD",
               p: faultsuite.Params = faultsuite.DEFAULT) -> Written:
    """The suite as a commit on a new branch at `rev`, a patch file in
    OUTDIR, checkpatch's verdict.  Refuses (exit 2, nothing written) a
    tree that cannot build the suite, has it already, or has the branch."""
    tree = Path(tree)
    if _git(tree, "rev-parse", "--show-toplevel", check=False).returncode != 0:
        raise CopygenError(f"{tree} is not a git tree", hint="--kernel-tree takes a kernel git tree")
    parent = rev_parse(tree, rev)
    if _git(tree, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode == 0:
        raise CopygenError(f"branch {branch} exists already", hint="--branch NAME, or delete it")
    signoff = _identity(tree)
    files = faultsuite.files(tree, parent, p)
    if not files:
        raise CopygenError(f"{tree} at {parent[:12]} has the fault suite already",
                           hint=f"{faultsuite.SOURCE} is as copygen writes it")
    commit = _commit(tree, parent, files, message(p, signoff), {})
    r = _git(tree, "update-ref", f"refs/heads/{branch}", commit, "", check=False)
    if r.returncode != 0:
        raise CopygenError(f"could not create branch {branch}: {r.stderr.strip()}")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    out = _git(tree, "format-patch", "-1", commit, "-o", str(outdir.resolve())).stdout.split()
    patch = Path(out[-1])
    script = tree / "scripts" / "checkpatch.pl"
    check = None
    if script.is_file():
        ran = run_checkpatch(script, patch, tree)
        check = (ran.stdout + ran.stderr).strip()
    return Written(branch, commit, sorted(files), patch, check, faultsuite.call_counts(p))
