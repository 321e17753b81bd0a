"""`copygen patch SLOW.copy --fast-body FAST.copy --routine string`, start to
finish (docs/speeds.md, "The string functions").

make_speeds_string_patch(): load both strategies and check their slots
(patch.stringplan.slots), check the tree and its probe before anything
else, put both under the tree's register rules, make the files of the
change (patch.stringplan.plan), build the new memcpy.S two ways and
the tree's memcpy.S and memmove.S once, check the static branches in the
machine code, prove the new code first in both key states and refuse it
unless every entry point is proved (exit 3 or 4, as `copygen patch`),
compose each entry point's verdict (verify.compose.speeds), prove the
old code, run the modelled probe on each profile and bench the body it
picks against the tree's, and only then commit on a new branch, format
the patch and run checkpatch (and with --test kunit boot the tree before
and after).

The builds, each assembled against the shim's headers and linked with
the shim (copygen's own build of the file as a kernel with the probe and
jump labels assembles it, the key defined; Kbuild is not run):
* `off`: as linked: the nops, SLOW's memcpy and memmove;
* `on`: `off` with both sites written as the jump-label code writes them
  when the key is enabled (verify.compose.jumplabel): FAST's;
* `before`: the tree's memcpy.S and memmove.S.

Role: orchestration.  May import gen (validate, build, parse), emu (elf,
timing.profile), measure.bench, verify (cache, inputs, compose), kernel.kunit,
patch.*, copygen.errors and the standard library.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from copygen import __version__
from copygen.emu.elf import read_elf
from copygen.emu.timing.profile import available, load_profile
from copygen.errors import CopygenError
from copygen.gen.build import build_assembly
from copygen.gen.front.parse import read_source
from copygen.gen.front.validate import load_file
from copygen.measure.bench import Bench, Case
from copygen.patch import evidence, git, message, rules, stringfile
from copygen.patch.speeds import dispatch, probe, stringplan
from copygen.patch.steps import (BEFORE, Request, Result, Stages, Step, kunit_runs as _kunit_runs,
                                 refuse_unproven as _refuse_unproven)
from copygen.patch.speeds.run import key_states, open_tree, table_profiles
from copygen.verify.checks.prove import RoutineReport
from copygen.verify.compose import jumplabel
from copygen.verify.compose import speeds as compose
from copygen.verify.contract.inputs import routines
from copygen.verify.solver.cache import ProofCache

ROUTINES = ("memcpy", "memmove")

@dataclass
class StringSpeeds:
    """What the message and the JSON say beyond a string patch."""

    sites: list[jumplabel.Site]
    probes: list[probe.Probe]
    on_proofs: list[evidence.Proof]
    composed: list[RoutineReport]
    fast_file: str = ""
    probe_line: int = 0


@dataclass
class StringSpeedsResult(Result):
    speeds: StringSpeeds | None = None


def _load(req: Request, fast_files: tuple[str, ...]):
    st = load_file(req.source, available())
    if len(fast_files) > 1:
        raise CopygenError(f"two string bodies for harts with fast misaligned access: "
                           f"{', '.join(fast_files)}",
                           hint="a kernel has one slot per speed: give --fast-body once")
    if req.series or set(req.kinds) != {"string"}:
        raise CopygenError("--fast-body --routine string makes one patch of the string functions",
                           hint="leave out --series and the other --routine; patch the user copy "
                                "in another run")
    fast = load_file(fast_files[0], available())
    stringplan.slots(st, fast)
    return st, fast


def _states(text: str, tree_files: dict[str, str], workdir: Path) -> dict[str, evidence.State]:
    off, on = key_states(text, "memcpy.S", workdir, (stringplan.FLAG,),
                         ("slow memcpy and memmove", "fast memcpy and memmove"))
    b = workdir / "before"
    b.mkdir(parents=True, exist_ok=True)
    for name, body in tree_files.items():
        (b / name).write_text(body)
    before = evidence.State("before", b / "memcpy.S",
                            build_assembly([b / n for n in tree_files], b, "before"), BEFORE)
    return {"off": off, "on": on, "before": before}


def _reports(state: evidence.State) -> dict[str, RoutineReport]:
    kinds = dict(routines(state.elf))
    return {p.symbol: RoutineReport(p.symbol, kinds[p.symbol], dict(p.status), dict(p.detail),
                                    p.seconds)
            for p in state.proofs.get("string", [])}


def _rows(before: evidence.State, after: evidence.State, prof) -> list[evidence.Row]:
    """Mean cycles of memcpy and memmove before and after (the patch's grid)."""
    rows = []
    for sym in ROUTINES:
        cyc = {}
        for name, st in (("before", before), ("after", after)):
            bench = Bench(st.elf, prof, max(evidence.SIZES))
            for n in evidence.SIZES:
                for cls, pairs in evidence.COPY_PAIRS.items():
                    runs = [bench.run(Case(sym, n, s, d)).cycles for s, d in pairs]
                    cyc[name, n, cls] = sum(runs) / len(runs)
        rows += [evidence.Row(prof.name, sym, n, cls, cyc["before", n, cls], cyc["after", n, cls])
                 for n in evidence.SIZES for cls in evidence.COPY_PAIRS]
    return rows


def make_speeds_string_patch(req: Request, fast_files: tuple[str, ...],
                             tell=lambda msg: None) -> StringSpeedsResult:
    st, fast = _load(req, fast_files)
    branch = req.branch or f"copygen/{st.stem}-string-speeds"
    tree, show, probe_line, regs, st, fast = open_tree(req, branch, st, fast, rules.STRING_FILES)
    plan = stringplan.plan(st, fast, Path(req.source).name, Path(fast_files[0]).name, show,
                             lambda rel: git.users(tree, "HEAD", rel))
    tree_files = {f"{n}.S": show(f"{stringfile.LIB}/{n}.S") for n in ROUTINES}
    profiles = [load_profile(p) for p in table_profiles(
        st.string.target.profile, fast.string.target.profile, tuple(req.profiles))]
    clock = Stages()
    cache = ProofCache(req.proof_cache) if req.proof_cache else None
    vr = regs.verify_rules()
    with tempfile.TemporaryDirectory(prefix="copygen-patch-") as tmp:
        states = _states(plan.string.files[stringfile.MEMCPY_S], tree_files, Path(tmp))
        syms = read_elf(states["off"].elf).symbols
        sites = compose.check_sites(states["off"].elf, dispatch.KEY,
                                    {syms[a]: syms[b] for a, b in plan.sites}, "the string function")
        with clock("proofs after"):
            for name in ("off", "on"):
                evidence.prove(states[name], ("string",), cache, req.jobs, None, tell, vr)
        step = Step(("string",), None, plan.string.files, objects=plan.string.objects_after)
        if not req.allow_unproven:
            _refuse_unproven([step, step], [None, states["off"], states["on"]])
        off, on = _reports(states["off"]), _reports(states["on"])
        composed = [compose.combine(off[s], on[s]) for s in off if s in on]
        with clock("proofs before"):
            evidence.prove(states["before"], ("string",), cache, req.jobs, None, tell, vr)
        rows, probes = [], []
        with clock("bench"):
            for prof in profiles:
                pr = probe.run(prof)
                probes.append(pr)
                tell(f"probe on {prof.name}: {pr.verdict()}; benching memcpy and memmove")
                rows += _rows(states["before"], states["on" if pr.fast else "off"], prof)
    sp = StringSpeeds(sites, probes, list(states["on"].proofs["string"]), composed,
                      fast_files[0], probe_line)
    after = list(states["off"].proofs["string"])
    step.change = message.Change(
        ("string",), message.string_layout(("memcpy",)), {"string": states["before"].proofs["string"]},
        {"string": after}, rows, {p.name: p.provenance for p in profiles},
        draft=any(p.verdict != "proved" for p in after + sp.on_proofs),
        memmove_in_memcpy=True, rules=tuple(regs.lines()))
    res = _write(req, tree, branch, step, sp, tell, clock)
    res.rules = regs.as_list()
    return res


def _command(req: Request, sp: StringSpeeds) -> str:
    parts = ["copygen patch", Path(req.source).name, "--fast-body", Path(sp.fast_file).name,
             "--kernel-tree", "LINUX", "--routine string"]
    return " ".join(parts + [f"--profile {p}" for p in req.profiles])


def _message(req, tree, change, sp: StringSpeeds) -> str:
    sources = [(read_source(f), Path(f).name) for f in (req.source, sp.fast_file)]
    return stringplan.commit_message(change, sp, __version__, _command(req, sp), sources,
                                       tree.signoff)


def _write(req, tree, branch, step: Step, sp: StringSpeeds, tell, clock) -> StringSpeedsResult:
    step.message = _message(req, tree, step.change, sp)
    tip = git.commit_files(tree, tree.head, step.files, step.message)
    runs: dict = {}
    if req.kunit:
        runs = _kunit_runs(req, tree, tip, tell, clock)
        step.change = replace(step.change, kunit=message.kunit_lines(runs["base"], runs["patched"]))
        step.message = _message(req, tree, step.change, sp)
        tip = git.commit_files(tree, tree.head, step.files, step.message)
    step.commit = tip
    git.create_branch(tree, branch, tip)
    tell(f"branch {branch} -> {tip[:12]}")
    res = StringSpeedsResult(branch, "string", stringfile.MEMCPY_S, [step], kunit=runs,
                             files=git.changed(tree, tree.head, tip), speeds=sp)
    res.patches = git.format_patch(tree, tip, 1, Path(req.outdir), cover=False)
    res.checkpatch = git.checkpatch(tree, res.patches)
    res.stages = dict(clock)
    return res
