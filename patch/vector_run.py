"""`copygen patch --routine vector_usercopy`, start to finish: the tree's
uaccess_vector.S and Kconfig patched (patch.vector), the new loop proved at
every VLEN before anything else (refused unless proved, or
`allow_unproven`), then the old one; both benched against the tree's
scalar copy; with `kunit` the tree booted before and after, without and
with V; one commit on a new branch, format-patch and checkpatch.
patch.run.make_patch hands a vector request here.

Role: orchestration.  May import emu.timing.profile, gen (validate), verify (cache, verdict,
inputs, vprove), kernel, patch.*, copygen.errors and the standard library.
"""
from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from copygen import __version__
from copygen.emu.timing.profile import available
from copygen.errors import CopygenError
from copygen.gen.front.validate import load_file
from copygen.kernel import kunit
from copygen.patch import evidence, git, kernelfile, message, vector
from copygen.patch.steps import (BEFORE, Request, Result, Stages, Step, command_line, kunit_runs,
                                 refuse_unproven)
from copygen.verify.vector import vprove
from copygen.verify.solver.cache import ProofCache, prove_cached
from copygen.verify.contract.inputs import routines
from copygen.verify.contract.verdict import verdict


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
    clock = Stages()
    change, bench = _vector_change(req, tree, pl, old, profiles, clock, tell)
    return _vector_commit(req, st, tree, branch, pl, change, bench, clock, tell)


def _vector_change(req: Request, tree, pl, old: str, profiles, clock: Stages,
                   tell) -> tuple[message.Change, object]:
    """The new loop proved at every VLEN (refused unless proved, or
    `allow_unproven`), then the old, and both benched against the tree's
    scalar copy: the Change, and the bench's figures for the message."""
    scalar = git.show(tree, "HEAD", kernelfile.UACCESS)
    cache = ProofCache(req.proof_cache) if req.proof_cache else None
    rows, bench = [], None
    with tempfile.TemporaryDirectory(prefix="copygen-patch-") as tmp:
        after = evidence.build("after", pl.text, Path(tmp), "after (patched: vector_usercopy)")
        with clock("proofs after"):
            after.proofs[vector.KIND] = _vector_proofs(after, cache, tell)
        if not req.allow_unproven:
            refuse_unproven([Step((vector.KIND,), None)], [None, after])
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
    return change, bench


def _vector_commit(req: Request, st, tree, branch: str, pl, change: message.Change, bench,
                   clock: Stages, tell) -> Result:
    """The commit (made again with the KUnit results under --test kunit),
    the branch, format-patch and checkpatch."""
    text = vector.commit_message(pl, st, change, __version__,
                                 command_line(req, Path(req.source).name), tree.signoff, bench)
    files = {tree.rel: pl.text, vector.KCONFIG: pl.kconfig}
    tip = git.commit_files(tree, tree.head, files, text)
    runs: dict = {}
    if req.kunit:       # the loop runs only with V on: both boots, and the results in the message
        runs = kunit_runs(req, tree, tip, tell, clock)
        change = replace(change, kunit=message.kunit_lines(runs["base"], runs["patched"]))
        text = vector.commit_message(pl, st, change, __version__,
                                     command_line(req, Path(req.source).name), tree.signoff, bench)
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
