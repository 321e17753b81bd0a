"""What a `copygen patch` run is made of, shared by every kind of run
(patch.run for uaccess.S and the string functions, patch.vector_run for
uaccess_vector.S, patch.speeds for the two-body patches): the request, its
steps and its result, the clock of its stages; which blocks of a strategy
are patched, and in which steps; the command a message says reproduces
the patch; the refusal of a candidate whose proof is not complete (exit 3
when a clause is violated, 4 when one is unknown, as `copygen verify`);
and the KUnit runs before and after, which refuse a patch that makes a
test fail.

Role: orchestration parts.  May import kernel (kunit), patch (kernelfile, message, splice),
verify.contract.verdict, copygen.errors and the standard library.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from copygen.errors import CopygenError
from copygen.kernel import kunit
from copygen.patch import kernelfile, message
from copygen.patch.splice import Spliced
from copygen.verify.contract.verdict import EXIT, worst


# how progress names the tree as it is, before any commit of the series
BEFORE = "before (base tree)"


@dataclass(frozen=True)
class Request:
    source: str                       # the .copy file
    tree: str                         # --kernel-tree
    kinds: tuple[str, ...] = ()       # copy_user / clear_user; () = what the strategy has
    routines: tuple[str, ...] = ()    # --routine as given (shown in the message)
    outdir: str = "patches"
    profiles: tuple[str, ...] = ()    # () = the strategy's target profiles
    series: bool = False
    allow_unproven: bool = False
    branch: str | None = None
    entries: frozenset[str] | None = None   # entry points to prove; None = every one
    proof_cache: str | None = "build/proofs"
    jobs: int = 1
    kunit: bool = False               # --test kunit: build, boot and test base and patch
    kunit_vector: bool = True         # ... a second boot with the V extension on
    measured: tuple[str, ...] = ()    # --measured: a board's measurement files


@dataclass
class Step:
    kinds: tuple[str, ...]
    spliced: Spliced | None                 # a uaccess step's splice
    files: dict[str, str | None] = field(default_factory=dict)   # path -> text (None: removed)
    change: message.Change | None = None
    message: str = ""
    commit: str = ""
    objects: tuple[str, ...] = ()           # a string step's objects Kbuild builds after it


@dataclass
class Result:
    branch: str
    layout: str
    file: str
    steps: list[Step]
    patches: list[Path] = field(default_factory=list)
    checkpatch: str | None = None
    kunit: dict[str, list] = field(default_factory=dict)   # base / patched -> kernel.kunit.Run
    stages: dict[str, float] = field(default_factory=dict)  # seconds per stage
    files: list[str] = field(default_factory=list)          # what the commits change
    rules: list[dict] = field(default_factory=list)         # the register rules followed


def patch_kinds(st, wanted: tuple[str, ...], series: bool) -> tuple[str, ...]:
    """The blocks to patch: those asked for, else the uaccess ones the
    strategy has, else its string block, when that is all it has (beside
    uaccess blocks a string block goes in only when asked: --routine string)."""
    have = tuple(k for k in kernelfile.KINDS if getattr(st, k) is not None)
    have_all = have + (("string",) if st.string is not None else ())
    if not have_all:
        raise CopygenError(f"{st.file} has no copy_user, clear_user or string block",
                           hint="copygen patch replaces uaccess.S routines and the mem* functions")
    for k in wanted:
        if k not in have_all:
            raise CopygenError(f"{st.file} has no {k} block", hint=f"it has: {', '.join(have_all)}")
    kinds = tuple(k for k in have_all if (k in wanted) if wanted) or have or have_all
    if series and len(kinds) < 2:
        raise CopygenError("--series needs two blocks: copy_user, clear_user or string",
                           hint="without --series one patch holds what the strategy has")
    return kinds


def plan_steps(kinds: tuple[str, ...], series: bool) -> list[tuple[str, ...]]:
    """The steps: the uaccess blocks (one patch, or one each in a series),
    then the string block."""
    uk = tuple(k for k in kinds if k != "string")
    steps = [(k,) for k in uk] if series else ([uk] if uk else [])
    return steps + ([("string",)] if "string" in kinds else [])


def command_line(req: Request, name: str) -> str:
    parts = ["copygen patch", name, "--kernel-tree", "LINUX"]
    parts += [f"--routine {k}" for k in req.routines or req.kinds]
    parts += [f"--profile {p}" for p in req.profiles]
    return " ".join(parts + (["--series"] if req.series else []))


def refuse_unproven(steps: list[Step], built) -> None:
    """Refuse the candidate when an entry point of a patched state is not
    proved: checked before anything else (the old state's proofs, the bench)
    runs on it."""
    bad = [p for i, s in enumerate(steps) for k in s.kinds for p in built[i + 1].proofs[k]
           if p.verdict != "proved"]
    if not bad:
        return
    lines = []
    for p in bad:
        for c, st in p.status.items():
            if st != "proved" and c != "B2s":
                lines.append(f"{p.symbol} {c}: {st}: {p.detail.get(c, '')}".rstrip(": "))
    err = CopygenError(f"the patched code is not proved ({', '.join(sorted({p.symbol for p in bad}))})",
                       hint="nothing was written; --allow-unproven makes a draft that says so",
                       exit_code=EXIT[worst([p.verdict for p in bad])])
    err.detail = "\n".join(lines)
    raise err


class Stages(dict):
    """Seconds spent in each stage of a patch (bench/kernel/kernel_loop.py records them)."""

    @contextmanager
    def __call__(self, name: str):
        t0 = time.monotonic()
        try:
            yield
        finally:
            self[name] = round(self.get(name, 0.0) + time.monotonic() - t0, 1)


def kunit_runs(req, tree, tip: str, tell, clock: Stages) -> dict:
    """The KUnit runs at HEAD and at `tip`, without and (kunit_vector) with
    V.  A test the patch makes fail refuses it (exit 3)."""
    with clock("kunit base"):
        base = kunit.run_commit(tree.root, tree.head, "base", req.kunit_vector, tell=tell)
    with clock("kunit patched"):
        patched = kunit.run_commit(tree.root, tip, "patched", req.kunit_vector, tell=tell)
    runs = {"base": base, "patched": patched}
    broke = [t for r in runs["patched"] for t in r.failed()
             if t not in {f for b in runs["base"] for f in b.failed()}]
    if broke:
        err = CopygenError(f"KUnit: the patch makes {', '.join(sorted(set(broke)))} fail",
                           hint="nothing was written; the kunit.py logs are in "
                                f"{kunit.build_dir(tree.root).parent}", exit_code=3)
        err.detail = "\n".join(message.kunit_lines(runs["base"], runs["patched"])
                               + tuple(kunit.first_failures(runs["patched"], sorted(set(broke)))))
        raise err
    return runs
