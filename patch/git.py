"""The kernel tree as a git repository: checks before anything is written,
commits made without touching the user's checkout, format-patch, checkpatch.

check_tree() refuses (a CopygenError, exit 2) a directory that is not a git
work tree, a tree without a commit, a missing uaccess.S, tracked changes
not committed, no user.name / user.email, and a branch name that exists.
commit() builds each commit with plumbing (a temporary index, hash-object,
write-tree, commit-tree), so neither the working files, the index nor HEAD
of the user's checkout change; create_branch() points the new branch at
the last one, and only if no such branch has appeared meanwhile.

Role: every git operation of `copygen patch`, through gen.toolchain (the
only place that runs programs).  May import gen.toolchain, copygen.errors,
patch.kernelfile and the standard library.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from copygen.errors import CopygenError, Loc
from copygen.gen.toolchain import run_checkpatch, run_git
from copygen.patch.kernelfile import UACCESS


@dataclass(frozen=True)
class Tree:
    root: Path           # the work tree's top level
    rel: str             # uaccess.S relative to it
    head: str            # the commit the patch goes on
    signoff: str         # "Name <email>"


def _git(root: Path, *args, **kw):
    return run_git(list(args), root, **kw)


def _identity(root: Path) -> str:
    got = {}
    for key in ("user.name", "user.email"):
        r = _git(root, "config", "--get", key, check=False)
        if r.returncode != 0 or not r.stdout.strip():
            raise CopygenError(f"git has no {key} for {root}",
                               hint=f"set it: git -C {root} config {key} '...' (it signs the patch off)")
        got[key] = r.stdout.strip()
    return f"{got['user.name']} <{got['user.email']}>"


def check_tree(directory: str | Path, branch: str, file: str = UACCESS) -> Tree:
    """The tree at `directory`, checked: a git tree with a commit, `file`
    (default uaccess.S) committed, nothing uncommitted, `branch` new."""
    d = Path(directory)
    if not d.is_dir():
        raise CopygenError(f"no directory {d}", hint="--kernel-tree takes the top of a kernel tree")
    top = _git(d, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0:
        raise CopygenError(f"{d} is not a git tree", hint="copygen patch commits to a new branch of "
                           "the tree: clone the kernel with git, or `git init` it")
    root = Path(top.stdout.strip())
    head = _git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    if head.returncode != 0:
        raise CopygenError(f"{root} has no commit yet", hint="commit the tree first")
    path = d.resolve() / file
    if not path.is_file():
        raise CopygenError(f"{d / file} is missing", hint="--kernel-tree takes the top of a "
                           f"kernel tree that has {file}")
    rel = path.relative_to(root.resolve()).as_posix()
    if _git(root, "cat-file", "-e", f"HEAD:{rel}", check=False).returncode != 0:
        raise CopygenError(f"{rel} is not committed in {root}", Loc(str(path)),
                           hint="commit it first: the patch is made against HEAD")
    dirty = _git(root, "status", "--porcelain", "--untracked-files=no").stdout
    if dirty.strip():
        raise CopygenError(f"{root} has changes not committed", hint="commit or stash them first:\n"
                           + "\n".join("    " + line for line in dirty.splitlines()[:10]))
    signoff = _identity(root)
    if _git(root, "check-ref-format", "--branch", branch, check=False).returncode != 0:
        raise CopygenError(f"`{branch}` is not a valid branch name", hint="choose one with --branch")
    if _git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode == 0:
        raise CopygenError(f"branch {branch} already exists in {root}",
                           hint="choose another with --branch, or delete it: "
                                f"git -C {root} branch -D {branch}")
    return Tree(root, rel, head.stdout.strip(), signoff)


def head_text(tree: Tree) -> str:
    """uaccess.S as HEAD has it (what the patch is made against)."""
    return _git(tree.root, "show", f"HEAD:{tree.rel}").stdout


def commit(tree: Tree, parent: str, text: str, message: str) -> str:
    """A commit of `text` as uaccess.S on top of `parent`; the checkout is
    not touched.  Returns its id."""
    return commit_files(tree, parent, {tree.rel: text}, message)


def commit_files(tree: Tree, parent: str, files: dict[str, str | None], message: str) -> str:
    """A commit on top of `parent` where each path of `files` holds its
    text (None: the file is removed); the checkout is not touched."""
    root = tree.root
    with tempfile.TemporaryDirectory(prefix="copygen-patch-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(root, "read-tree", parent, env=env)
        for rel, text in files.items():
            if text is None:
                _git(root, "update-index", "--force-remove", rel, env=env)
                continue
            old = _git(root, "ls-tree", parent, "--", rel).stdout.split()
            mode = old[0] if old else "100644"
            blob = _git(root, "hash-object", "-w", f"--path={rel}", "--stdin", stdin=text).stdout.strip()
            _git(root, "update-index", "--add", "--cacheinfo", f"{mode},{blob},{rel}", env=env)
        tree_id = _git(root, "write-tree", env=env).stdout.strip()
    return _git(root, "commit-tree", tree_id, "-p", parent, "-F", "-", stdin=message).stdout.strip()


def changed(tree: Tree, base: str, tip: str) -> list[str]:
    """The files the commits from `base` to `tip` change (add, modify or
    remove), as git names them."""
    return _git(tree.root, "diff", "--name-only", "--no-renames", base, tip).stdout.splitlines()


def users(tree: Tree, rev: str, rel: str) -> list[str]:
    """The files of commit `rev` whose text names `rel` (git grep)."""
    r = _git(tree.root, "grep", "-l", "-F", rel, rev, "--", "*Makefile*", "*Kbuild*", check=False)
    return [line.split(":", 1)[1] for line in r.stdout.splitlines() if ":" in line]


def show(tree: Tree, rev: str, rel: str) -> str | None:
    """A file as commit `rev` has it, or None when it has no such file."""
    r = _git(tree.root, "show", f"{rev}:{rel}", check=False)
    return r.stdout if r.returncode == 0 else None


def create_branch(tree: Tree, branch: str, tip: str) -> None:
    """refs/heads/BRANCH -> tip, refused if the branch exists by now."""
    r = _git(tree.root, "update-ref", f"refs/heads/{branch}", tip, "", check=False)
    if r.returncode != 0:
        raise CopygenError(f"could not create branch {branch}: {r.stderr.strip()}")


def format_patch(tree: Tree, tip: str, count: int, outdir: Path, cover: bool) -> list[Path]:
    """git format-patch of the last `count` commits up to `tip` into OUTDIR."""
    outdir.mkdir(parents=True, exist_ok=True)
    args = ["format-patch", f"-{count}", tip, "-o", str(outdir.resolve())]
    if cover:
        args.insert(1, "--cover-letter")
    out = _git(tree.root, *args).stdout
    return [Path(line.strip()) for line in out.splitlines() if line.strip()]


def checkpatch(tree: Tree, patches: list[Path]) -> str | None:
    """scripts/checkpatch.pl --strict over the patches, when the tree has it."""
    script = tree.root / "scripts" / "checkpatch.pl"
    if not script.is_file():
        return None
    out = []
    for p in patches:
        r = run_checkpatch(script, p, tree.root)
        out.append((r.stdout + r.stderr).strip())
    return "\n".join(out)
