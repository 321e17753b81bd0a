"""`copygen patch`, start to finish.

make_patch(): load the strategy; check the tree (patch.git) before anything
else; cut the change into steps (one, or with `series` copy_user then
clear_user); apply each step to the file as HEAD has it (kernelfile, bodies,
splice); build every state and prove the entry points each step touches
after it; refuse a candidate whose proof is not complete (exit 3 when a
clause is violated, 4 when one is unknown, as `copygen verify`) unless
`allow_unproven`, before anything else runs on it; then prove the states
before each step and bench both (evidence); only then commit each step on the
new branch, format the patches (and a series' cover letter) and run the
tree's checkpatch.

Role: orchestration.  May import gen, emu.profile, verify (cache, verdict),
patch.* and the standard library.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from copygen import __version__
from copygen.emu.profile import available, load_profile
from copygen.gen.errors import CopygenError
from copygen.gen.parse import read_source
from copygen.gen.validate import load_file
from copygen.patch import bodies, evidence, git, kernelfile, message
from copygen.patch.splice import Spliced, splice
from copygen.verify.cache import ProofCache
from copygen.verify.verdict import EXIT, worst


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


@dataclass
class Step:
    kinds: tuple[str, ...]
    spliced: Spliced
    change: message.Change | None = None
    message: str = ""
    commit: str = ""


@dataclass
class Result:
    branch: str
    layout: str
    file: str
    steps: list[Step]
    patches: list[Path] = field(default_factory=list)
    checkpatch: str | None = None


def _kinds(st, wanted: tuple[str, ...], series: bool) -> tuple[str, ...]:
    have = tuple(k for k in kernelfile.KINDS if getattr(st, k) is not None)
    if not have:
        raise CopygenError(f"{st.file} has no copy_user or clear_user block",
                           hint="copygen patch replaces uaccess.S routines")
    for k in wanted:
        if k not in have:
            raise CopygenError(f"{st.file} has no {k} block", hint=f"it has: {', '.join(have)}")
    kinds = tuple(k for k in have if not wanted or k in wanted)
    if series and len(kinds) != 2:
        raise CopygenError("--series needs both a copy_user and a clear_user block",
                           hint="without --series one patch holds what the strategy has")
    return kinds


def _apply(st, text: str, path: str, kinds) -> tuple[str, Spliced]:
    lines = text.splitlines(keepends=True)
    lay, places = kernelfile.places(lines, path, kinds)
    return lay, splice(text, bodies.bodies(st, lines, places), path)


def _command(req: Request, name: str) -> str:
    parts = ["copygen patch", name, "--kernel-tree", "LINUX"]
    parts += [f"--routine {k}" for k in req.routines or req.kinds]
    parts += [f"--profile {p}" for p in req.profiles]
    return " ".join(parts + (["--series"] if req.series else []))


def _refuse_unproven(steps: list[Step], built) -> None:
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


def _evidence(states, steps, req, profiles, workdir: Path, tell) -> None:
    cache = ProofCache(req.proof_cache) if req.proof_cache else None
    names = ["before"] + [f"after {'+'.join(s.kinds)}" for s in steps]
    built = [evidence.build(f"state{i}", t, workdir, names[i]) for i, t in enumerate(states)]
    for i, s in enumerate(steps):
        evidence.prove(built[i + 1], s.kinds, cache, req.jobs, req.entries, tell)
    if not req.allow_unproven:
        _refuse_unproven(steps, built)
    cal = {p.name: p.calibration_error for p in profiles}
    for i, s in enumerate(steps):
        before, after = built[i], built[i + 1]
        evidence.prove(before, s.kinds, cache, req.jobs, req.entries, tell)
        rows = evidence.measure(before, after, s.kinds, profiles, tell=tell)
        s.change = message.Change(s.kinds, "", {k: before.proofs[k] for k in s.kinds},
                                  {k: after.proofs[k] for k in s.kinds}, rows, cal,
                                  skipped=tuple(after.skipped), draft=req.allow_unproven and any(
                                      p.verdict != "proved" for k in s.kinds for p in after.proofs[k]))


def make_patch(req: Request, tell=lambda msg: None) -> Result:
    st = load_file(req.source, available())
    kinds = _kinds(st, req.kinds, req.series)
    branch = req.branch or f"copygen/{st.stem}"
    tree = git.check_tree(req.tree, branch)
    text = git.head_text(tree)
    plan = [(k,) for k in kinds] if req.series else [kinds]
    states, steps, layout = [text], [], ""
    for ks in plan:
        layout, sp = _apply(st, states[-1], tree.rel, ks)
        states.append(sp.text)
        steps.append(Step(ks, sp))
    names = sorted({getattr(st, k).target.profile for k in kinds})
    profiles = [load_profile(p) for p in (req.profiles or names)]
    with tempfile.TemporaryDirectory(prefix="copygen-patch-") as tmp:
        _evidence(states, steps, req, profiles, Path(tmp), tell)
    return _write(req, st, tree, branch, layout, steps, tell)


def _write(req, st, tree, branch, layout, steps, tell) -> Result:
    name = Path(req.source).name
    source = read_source(req.source)
    parent = tree.head
    for s in steps:
        s.change = replace(s.change, layout=layout)
        s.message = message.commit_message(s.change, __version__, _command(req, name), source,
                                           name, tree.signoff)
        s.commit = parent = git.commit(tree, parent, s.spliced.text, s.message)
    git.create_branch(tree, branch, parent)
    tell(f"branch {branch} -> {parent[:12]}")
    res = Result(branch, layout, tree.rel, steps)
    res.patches = git.format_patch(tree, parent, len(steps), Path(req.outdir), cover=req.series)
    if req.series:
        _fill_cover(res.patches[0], steps, layout)
    res.checkpatch = git.checkpatch(tree, res.patches)
    return res


def _fill_cover(path: Path, steps: list[Step], layout: str) -> None:
    """The cover letter format-patch leaves with placeholders, filled with
    the series' combined evidence."""
    first, second = steps[0].change, steps[1].change
    combined = message.Change(first.kinds + second.kinds, layout,
                              {**first.before, **second.before}, {**first.after, **second.after},
                              first.rows + second.rows, {**first.calibration, **second.calibration},
                              first.skipped + second.skipped, first.draft or second.draft)
    subject, blurb = message.cover_letter(combined)
    text = path.read_text()
    text = text.replace("*** SUBJECT HERE ***", subject)
    path.write_text(text.replace("*** BLURB HERE ***", blurb))
