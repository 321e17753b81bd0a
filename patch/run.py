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
results go into the messages.  The request, the steps, the result and the
stages every kind of run shares are patch.steps'.

With --routine vector_usercopy (make_vector_patch, patch.vector_run) the
tree's uaccess_vector.S and Kconfig are patched instead (patch.vector): the
new loop is proved at every VLEN before anything else, then the old one.

Role: orchestration.  May import gen, emu.timing.profile, verify (cache), kernel, patch.*,
copygen.errors and the standard library.
"""
from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from copygen import __version__
from copygen.emu.timing.profile import available, load_profile
from copygen.errors import CopygenError
from copygen.gen.front.parse import read_source
from copygen.gen.front.validate import load_file
from copygen.kernel import kbuild, kunit
from copygen.patch import bodies, evidence, git, kernelfile, message, rules, stringfile, vector
from copygen.patch.splice import Spliced, splice
from copygen.patch.steps import (BEFORE, Request, Result, Stages, Step, command_line, kunit_runs,
                                 patch_kinds, plan_steps, refuse_unproven)
from copygen.patch.vector_run import make_vector_patch
from copygen.verify.solver.cache import ProofCache


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
    kinds = patch_kinds(st, req.kinds, req.series)
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
    for ks in plan_steps(kinds, req.series):
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


def _apply(st, text: str, path: str, kinds) -> tuple[str, Spliced]:
    lines = text.splitlines(keepends=True)
    lay, places = kernelfile.places(lines, path, kinds)
    return lay, splice(text, bodies.bodies(st, lines, places), path)


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
        refuse_unproven(steps, built)
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
        refuse_unproven([step], [None, after])
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
        s.message = message.commit_message(s.change, __version__, command_line(req, name), source,
                                           name, tree.signoff)
        s.commit = parent = git.commit_files(tree, parent, s.files, s.message)
    return parent


def _kunit(req, st, tree, layout, steps, tip: str, tell, clock: Stages) -> tuple[str, dict]:
    """Build, boot and test the tree at HEAD and at the patch's tip; the
    results go into every message (so the commits are made again)."""
    runs = kunit_runs(req, tree, tip, tell, clock)
    lines = message.kunit_lines(runs["base"], runs["patched"])
    for s in steps:
        s.change = replace(s.change, kunit=lines)
    return _commit_steps(req, st, tree, layout, steps), runs


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
