"""Objects built by Kbuild, with the kernel's own flags, at a commit.

objects() checks a commit out (detached; the checkout is put back), makes
sure the tree's kept build directory is configured (kunit.py config, the
kunitconfig of the test runs, without the fault suite), has make build the named objects
(`make ARCH=riscv O=BUILD arch/riscv/lib/string.o`), and copies them out,
so that what is proved and benched is what the kernel links.

Role: the build step of the real-kernel loop.  May import gen.toolchain,
copygen.errors, kernel.kunit and the standard library.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from copygen.errors import ToolError
from copygen.gen.toolchain import cross_prefix, run_git, run_logged
from copygen.kernel import kunit


def _configure(tree: Path, bdir: Path) -> None:
    if (bdir / ".config").is_file():
        return
    # the stock suites: the commit built here need not have the fault suite
    config = kunit.config_file(bdir, fault_suite=False)
    r = run_logged("python3", [kunit.KUNIT, "config", "--arch=riscv",
                               f"--cross_compile={cross_prefix()}", f"--kunitconfig={config}",
                               f"--build_dir={bdir}"], "python3", cwd=tree)
    if r.returncode != 0:
        raise ToolError("kunit.py could not configure the kernel", detail=r.stdout[-3000:])


def objects(tree: Path, commit: str, targets: tuple[str, ...], outdir: Path,
            tell=lambda msg: None) -> dict[str, Path]:
    """Each target (a path like arch/riscv/lib/string.o) as Kbuild builds it
    at `commit`, copied into OUTDIR."""
    tree = Path(tree)
    bdir = kunit.build_dir(tree)
    bdir.mkdir(parents=True, exist_ok=True)
    back = kunit.head_ref(tree)
    run_git(["checkout", "-q", "--detach", commit], tree)
    try:
        _configure(tree, bdir)
        tell(f"kbuild: {' '.join(Path(t).name for t in targets)} at {commit[:12]}")
        for t in targets:
            # one at a time, -j1: Kbuild of 6.12 builds a single target twice
            # in one descent, and under -j2 the two race on its .d file
            r = run_logged("make", ["-j1", "ARCH=riscv", f"O={bdir}",
                                    f"CROSS_COMPILE={cross_prefix()}", t], "make", cwd=tree,
                           env={"KBUILD_BUILD_TIMESTAMP": "", **os.environ})
            if r.returncode != 0:
                raise ToolError(f"Kbuild could not build {t} at {commit[:12]}",
                                detail=kunit.errors(r.stdout))
    finally:
        run_git(["checkout", "-q", back], tree)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    out = {}
    for t in targets:
        dest = outdir / Path(t).name
        shutil.copyfile(bdir / t, dest)
        out[t] = dest
    return out
