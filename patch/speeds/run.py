"""`copygen patch SLOW.copy --fast-body FAST.copy`, start to finish
(docs/speeds.md).

make_speeds_patch(): load both strategies and check their slots
(patch.dispatch.slots), check the tree and its probe before anything else,
put both under the tree's register rules, make the new uaccess.S
(patch.dispatch.plan), build it three ways (evidence below), prove the
new code first and refuse it unless every entry point is proved in both
key states (exit 3 or 4, as `copygen patch`), then prove the old code,
check the static branch in the machine code, compose, run the modelled
probe on each profile, bench, and only then commit on a new branch,
format the patch and run checkpatch.  The profiles (table_profiles): the
slow body's side (--profile, default FILE's target's) and always the fast
copy's cores (FAST_CORES and --fast-body's target's), each benched with
the body its probe picks.

The three builds of the new file, each linked with the shim:
* `plain`: as a kernel without the probe builds it: the slow copy alone
  (the baseline of the dispatch's cost);
* `off`: with the probe and jump labels (CONFIG_RISCV_PROBE_UNALIGNED_ACCESS,
  CONFIG_JUMP_LABEL) and the key defined, as linked: the nop, the slow copy;
* `on`: `off` with the site written as the jump-label code writes it
  when the key is enabled (verify.compose.jumplabel): the jump, the fast copy.

Role: orchestration.  May import gen (validate, build, parse), emu (elf,
timing.profile), verify (cache, inputs, checks.prove, compose), kernel.kunit,
patch.*, copygen.errors and the standard library.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from copygen import __version__
from copygen.emu.elf import read_elf
from copygen.emu.timing.profile import available, load_profile
from copygen.errors import CopygenError
from copygen.gen.build import shim_elf
from copygen.gen.front.parse import read_source
from copygen.gen.front.validate import load_file
from copygen.kernel import kunit
from copygen.patch import evidence, git, message, rules
from copygen.patch.speeds import commit_text, dispatch, probe
from copygen.patch.steps import (BEFORE, Request, Result, Stages, Step, patch_kinds as _kinds,
                                 refuse_unproven as _refuse_unproven)
from copygen.verify.checks.prove import RoutineReport
from copygen.verify.compose import jumplabel
from copygen.verify.compose import speeds as compose
from copygen.verify.contract.inputs import routines
from copygen.verify.solver.cache import ProofCache

# The cores a distribution kernel meets whose boot probe finds misaligned
# access fast, so that they run the fast copy: the SpacemiT K1 (x60) and the
# Sophgo SG2042 (c920), whose profiles cite the probe's verdict on each.
# The message always has their tables, whatever --profile names.
FAST_CORES = ("x60", "c920")

def wrapper(file: str, *defines: str) -> str:
    """FILE as a kernel with the boot probe and jump labels assembles it
    (and DEFINES set), with the key it branches on (struct static_key: 16
    bytes, off)."""
    lines = [f"/* copygen: {file} with the boot probe and jump labels configured */",
             "#define CONFIG_RISCV_PROBE_UNALIGNED_ACCESS 1", "#define CONFIG_JUMP_LABEL 1",
             *(f"#define {d} 1" for d in defines), f'#include "{file}"', "",
             "\t.data", "\t.balign\t8", f"\t.globl\t{dispatch.KEY}", f"{dispatch.KEY}:", "\t.zero\t16", ""]
    return "\n".join(lines)


def key_states(text: str, file: str, workdir: Path, defines: tuple[str, ...],
               bodies: tuple[str, str]) -> tuple[evidence.State, evidence.State]:
    """The new FILE built with the key off and with it on (the same ELF, the
    key's bytes set); BODIES names what runs in each state."""
    d = workdir / "off"
    d.mkdir(parents=True, exist_ok=True)
    (d / file).write_text(text)
    (d / "speeds.S").write_text(wrapper(file, *defines))
    off = evidence.State("off", d / file, shim_elf(d / "speeds.S", d), f"after, key off ({bodies[0]})")
    elf, _ = jumplabel.with_key(off.elf, dispatch.KEY, workdir / "on" / "speeds.elf")
    return off, evidence.State("on", off.path, elf, f"after, key on ({bodies[1]})")


@dataclass
class Speeds:
    """What the message and the JSON say beyond an ordinary patch."""

    dispatcher: str
    fast: str
    site: jumplabel.Site
    probes: list[probe.Probe]
    composed: list[RoutineReport]
    cost: list[evidence.Row] = field(default_factory=list)    # plain (before) vs off (after)
    slow_file: str = ""
    fast_file: str = ""
    probe_line: int = 0
    on_proofs: list[evidence.Proof] = field(default_factory=list)   # the key-on state's entry points
    # on each core whose probe picks the fast copy: the slow copy (before)
    # against the fast one (after), what that core gains or loses by it
    versus: list[evidence.Row] = field(default_factory=list)


@dataclass
class SpeedsResult(Result):
    speeds: Speeds | None = None


def _states(text: str, workdir: Path) -> dict[str, evidence.State]:
    """The three builds of the new file (the module's docstring)."""
    plain = evidence.build("plain", text, workdir, "after, without the probe (slow copy alone)")
    off, on = key_states(text, "uaccess.S", workdir, (), ("slow copy", "fast copy"))
    return {"plain": plain, "off": off, "on": on}


def _reports(state: evidence.State, kind: str) -> dict[str, RoutineReport]:
    kinds = dict(routines(state.elf))
    return {p.symbol: RoutineReport(p.symbol, kinds[p.symbol], dict(p.status), dict(p.detail), p.seconds)
            for p in state.proofs.get(kind, [])}


def _prove(states, before, kinds, req: Request, regs, tell, clock: Stages) -> None:
    """The new code in both key states first (refused unless proved), then the old."""
    cache = ProofCache(req.proof_cache) if req.proof_cache else None
    vr = regs.verify_rules()
    with clock("proofs after"):
        evidence.prove(states["off"], kinds, cache, req.jobs, req.entries, tell, vr)
        evidence.prove(states["on"], ("copy_user",), cache, req.jobs, req.entries, tell, vr)
    if not req.allow_unproven:
        _refuse_unproven([Step(kinds, None), Step(("copy_user",), None)],
                         [None, states["off"], states["on"]])
    with clock("proofs before"):
        evidence.prove(before, kinds, cache, req.jobs, req.entries, tell, vr)


def _bench(states, before, kinds, profiles, tell, clock: Stages) -> tuple[list, list, list, list]:
    """(rows, probes, cost, versus): each profile's rows from the body its
    probe picks; the dispatch's cost on the slow ones (plain vs off); on
    the fast ones, the slow copy against the fast one (off vs on)."""
    rows, probes, cost, versus = [], [], [], []
    with clock("bench"):
        for prof in profiles:
            pr = probe.run(prof)
            probes.append(pr)
            tell(f"probe on {prof.name}: misaligned words {pr.words}, bytes {pr.bytes} cycles: "
                 f"{pr.verdict()}")
            body = states["on" if pr.fast else "off"]
            rows += evidence.measure(before, body, ("copy_user",), [prof], tell=tell)
            if "clear_user" in kinds:
                rows += evidence.measure(before, states["off"], ("clear_user",), [prof], tell=tell)
            if not pr.fast:
                cost += evidence.measure(states["plain"], states["off"], ("copy_user",), [prof], tell=tell)
            else:
                versus += evidence.measure(states["off"], states["on"], ("copy_user",), [prof], tell=tell)
    return rows, probes, cost, versus


def table_profiles(slow_target: str, fast_target: str, given: tuple[str, ...] = ()) -> list[str]:
    """The profiles of the message's tables, each once: the slow body's side
    (--profile, or the slow strategy's target profile), then the fast
    slot's cores (the fast strategy's target profile and FAST_CORES).  Each
    table shows the body its profile's modelled probe picks."""
    return list(dict.fromkeys([*(given or (slow_target,)), fast_target, *FAST_CORES]))


def _load(req: Request, fast_files: tuple[str, ...]):
    """Both strategies, their slots and the blocks to patch; nothing of the tree yet."""
    st = load_file(req.source, available())
    fast = dispatch.slots(st, [load_file(f, available()) for f in fast_files])
    kinds = _kinds(st, req.kinds, False)
    if req.series or "string" in kinds or "copy_user" not in kinds:
        raise CopygenError("--fast-body makes one patch of the user copy (and clear_user, if asked)",
                           hint="leave out --series and --routine string; patch those in another run")
    return st, fast, kinds


def open_tree(req: Request, branch: str, slow, fast, files: tuple[str, ...] | None):
    """Check the tree, its probe and (with --test kunit) its KUnit before
    anything else; read its register rules from FILES (default: the file
    the patch changes) and put both strategies under them.  Returns (tree,
    show, the probe's line, the rules, slow, fast)."""
    tree = git.check_tree(req.tree, branch)
    show = lambda rel: git.show(tree, "HEAD", rel)  # noqa: E731
    probe_line = dispatch.probe(show)
    if req.kunit:
        kunit.check_tree(tree.root, tree.head)
    regs = rules.with_strategy(rules.with_strategy(rules.from_tree(show, files or (tree.rel,)), slow), fast)
    return tree, show, probe_line, regs, rules.under(slow, regs), rules.under(fast, regs)


def make_speeds_patch(req: Request, fast_files: tuple[str, ...], tell=lambda msg: None) -> SpeedsResult:
    st, fast, kinds = _load(req, fast_files)
    branch = req.branch or f"copygen/{st.stem}-speeds"
    tree, show, probe_line, regs, st, fast = open_tree(req, branch, st, fast, None)
    text = git.head_text(tree)
    plan = dispatch.plan(st, fast, text, tree.rel, kinds)
    profiles = [load_profile(p) for p in table_profiles(
        st.copy_user.target.profile, fast.copy_user.target.profile, tuple(req.profiles))]
    clock = Stages()
    with tempfile.TemporaryDirectory(prefix="copygen-patch-") as tmp:
        states = _states(plan.text, Path(tmp))
        before = evidence.build("before", text, Path(tmp), BEFORE)
        syms = read_elf(states["off"].elf).symbols
        site = compose.check_site(states["off"].elf, dispatch.KEY, syms[plan.dispatcher], syms[plan.fast])
        _prove(states, before, kinds, req, regs, tell, clock)
        off, on = _reports(states["off"], "copy_user"), _reports(states["on"], "copy_user")
        composed = [compose.combine(off[s], on[s]) for s in off if s in on]
        rows, probes, cost, versus = _bench(states, before, kinds, profiles, tell, clock)
    sp = Speeds(plan.dispatcher, plan.fast, site, probes, composed, cost, req.source, fast_files[0],
                probe_line, list(states["on"].proofs["copy_user"]), versus)
    after = {k: list(states["off"].proofs[k]) for k in kinds}
    change = message.Change(kinds, plan.layout, dict(before.proofs), after, rows,
                            {p.name: p.provenance for p in profiles},
                            draft=any(p.verdict != "proved" for k in kinds for p in after[k])
                            or any(p.verdict != "proved" for p in sp.on_proofs),
                            rules=tuple(regs.lines()))
    res = _write(req, tree, branch, plan, change, sp, tell, clock)
    res.rules = regs.as_list()
    return res


def _message(req, tree, change, sp: Speeds) -> str:
    sources = [(read_source(f), Path(f).name) for f in (req.source, sp.fast_file)]
    return commit_text.commit_message(change, sp.on_proofs, sp, __version__, _command(req, sp), sources,
                                    tree.signoff)


def _command(req: Request, sp: Speeds) -> str:
    parts = ["copygen patch", Path(req.source).name, "--fast-body", Path(sp.fast_file).name,
             "--kernel-tree", "LINUX"]
    parts += [f"--routine {k}" for k in req.routines]
    return " ".join(parts + [f"--profile {p}" for p in req.profiles])


def _write(req, tree, branch, plan, change, sp, tell, clock) -> SpeedsResult:
    files = {tree.rel: plan.text}
    text = _message(req, tree, change, sp)
    tip = git.commit_files(tree, tree.head, files, text)
    runs: dict = {}
    if req.kunit:
        change, runs = _kunit(req, tree, tip, change, tell, clock)
        text = _message(req, tree, change, sp)
        tip = git.commit_files(tree, tree.head, files, text)
    git.create_branch(tree, branch, tip)
    tell(f"branch {branch} -> {tip[:12]}")
    step = Step(change.kinds, plan.spliced, files, change, text, tip)
    res = SpeedsResult(branch, plan.layout, tree.rel, [step], kunit=runs,
                       files=git.changed(tree, tree.head, tip), speeds=sp)
    res.patches = git.format_patch(tree, tip, 1, Path(req.outdir), cover=False)
    res.checkpatch = git.checkpatch(tree, res.patches)
    res.stages = dict(clock)
    return res


def _kunit(req, tree, tip: str, change, tell, clock: Stages):
    """Build and boot HEAD and the patch; a test the patch breaks refuses it."""
    with clock("kunit base"):
        base = kunit.run_commit(tree.root, tree.head, "base", req.kunit_vector, tell=tell)
    with clock("kunit patched"):
        patched = kunit.run_commit(tree.root, tip, "patched", req.kunit_vector, tell=tell)
    broke = sorted({t for r in patched for t in r.failed()} - {t for r in base for t in r.failed()})
    if broke:
        err = CopygenError(f"KUnit: the patch makes {', '.join(broke)} fail", exit_code=3,
                           hint=f"nothing was written; the kunit.py logs are in "
                                f"{kunit.build_dir(tree.root).parent}")
        err.detail = "\n".join(message.kunit_lines(base, patched))
        raise err
    return replace(change, kunit=message.kunit_lines(base, patched)), {"base": base, "patched": patched}
