"""`fault restart`: a copy's faulting word access resumes the byte loop at
the first byte of its block instead of at the first byte it did not store.
The count stays exact (the byte loop stores the block's stored bytes again
and faults exactly where the copy must stop), the fast paths are the same
instructions, and a block needs one or two fault exits instead of a ladder
rung per store.  What the language accepts, the code, the qemu oracle,
cycles, a wrong exit refuted and (slow) the proof for every n, which needs
the `pcursor` invariant (verify.invariants.candidates)."""
from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.emu.timing.profile import load_profile
from copygen.errors import CopygenError
from copygen.gen.build import build_file
from copygen.gen.front.validate import load_text
from copygen.gen.front.variants import sweep_space
from copygen.measure.bench import Bench, Case
from copygen.mutate import oracle as qemu
from copygen.measure.size import routine_sizes

COPY = """target u74 { xlen 64; misaligned slow }
copy_user cu for u74 {
    small below 16
    align dst
    words unroll 4 schedule paired
    then words unroll 2 schedule paired
    shift unroll 2 schedule paired
    tail words
    ends pieces
    inline shift
    fault FAULT
}
"""
CLEAR = """clear_user cl for u74 { small below 8; align dst; words unroll 4; tail bytes;
                        fault FAULT }
"""


def _build(tmp_path, name: str, text: str):
    d = tmp_path / name
    d.mkdir()
    (d / f"{name}.copy").write_text(text)
    return build_file(d / f"{name}.copy", d)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The same strategy under `fault exact` and `fault restart`."""
    base = tmp_path_factory.mktemp("restart")
    return {f: _build(base, f, COPY.replace("FAULT", f)) for f in ("exact", "restart")}


def _uaccess(build) -> str:
    return next(f for f in build.files if f.name == "uaccess.S").read_text()


def _body(build) -> list[str]:
    """The routine's instructions up to its fault exits, each access's exit
    label left out."""
    text = _uaccess(build)
    text = text[text.index("SYM_FUNC_START(__asm_copy_to_user)"):text.index("Fault exits")]
    out = []
    for ln in text.splitlines():
        ln = re.sub(r"/\*.*?\*/", "", ln).strip()
        if ln and not ln.startswith(("*", "/*")):
            out.append(re.sub(r", \.L\w+$", "", ln) if ln.startswith("fixup") else ln)
    return out


def test_restart_is_a_fault_policy_of_copies_and_a_sweep_axis(tmp_path):
    assert load_text(COPY.replace("FAULT", "restart"), "r.copy").copy_user.phases.fault == "restart"
    path = tmp_path / "sw.copy"
    path.write_text(COPY.replace("FAULT", "exact") + "sweep s for cu {\n    fault [exact, restart]\n}\n")
    space = sweep_space(str(path))
    assert len(space.variants) == 2 and not space.pruned
    with pytest.raises(CopygenError) as info:
        load_text(COPY.replace("FAULT", "exact") + CLEAR.replace("FAULT", "restart"), "c.copy")
    err = info.value
    assert "`fault restart` applies to copies" in err.message and err.hint == "use `fault exact`"
    assert (err.loc.file, err.loc.line) == ("c.copy", 14)


def test_restart_changes_the_exits_only_and_makes_the_routine_smaller(pair):
    assert _body(pair["exact"]) == _body(pair["restart"])
    sizes = {f: routine_sizes(b.elf)["__asm_copy_to_user"].text_bytes for f, b in pair.items()}
    assert sizes["restart"] < sizes["exact"], sizes
    exits = {f: len(re.findall(r"^\.Lcopy_retry\w*:", _uaccess(b), re.M)) for f, b in pair.items()}
    assert exits["restart"] < exits["exact"], exits
    text = _uaccess(pair["restart"])
    assert "restarts its block in the byte loop" in text
    assert "word fault: dst = block start; src = its source; goto bytes;" in text
    # every store of the 4-word block shares the exit of the block's start
    # (a0 moved up by the block before them): one label for four stores
    block = text[text.index(".Lcopy_words:"):]
    block = block[:block.index("bleu")]
    stores = re.findall(r"fixup REG_S, \w+, [^,]+, (\.L\w+)", block)
    assert len(stores) == 4 and len(set(stores)) == 1, stores


def test_restart_copies_exactly_and_returns_the_exact_count_under_qemu(pair, tmp_path):
    exe = qemu.build_harness(pair["restart"].objects, tmp_path / "harness")
    cases = []
    for fn, side in (("to", "dst"), ("from", "src")):
        for n in (17, 40, 64, 100, 300):
            for into in range(1, min(n, 72), 3):
                for mis in (0, 3):
                    near = qemu.PAGE - into
                    d, s = (near, (near + mis) % 8) if side == "dst" else ((near + mis) % 8, near)
                    cases.append(qemu.Case(fn, d, s, n, side, qemu.PAGE, seed=n + into))
    cases += qemu.random_cases("to", 150, max_n=600, seed=5)
    cases += qemu.random_cases("from", 150, max_n=600, seed=6)
    for case, r in zip(cases, qemu.run_cases(exe, cases)):
        assert not r.sum_at_exit, case
        assert r.prefix_ok and r.rest_untouched, case
        assert r.ret == case.exact_return(), (case, r.ret)


def test_restart_costs_the_same_cycles_as_exact(pair):
    prof = load_profile("u74")
    benches = {f: Bench(b.elf, prof, 4096) for f, b in pair.items()}
    for n, src, dst in ((8, 0, 0), (40, 0, 0), (72, 3, 3), (300, 1, 0), (1000, 5, 2)):
        cyc = {f: b.run(Case("__asm_copy_to_user", n, src, dst)).cycles
               for f, b in benches.items()}
        assert cyc["exact"] == cyc["restart"], (n, src, dst, cyc)


def _verify(tmp_path, *args):
    r = CliRunner().invoke(main, ["verify", *map(str, args), "--workdir", str(tmp_path / "w"),
                                  "--proof-cache", str(tmp_path / "proofs")])
    assert not isinstance(r.exception, Exception) or isinstance(r.exception, SystemExit), r.exception
    return r


@pytest.mark.slow
def test_a_restart_past_the_faulting_store_is_violated(pair, tmp_path):
    """The 4-word block's first store sent to the exit that resumes two
    words into the block: a fault there counts 16 bytes as copied that
    were never stored."""
    lines = _uaccess(pair["restart"]).splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith(".Lcopy_words:"))
    site = next(i for i in range(start, len(lines)) if "fixup REG_S" in lines[i])
    old = lines[site].rstrip().rsplit(", ", 1)[1]
    assert old == ".Lcopy_retry_a0_a1_minus_32", lines[site]
    lines[site] = lines[site].replace(old, ".Lcopy_retry_a0_a1_minus_16")
    src = tmp_path / "edited.S"
    src.write_text("".join(lines))
    r = _verify(tmp_path, src, "--routine", "copy_to_user", "--json")
    assert r.exit_code == 3, r.output
    (rep,) = json.loads(r.stdout)["files"][0]["reports"]
    assert rep["status"]["C3"] == "violated", rep["status"]
    ex = rep["counterexamples"]["C3"]
    assert ex["n"] - ex["fault_offset"] - ex["returned"] == 16, ex


# the smallest copy that restarts a block with a store done: two words a
# block (the second store's fault restarts at the first), one shifted word
SMALL = """target u74 { xlen 64; misaligned slow }
copy_user cu for u74 {
    small below auto; align dst; words unroll 2 schedule paired
    shift unroll 1; tail words; fault restart
}
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("small"), "small", SMALL)


def test_faulting_runs_make_the_byte_loop_guess_a_partial_cursor(small):
    """At the byte loop's head the faulting runs that restarted a block
    show bytes stored past a0: no exact cursor fits, a pcursor on a0 does;
    the word loop keeps its exact cursor."""
    from copygen.verify.invariants.infer import guess
    from copygen.verify.symbolic.program import Program
    from copygen.verify.invariants.samples import collect
    prog = Program.load(str(small.elf))
    routine = prog.routine(prog.image.address_of("__asm_copy_to_user"))
    snaps = collect(prog.image, "__asm_copy_to_user", "to", routine.cut_points)
    kinds = {pc: {c.kind for c in guess(s, "to") if c.kind.endswith("cursor")}
             for pc, s in snaps.items() if s}
    partial = [pc for pc, ks in kinds.items() if "pcursor" in ks]
    assert len(partial) == 1, kinds
    (pc,) = partial
    assert "cursor" not in kinds[pc]
    assert {c.args[0] for c in guess(snaps[pc], "to") if c.kind == "pcursor"} == {10}   # a0
    assert any("cursor" in ks for ks in kinds.values())


@pytest.mark.slow
def test_restart_is_proved_for_every_n(small):
    """(Without the pcursor guess C1, C3, C4 and C6 stay unknown:
    docs/verifier.md.)"""
    from copygen.verify.checks.prove import prove_routine
    from copygen.verify.contract.verdict import verdict
    rep = prove_routine(str(small.elf), "__asm_copy_to_user", "to")
    assert verdict(rep) == "proved", rep.status
