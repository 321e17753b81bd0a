"""A kernel tree to patch, from Debian's linux-source package.

get_tree() unpacks /usr/src/linux-source-VERSION.tar.xz (package
linux-source-VERSION) into a cache directory, makes it a git repository
with one commit of every file (forced: Debian's top-level .gitignore
ignores everything, `/*`, so a plain `git add -A` adds nothing), and gives
it a committer identity of its own for the patches' Signed-off-by.  A tree
already there is returned as it is.

Role: the tree step of the real-kernel loop.  May import gen.toolchain,
copygen.errors and the standard library.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from copygen.errors import CopygenError, ToolError
from copygen.gen.toolchain import run_git, run_logged

TARBALL = "/usr/src/linux-source-{version}.tar.xz"
IDENTITY = ("copygen example", "copygen@example.org")
AUTHOR = {"GIT_AUTHOR_NAME": "copygen", "GIT_AUTHOR_EMAIL": "copygen@example.org",
          "GIT_COMMITTER_NAME": "copygen", "GIT_COMMITTER_EMAIL": "copygen@example.org"}


def cache_dir() -> Path:
    """Where trees and build directories live: $COPYGEN_CACHE, else
    $XDG_CACHE_HOME/copygen, else ~/.cache/copygen (never the repository)."""
    if os.environ.get("COPYGEN_CACHE"):
        return Path(os.environ["COPYGEN_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "copygen"


def _is_tree(d: Path) -> bool:
    r = run_git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], d, check=False)
    return d.is_dir() and (d / ".git").exists() and r.returncode == 0


def _version_of(d: Path) -> str:
    text = (d / "Makefile").read_text(errors="replace")
    got = dict(re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL) = (\d+)", text, re.M))
    return ".".join(got.get(k, "?") for k in ("VERSION", "PATCHLEVEL", "SUBLEVEL"))


def get_tree(version: str = "6.12", dest: Path | None = None,
             identity: tuple[str, str] = IDENTITY, tell=lambda msg: None) -> Path:
    """The tree of linux-source-VERSION at `dest` (default: the cache)."""
    if not re.fullmatch(r"\d+\.\d+", version):
        raise CopygenError(f"`{version}` is not a kernel series", hint="e.g. --version 6.12")
    dest = Path(dest) if dest else cache_dir() / f"linux-source-{version}"
    if dest.exists():
        if _is_tree(dest):
            tell(f"{dest}: already a git tree, kept as it is")
            return dest
        raise CopygenError(f"{dest} exists but is not a git tree with a commit",
                           hint="remove it, or choose another --dir")
    tarball = Path(TARBALL.format(version=version))
    if not tarball.is_file():
        raise ToolError(f"{tarball} not found", hint=f"install it: apt-get install linux-source-{version}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="copygen-tree-", dir=dest.parent) as tmp:
        tell(f"unpacking {tarball.name} (about 1.5 GB unpacked)")
        r = run_logged("tar", ["-xf", tarball, "-C", tmp], "tar")
        if r.returncode != 0:
            raise ToolError(f"tar could not unpack {tarball}", detail=r.stdout)
        (top,) = [p for p in Path(tmp).iterdir() if p.is_dir()]
        _commit_all(top, version, identity, tell)
        shutil.move(str(top), dest)
    return dest


def _commit_all(top: Path, version: str, identity: tuple[str, str], tell) -> None:
    tell("making it a git tree: one commit of every file")
    run_git(["init", "-q", "-b", "master"], top)
    run_git(["config", "user.name", identity[0]], top)
    run_git(["config", "user.email", identity[1]], top)
    run_git(["add", "-f", "-A"], top)
    msg = f"Linux {_version_of(top)} (Debian linux-source-{version})"
    run_git(["commit", "-q", "-m", msg], top, env=AUTHOR)
