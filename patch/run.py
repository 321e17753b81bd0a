"""`copygen patch`, start to finish.

make_patch(): load the strategy; check the tree (patch.git) before anything
else; read the tree's register rules and put the strategy under them
(patch.rules: the code follows them, the proofs add clause R1); cut the change into steps (one, or with `series` copy_user then
clear_user); apply each step to the file as HEAD has it (kernelfile, bodies,
splice); build every state and prove the entry points each step touches
after it; refuse a candidate whose proof is not complete (exit 3 when a
clause is violated, 4 when one is unknown, as `copygen verify`) unless
`allow_unproven`, before anything else runs on it; then prove the states
before each step and bench both (evidence); only then commit each step on the
new branch, format the patches (and a series' cover letter) and run the
tree's checkpatch.  With `kunit` the tree is built, booted and tested at
HEAD and at the patch (kernel.kunit) before the branch is made, and the
results go into the messages.

With --routine vector_usercopy (make_vector_patch) the tree's
uaccess_vector.S and Kconfig are patched instead (patch.vector): the new
loop is proved at every VLEN before anything else, then the old one.

Role: orchestration.  May import gen, emu.timing.profile, verify (cache, verdict,
inputs, vprove), kernel, patch.*, copygen.errors and the standard library.
"""
from __future__ import annotations

import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from copygen import __version__
from copygen.emu.timing.profile import available, load_profile
from copygen.errors import CopygenError
from copygen.gen.front.parse import read_source
from copygen.gen.front.validate import load_file
from copygen.kernel import kbuild, kunit
from copygen.patch import bodies, evidence, git, kernelfile, message, rules, stringfile, vector
from copygen.patch.splice import Spliced, splice
from copygen.verify.vector import vprove
from copygen.verify.solver.cache import ProofCache, prove_cached
from copygen.verify.contract.inputs import routines
from copygen.verify.contract.verdict import EXIT, verdict, worst

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


def _kinds(st, wanted: tuple[str, ...], series: bool) -> tuple[str, ...]:
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


def _plan(kinds: tuple[str, ...], series: bool) -> list[tuple[str, ...]]:
    """The steps: the uaccess blocks (one patch, or one each in a series),
    then the string block."""
    uk = tuple(k for k in kinds if k != "string")
    steps = [(k,) for k in uk] if series else ([uk] if uk else [])
    return steps + ([("string",)] if "string" in kinds else [])


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


class Stages(dict):
    """Seconds spent in each stage of a patch (bench/kernel/kernel_loop.py records them)."""

    @contextmanager
    def __call__(self, name: str):
        t0 = time.monotonic()
        try:
            yield
        finally:
            self[name] = round(self.get(name, 0.0) + time.monotonic() - t0, 1)


def _evidence(states, steps, req, profiles, workdir: Path, tell, clock: Stages,
              regs: rules.Rules = rules.Rules()) -> None:
    """Prove and bench every state (under the tree's register rules `regs`)."""
    cache = ProofCache(req.proof_cache) if req.proof_cache else None
    # progress names each state as a kernel developer would: the base tree,
    # and the tree with each commit of the series applied
    labels = [BEFORE] + [f"after (patched: {'+'.join(s.kinds)})" for s in steps]
    dirs = ["before"] + [f"after{i}" for i in range(1, len(steps) + 1)]
    built = [evidence.build(dirs[i], t, workdir, labels[i]) for i, t in enumerate(states)]
    with clock("proofs after"):
        for i, s in enumerate(steps):
            evidence.prove(built[i + 1], s.kinds, cache, req.jobs, req.entries, tell,
                           regs.verify_rules())
    if not req.allow_unproven:
        _refuse_unproven(steps, built)
    cal = {p.name: p.provenance for p in profiles}
    for i, s in enumerate(steps):
        before, after = built[i], built[i + 1]
        with clock("proofs before"):
            evidence.prove(before, s.kinds, cache, req.jobs, req.entries, tell,
                           regs.verify_rules())
        with clock("bench"):
            rows = evidence.measure(before, after, s.kinds, profiles, tell=tell)
        board, board_on = evidence.board_rows(req.measured, req.source, s.kinds)
        s.change = message.Change(s.kinds, "", {k: before.proofs[k] for k in s.kinds},
                                  {k: after.proofs[k] for k in s.kinds}, rows, cal,
                                  skipped=tuple(after.skipped), draft=req.allow_unproven and any(
                                      p.verdict != "proved" for k in s.kinds for p in after.proofs[k]),
                                  board=tuple(board), board_on=board_on,
                                  rules=tuple(regs.lines()))


def _vector_proofs(state, cache, tell) -> list:
    """Every vector entry point of `state`, proved at each VLEN."""
    out = []
    for sym, vkind in routines(state.elf):
        if vkind != "vector":
            continue
        tell(f"proving {sym} at VLEN {', '.join(map(str, vprove.VLENS))}, {state.label}")
        rep = prove_cached(state.elf, sym, "vector", cache,
                           prove=lambda callee, sym=sym: vprove.prove_vectors(str(state.elf), symbol=sym))
        out.append(evidence.Proof(sym, vector.KIND, verdict(rep), dict(rep.status),
                                  dict(rep.detail), rep.seconds))
    return out


def make_vector_patch(req: Request, tell=lambda msg: None) -> Result:
    """--routine vector_usercopy: the loop into uaccess_vector.S and the
    threshold into Kconfig (patch.vector); the new code proved at every
    VLEN first (refused unless proved, or `allow_unproven`), then the old;
    with --test kunit the tree booted before and after, without and with
    V; one commit on a new branch, format-patch and checkpatch."""
    st = load_file(req.source, available())
    branch = req.branch or f"copygen/{st.stem}-vector"
    tree = git.check_tree(req.tree, branch, vector.VECTOR)
    if req.kunit:   # a tree the test step cannot use is refused before the proofs
        kunit.check_tree(tree.root, tree.head)
    old, kconfig = git.head_text(tree), git.show(tree, "HEAD", vector.KCONFIG)
    if kconfig is None:
        raise CopygenError(f"{vector.KCONFIG} is not committed in {tree.root}",
                           hint="the vector threshold is its default; commit the whole tree")
    pl = vector.plan(st, old, kconfig, tree.rel)
    profiles = evidence.vector_profiles(req.profiles)   # a profile without [vector] stops here
    scalar = git.show(tree, "HEAD", kernelfile.UACCESS)
    clock = Stages()
    cache = ProofCache(req.proof_cache) if req.proof_cache else None
    rows, bench = [], None
    with tempfile.TemporaryDirectory(prefix="copygen-patch-") as tmp:
        after = evidence.build("after", pl.text, Path(tmp), "after (patched: vector_usercopy)")
        with clock("proofs after"):
            after.proofs[vector.KIND] = _vector_proofs(after, cache, tell)
        if not req.allow_unproven:
            _refuse_unproven([Step((vector.KIND,), None)], [None, after])
        before = evidence.build("before", old, Path(tmp), BEFORE)
        with clock("proofs before"):
            before.proofs[vector.KIND] = _vector_proofs(before, cache, tell)
        if scalar is not None:      # copy_to_user below the threshold is the tree's scalar copy
            with clock("bench"):
                rows, bench = evidence.measure_vector(
                    evidence.build("scalar", scalar, Path(tmp), "the tree's scalar copy"), before,
                    after, (pl.old_threshold, pl.threshold), profiles, Path(tmp), tell=tell)
    draft = any(p.verdict != "proved" for p in after.proofs[vector.KIND])
    change = message.Change((vector.KIND,), pl.layout, dict(before.proofs), dict(after.proofs),
                            rows, {p.name: p.provenance for p in profiles}, draft=draft)
    text = vector.commit_message(pl, st, change, __version__,
                                 _command(req, Path(req.source).name), tree.signoff, bench)
    files = {tree.rel: pl.text, vector.KCONFIG: pl.kconfig}
    tip = git.commit_files(tree, tree.head, files, text)
    runs: dict = {}
    if req.kunit:       # the loop runs only with V on: both boots, and the results in the message
        runs = _kunit_runs(req, tree, tip, tell, clock)
        change = replace(change, kunit=message.kunit_lines(runs["base"], runs["patched"]))
        text = vector.commit_message(pl, st, change, __version__,
                                     _command(req, Path(req.source).name), tree.signoff, bench)
        tip = git.commit_files(tree, tree.head, files, text)
    git.create_branch(tree, branch, tip)
    tell(f"branch {branch} -> {tip[:12]}")
    step = Step((vector.KIND,), None, files, change, text, tip)
    res = Result(branch, pl.layout, tree.rel, [step], kunit=runs,
                 files=git.changed(tree, tree.head, tip))
    res.patches = git.format_patch(tree, tip, 1, Path(req.outdir), cover=False)
    res.checkpatch = git.checkpatch(tree, res.patches)
    res.stages = dict(clock)
    return res


def make_patch(req: Request, tell=lambda msg: None) -> Result:
    if vector.KIND in req.kinds:
        if set(req.kinds) != {vector.KIND}:
            raise CopygenError("--routine vector_usercopy makes a patch of its own",
                               hint="patch the scalar blocks in a second run")
        if req.measured:
            raise CopygenError("--measured is not taken by the vector patch: its cases are benched "
                               "at VLENs a board run does not record",
                               hint="leave out --measured, or patch the scalar blocks with it")
        return make_vector_patch(req, tell)
    st = load_file(req.source, available())
    kinds = _kinds(st, req.kinds, req.series)
    branch = req.branch or f"copygen/{st.stem}"
    tree = git.check_tree(req.tree, branch)
    if req.kunit:   # a tree the test step cannot use is refused before the proofs
        kunit.check_tree(tree.root, tree.head)
    text = git.head_text(tree)
    replaced = ((tree.rel,) if set(kinds) - {"string"} else ()) + \
        (rules.STRING_FILES if "string" in kinds else ())
    regs = rules.with_strategy(rules.from_tree(lambda rel: git.show(tree, "HEAD", rel), replaced), st)
    st = rules.under(st, regs)
    states, steps, layout = [text], [], ""
    for ks in _plan(kinds, req.series):
        if ks == ("string",):
            plan = stringfile.plan(st, Path(req.source).name,
                                   lambda rel: git.show(tree, "HEAD", rel),
                                   lambda rel: git.users(tree, "HEAD", rel))
            steps.append(Step(ks, None, plan.files, objects=plan.objects_after))
            continue
        layout, sp = _apply(st, states[-1], tree.rel, ks)
        states.append(sp.text)
        steps.append(Step(ks, sp, {tree.rel: sp.text}))
    names = sorted({(st.string if k == "string" else getattr(st, k)).target.profile for k in kinds})
    profiles = [load_profile(p) for p in (req.profiles or names)]
    clock = Stages()
    with tempfile.TemporaryDirectory(prefix="copygen-patch-") as tmp:
        uaccess = [s for s in steps if s.spliced is not None]
        if uaccess:
            _evidence(states, uaccess, req, profiles, Path(tmp), tell, clock, regs)
        for s in steps:
            if s.spliced is None:
                _string_evidence(s, tree, req, profiles, Path(tmp), tell, clock, regs)
    res = _write(req, st, tree, branch, layout or "string", steps, tell, clock)
    res.stages, res.rules = dict(clock), regs.as_list()
    return res


def _string_evidence(step: Step, tree, req, profiles, workdir: Path, tell, clock: Stages,
                     regs: rules.Rules = rules.Rules()) -> None:
    """Kbuild's objects of the tree's mem* functions and of the generated
    string.c, proved (the new ones first: an unproved candidate stops
    here) and benched."""
    trial = git.commit_files(tree, tree.head, step.files, "copygen: string functions, to build")
    with clock("kbuild objects"):
        objs = kbuild.objects(tree.root, trial, step.objects,
                              workdir / "kbuild-after", tell=tell)
    asm = tuple(Path(o).stem for o in step.objects if not o.endswith("/string.o"))
    sources = [Path(o).stem + (".c" if o.endswith("/string.o") else ".S") for o in step.objects]
    after = evidence.linked("string-after", list(objs.values()), workdir,
                             f"after (patched: {', '.join(sources)})")
    cache = ProofCache(req.proof_cache) if req.proof_cache else None
    with clock("proofs after"):
        evidence.prove(after, ("string",), cache, req.jobs, None, tell, regs.verify_rules())
    if not req.allow_unproven:
        _refuse_unproven([step], [None, after])
    with clock("kbuild objects"):
        objs = kbuild.objects(tree.root, tree.head, stringfile.OBJECTS_BEFORE,
                              workdir / "kbuild-before", tell=tell)
    before = evidence.linked("string-before", list(objs.values()), workdir, BEFORE)
    with clock("proofs before"):
        evidence.prove(before, ("string",), cache, req.jobs, None, tell, regs.verify_rules())
    with clock("bench"):
        rows = evidence.measure(before, after, ("string",), profiles, tell=tell)
    memcpy_s = step.files.get(stringfile.MEMCPY_S) or ""
    board, board_on = evidence.board_rows(req.measured, req.source, ("string",))
    step.change = message.Change(("string",), message.string_layout(asm),
                                 {"string": before.proofs["string"]},
                                 {"string": after.proofs["string"]}, rows,
                                 {p.name: p.provenance for p in profiles},
                                 draft=req.allow_unproven and any(
                                     p.verdict != "proved" for p in after.proofs["string"]),
                                 memmove_in_memcpy="SYM_FUNC_START(__memmove)" in memcpy_s,
                                 board=tuple(board), board_on=board_on,
                                 rules=tuple(regs.lines()))


def _commit_steps(req, st, tree, layout, steps) -> str:
    """Commit every step on top of HEAD (the checkout untouched); the tip."""
    name = Path(req.source).name
    source = read_source(req.source)
    parent = tree.head
    for s in steps:
        if s.spliced is not None:
            s.change = replace(s.change, layout=layout)
        s.message = message.commit_message(s.change, __version__, _command(req, name), source,
                                           name, tree.signoff)
        s.commit = parent = git.commit_files(tree, parent, s.files, s.message)
    return parent


def _kunit(req, st, tree, layout, steps, tip: str, tell, clock: Stages) -> tuple[str, dict]:
    """Build, boot and test the tree at HEAD and at the patch's tip; the
    results go into every message (so the commits are made again)."""
    runs = _kunit_runs(req, tree, tip, tell, clock)
    lines = message.kunit_lines(runs["base"], runs["patched"])
    for s in steps:
        s.change = replace(s.change, kunit=lines)
    return _commit_steps(req, st, tree, layout, steps), runs


def _kunit_runs(req, tree, tip: str, tell, clock: Stages) -> dict:
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


def _write(req, st, tree, branch, layout, steps, tell, clock: Stages) -> Result:
    parent = _commit_steps(req, st, tree, layout, steps)
    runs: dict = {}
    if req.kunit:
        parent, runs = _kunit(req, st, tree, layout, steps, parent, tell, clock)
    git.create_branch(tree, branch, parent)
    tell(f"branch {branch} -> {parent[:12]}")
    res = Result(branch, layout, tree.rel, steps, kunit=runs, files=git.changed(tree, tree.head, parent))
    res.patches = git.format_patch(tree, parent, len(steps), Path(req.outdir), cover=req.series)
    if req.series:
        _fill_cover(res.patches[0], steps, layout)
    res.checkpatch = git.checkpatch(tree, res.patches)
    return res


def _fill_cover(path: Path, steps: list[Step], layout: str) -> None:
    """The cover letter format-patch leaves with placeholders, filled with
    the series' combined evidence."""
    chs = [s.change for s in steps]
    combined = message.Change(sum((c.kinds for c in chs), ()), layout,
                              {k: v for c in chs for k, v in c.before.items()},
                              {k: v for c in chs for k, v in c.after.items()},
                              [r for c in chs for r in c.rows],
                              {k: v for c in chs for k, v in c.calibration.items()},
                              sum((c.skipped for c in chs), ()), any(c.draft for c in chs),
                              chs[-1].kunit, board=sum((c.board for c in chs), ()),
                              board_on="; ".join(dict.fromkeys(c.board_on for c in chs if c.board_on)),
                              rules=chs[0].rules)
    subject, blurb = message.cover_letter(combined)
    text = path.read_text()
    text = text.replace("*** SUBJECT HERE ***", subject)
    path.write_text(text.replace("*** BLURB HERE ***", blurb))
