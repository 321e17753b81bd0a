"""`copygen patch SLOW.copy --fast-body FAST.copy` (issue 63, item 2; docs/speeds.md):
two scalar user copies in one uaccess.S, picked at boot by a static
branch on the probe's fast_unaligned_access_speed_key.

Fast tests, on fixture trees (test_patch.make_tree, with a stand-in of
the probe's file): the new text on the 6.8 and mainline layouts, its
three builds (without the probe; key off; key on, which is byte for byte
the build for fast misaligned access), the static branch read from the
machine code, the composition lemma, the modelled probe, the message,
and every refusal (exit 2, the tree untouched).  Slow: the whole patch
on both layouts, copy_to_user's entry points proved in both key states,
applied with `git am`.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from copygen.emu.elf import read_elf
from copygen.errors import CopygenError
from copygen.gen import toolchain
from copygen.gen.front.validate import load_text
from copygen.gen.resources import shim_dir
from copygen.patch import kernelfile
from copygen.patch.speeds import dispatch, probe
from copygen.patch.speeds import run as speeds_run
from copygen.verify.checks.prove import RoutineReport
from copygen.verify.compose import jumplabel
from copygen.verify.compose import speeds as compose
from tests.conftest import ROOT, SHARED_PROOFS
from tests.patch.test_patch import (SMALL, _own_git_config, git, layout_6_8, make_tree,  # noqa: F401
                                    patch, snapshot)

HERE = ROOT / "tests" / "kernel_style"
UACCESS = kernelfile.UACCESS
SMALL_FAST = """# A fast-misaligned copy quick to prove, for the --fast-body tests.
target c920 {
    xlen 64
    misaligned fast
    profile c920
}

copy_user small_fast for c920 {
    small below auto
    align dst
    words unroll 2 schedule loads_first
    shift off
    tail overlap
    fault exact
}
"""
PROBE_C = "/* the boot probe of misaligned access speed, a stand-in */\n" \
          "DEFINE_STATIC_KEY_FALSE(fast_unaligned_access_speed_key);\n"
LAYOUTS = {"6.8": layout_6_8, "mainline": lambda: (HERE / "mainline_layout.S").read_text()}


@pytest.fixture(scope="module")
def cache():
    return SHARED_PROOFS


def strategy(text: str, name: str):
    return load_text(text, name)


def speeds_tree(path: Path, layout: str = "mainline", probe_c: str | None = PROBE_C) -> Path:
    """A fixture tree with the probe's file (or without, probe_c None)."""
    tree = make_tree(path, text=LAYOUTS[layout]())
    if probe_c is not None:
        (tree / dispatch.PROBE).parent.mkdir(parents=True)
        (tree / dispatch.PROBE).write_text(probe_c)
        git(tree, "add", "-A")
        toolchain.run_git(["commit", "-q", "-m", "the probe"], tree,
                          env={"GIT_AUTHOR_NAME": "k", "GIT_AUTHOR_EMAIL": "k@k",
                               "GIT_COMMITTER_NAME": "k", "GIT_COMMITTER_EMAIL": "k@k"})
    return tree


@pytest.fixture
def files(tmp_path):
    (tmp_path / "small.copy").write_text(SMALL)
    (tmp_path / "small_fast.copy").write_text(SMALL_FAST)
    return tmp_path / "small.copy", tmp_path / "small_fast.copy"


def _plan(layout: str, kinds=("copy_user",)) -> dispatch.Plan:
    return dispatch.plan(strategy(SMALL, "small.copy"), strategy(SMALL_FAST, "small_fast.copy"),
                       LAYOUTS[layout](), UACCESS, kinds)


# --- the new text -------------------------------------------------------------

@pytest.mark.parametrize("layout, dispatcher", [("6.8", "fallback_scalar_usercopy"),
                                                ("mainline", "fallback_scalar_usercopy_sum_enabled")])
def test_the_branch_heads_the_scalar_copy_and_the_rest_is_kept(layout, dispatcher):
    old = LAYOUTS[layout]()
    p = _plan(layout, ("copy_user", "clear_user"))
    assert (p.layout, p.dispatcher, p.fast) == (layout, dispatcher, dispatcher + "_fast")
    lines = p.text.splitlines()
    fns = kernelfile.functions(p.text.splitlines(keepends=True), UACCESS)
    code = [ln for ln in lines[fns[dispatcher].body_start:fns[dispatcher].body_end]
            if ln.strip() and not ln.strip().startswith(("/*", "*"))]
    assert code[0] == f"\t{dispatch.MACRO} {p.fast}"
    assert f"SYM_FUNC_START_LOCAL({p.fast})" in lines and p.text.count(f".macro {dispatch.MACRO}") == 1
    # every line outside the replaced bodies is there, in order
    olines = old.splitlines(keepends=True)
    _, places = kernelfile.places(olines, UACCESS, ("copy_user", "clear_user"))
    replaced = {i for pl in places for i in range(pl.function.body_start, pl.function.body_end)}
    kept = iter(lines)
    assert all(any(ln.rstrip("\n") == n for n in kept) for i, ln in enumerate(olines) if i not in replaced)
    # the fast copy is held like the slow one: mainline's keeps a7 and SUM alone
    fast_body = p.text.split(f"SYM_FUNC_START_LOCAL({p.fast})")[1].split("SYM_FUNC_END")[0]
    if layout == "mainline":
        assert not re.search(r"\ba7\b", fast_body) and "csrs" not in fast_body
    else:
        assert "csrs\tCSR_STATUS" in fast_body


@pytest.mark.parametrize("layout", ["6.8", "mainline"])
def test_three_builds_and_the_site_read_from_the_machine_code(layout, tmp_path):
    p = _plan(layout)
    states = speeds_run._states(p.text, tmp_path)
    plain, off, on = (read_elf(states[k].elf) for k in ("plain", "off", "on"))
    assert p.fast not in plain.symbols and not jumplabel.sites(states["plain"].elf)
    site = compose.check_site(states["off"].elf, dispatch.KEY, off.symbols[p.dispatcher], off.symbols[p.fast])
    assert site.holds() == "nop" and not site.branch
    (on_site,) = jumplabel.sites(states["on"].elf)
    assert on_site.holds() == "jump" and on_site.target == on.symbols[p.fast]
    # built for fast misaligned access, the same instructions as the key-on state
    src = tmp_path / "off" / "efficient.S"
    src.write_text("#define CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS 1\n#include \"uaccess.S\"\n")
    obj, elf = tmp_path / "eff.o", tmp_path / "eff.elf"
    toolchain.assemble(src, shim_dir() / "include", obj)
    toolchain.link([obj], shim_dir() / "copygen.ld", elf)
    assert _text(elf) == _text(states["on"].elf) != _text(states["off"].elf)


def _text(elf: Path) -> bytes:
    with open(elf, "rb") as f:
        return ELFFile(f).get_section_by_name(".text").data()


def test_a_site_elsewhere_is_not_the_dispatch(tmp_path):
    """The branch after the copy's first instruction: check_site says where it is."""
    p = _plan("mainline")
    moved = p.text.replace(f"\t{dispatch.MACRO} {p.fast}\n", "\tnop\n" + f"\t{dispatch.MACRO} {p.fast}\n", 1)
    states = speeds_run._states(moved, tmp_path)
    syms = read_elf(states["off"].elf).symbols
    with pytest.raises(CopygenError, match="not at the scalar copy's first instruction"):
        compose.check_site(states["off"].elf, dispatch.KEY, syms[p.dispatcher], syms[p.fast])


# --- the composition ------------------------------------------------------------

def test_the_lemma_proves_the_choice_and_refutes_a_second_read_of_the_key():
    assert set(compose.lemma().values()) == {"proved"}
    twice = compose.lemma(read_once=False)
    assert {c for c, v in twice.items() if v.startswith("violated")} == {"C3", "C4", "C6"}


def _report(sym: str, **status) -> RoutineReport:
    base = {c: "proved" for c in ("C1", "C2", "C3", "C4", "C5", "C6", "S1", "S2", "A1", "B1", "B2",
                                  "B2s", "X1", "T1")}
    return RoutineReport(sym, "to", base | status, {c: f"{c} detail" for c in status})


def test_combine_is_proved_only_when_both_states_are():
    both = compose.combine(_report("__asm_copy_to_user"), _report("__asm_copy_to_user"))
    assert set(both.status.values()) == {"proved"} and both.symbol == "__asm_copy_to_user+speeds"
    bad = compose.combine(_report("f"), _report("f", C4="violated"))
    assert bad.status["C4"] == "violated" and "key on" in bad.detail["C4"]
    weak = compose.combine(_report("f", T1="unknown"), _report("f"))
    assert weak.status["T1"] == "unknown" and "key off" in weak.detail["T1"]


def test_with_vector_composes_the_dispatched_copy():
    vec = RoutineReport("__asm_vector_usercopy", "vector",
                        {c: "proved" for c in ("C1", "C2", "C3", "C4", "C6", "V5", "S1", "S2", "A1",
                                               "B1", "B2", "B2s", "X1", "T1", "V0")})
    rep = compose.with_vector(vec, _report("__asm_copy_to_user"), _report("__asm_copy_to_user"))
    assert rep.symbol == "__asm_copy_to_user+speeds+vector"
    assert rep.status["C1"] == "proved" and rep.status["C3"].startswith("holds for n <=")


# --- the probe, modelled -------------------------------------------------------

@pytest.mark.parametrize("profile, fast", [("u74", False), ("u74_spec", False), ("x60", True),
                                           ("c920", True)])
def test_the_probe_finds_each_core_as_linux_does(profile, fast):
    got = probe.run(profile)
    assert got.fast is fast and (got.words < got.bytes) is fast


# --- refused: exit 2, nothing written ------------------------------------------

SLOW_AS_FAST = SMALL.replace("misaligned slow", "misaligned fast").replace("shift unroll 1 schedule interleave",
                                                                         "shift off")


@pytest.mark.parametrize("case, words", [
    ("fast in the slow slot", r"cannot go into the slow \(FILE\) slot"),
    ("slow in the fast slot", r"cannot go into the fast \(--fast-body\) slot"),
    ("two fast bodies", "two copies for harts with fast misaligned access"),
    ("no probe", "no boot probe of misaligned access speed"),
    ("a true key", "true by default"),
    ("the 2021 layout", "2021 layout"),
    ("a series", "one patch of the user copy"),
])
def test_refused_with_the_tree_untouched(case, words, files, tmp_path):
    slow, fast = files
    probe_c = {"no probe": None, "a true key": PROBE_C.replace("FALSE", "TRUE")}.get(case, PROBE_C)
    tree = speeds_tree(tmp_path / "linux", probe_c=probe_c)
    if case == "the 2021 layout":
        (tree / UACCESS).write_text((HERE / "layout_2021.S").read_text())
        git(tree, "commit", "-qam", "2021")
    args = {"fast in the slow slot": [tmp_path / "x.copy", "--fast-body", fast],
            "slow in the fast slot": [slow, "--fast-body", slow],
            "two fast bodies": [slow, "--fast-body", fast, "--fast-body", fast],
            "a series": [slow, "--fast-body", fast, "--series"]}.get(case, [slow, "--fast-body", fast])
    (tmp_path / "x.copy").write_text(SLOW_AS_FAST)
    before = snapshot(tree)
    r, out = patch(args[0], tree, tmp_path / "out", tmp_path / "cache", *map(str, args[1:]))
    assert r.exit_code == 2, r.output
    assert re.search(words, out["error"]["message"]), out["error"]
    assert snapshot(tree) == before and not (tmp_path / "out").exists()


# --- the whole patch (proofs: slow) ------------------------------------------

# copy_to_user's entry points only, as test_patch's mainline patch proves
# them (so mainline's "before" proofs are that module's, run first on the
# same worker, tests/conftest.py): copy_from_user's entry points run the
# same two bodies, and proving them too would double the proofs
@pytest.mark.slow
@pytest.mark.parametrize("layout", ["6.8", "mainline"])
def test_the_two_body_patch_proves_applies_and_says_which_body_runs(layout, files, tmp_path, cache):
    slow, fast = files
    tree = speeds_tree(tmp_path / "linux", layout)
    r, out = patch(slow, tree, tmp_path / "out", cache, "--fast-body", str(fast),
                   "--profile", "u74", "--profile", "x60", "--routine", "copy_to_user")
    assert r.exit_code == 0, r.output
    sp = out["speeds"]
    # the tables' profiles: those given, then the fast slot's cores
    assert sp["site"]["holds"] == "nop"
    assert [(p["profile"], p["verdict"]) for p in sp["probes"]] == \
        [("u74", "slow"), ("x60", "fast"), ("c920", "fast")]
    entries = {"6.8": ["__asm_copy_to_user"],
               "mainline": ["__asm_copy_to_user", "__asm_copy_to_user_sum_enabled"]}[layout]
    assert sorted(p["symbol"] for p in sp["key_on"]) == entries
    assert all(p["verdict"] == "proved" for p in sp["key_on"])
    assert all(st == "proved" for c in sp["composed"] for cl, st in c["status"].items() if cl != "B2s")
    assert max(r["after"] - r["before"] for r in sp["dispatch_cost"] if r["align"] == "aligned") <= 2
    msg = out["commits"][0]["message"]
    assert msg.startswith("riscv: lib: uaccess: pick the user copy by misaligned access speed\n")
    assert "On x60, misaligned access fast" in msg and "On u74, misaligned access slow" in msg
    assert all(len(line) <= 75 for line in msg.splitlines())
    fresh = speeds_tree(tmp_path / "fresh", layout)
    git(fresh, "am", "-q", *out["patches"])
    assert (fresh / UACCESS).read_text() == git(tree, "show", f"{out['branch']}:{UACCESS}")



# --- the message ----------------------------------------------------------------

def test_the_message_says_which_body_runs_where_and_fits_checkpatch():
    from copygen.patch import message
    from copygen.patch.speeds import commit_text
    from copygen.patch.evidence import Proof, Row
    proved = {c: "proved" for c in ("C1", "C2", "C3", "C4", "C5", "C6", "S1", "A1")}
    before = [Proof("__asm_copy_to_user", "copy_user", "violated", proved | {"C5": "violated"}, {}, 1.0)]
    after = [Proof("__asm_copy_to_user", "copy_user", "proved", proved, {}, 1.0)]
    rows = [Row(p, "copy_to_user", n, a, 100.0, 90.0) for p in ("u74", "x60") for n in (8, 64)
            for a in ("aligned", "misaligned")]
    ch = message.Change(("copy_user",), "6.8", {"copy_user": before}, {"copy_user": after}, rows,
                        {"u74": "fitted", "x60": "unknown"})
    site = jumplabel.Site(0x80200000, 0x80200400, 0x80201000, dispatch.KEY, False, jumplabel.NOP)
    sp = speeds_run.Speeds("fallback_scalar_usercopy", "fallback_scalar_usercopy_fast", site,
                          [probe.Probe("u74", 700000, 24000, False), probe.Probe("x60", 3288, 10092, True)],
                          [compose.combine(_report("__asm_copy_to_user"), _report("__asm_copy_to_user"))],
                          [Row("u74", "copy_to_user", 8, "aligned", 60.0, 61.0)], on_proofs=after)
    text = commit_text.commit_message(ch, after, sp, "0.1.0", "copygen patch s.copy --fast-body f.copy",
                                    [(SMALL, "small.copy"), (SMALL_FAST, "small_fast.copy")], "A <a@b>")
    lines = text.splitlines()
    assert lines[0] == commit_text.SUBJECT and len(lines[0]) <= 74 and lines[-1] == "Signed-off-by: A <a@b>"
    assert all(len(ln) <= 75 for ln in lines), [ln for ln in lines if len(ln) > 75]
    assert "    u74           700000   24000  slow   the slow copy" in lines
    assert "    x60             3288   10092  fast   the fast copy" in lines
    assert "On x60, misaligned access fast: fallback_scalar_usercopy_fast." in text
    assert "C5 violated (" in text and "u74 aligned +1 to +1" in " ".join(lines)
    assert "small_fast.copy:" in lines and "copy_user small_fast for c920" in text
    row = next(ln for ln in lines if ln.lstrip().startswith("__asm_copy_to_user "))
    assert row.split()[1:] == ["violated", "proved", "proved", "proved"]
