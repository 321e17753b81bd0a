"""`tail ladder` (clear_user): whole words stored from both ends of the
aligned span (gen.phases.clear_ladder).  Validation, the classes it lays out,
exact returns under the qemu oracle at every fault near each store, its
cost on the u74 model against the `tail steps` clear and kernel2021, and
(slow) the proof for every n."""
from __future__ import annotations

import pytest

from copygen.gen.phases.clear_ladder import ladder
from copygen.gen.front.validate import load_text
from copygen.measure.bench import Bench, Case
from copygen.mutate import oracle as qemu
from tests.gen.test_ends_overlap import KERNEL2021, TARGET, _build, _cycles, _error

LADDER = TARGET + """
clear_user cl for u74 {
    small below 8
    align dst
    words unroll 16
    then words unroll 4
    tail ladder
    ends overlap
    inline none
    fault exact
}
"""
@pytest.mark.parametrize("edit, line, words", [
    (("then words unroll 4", "then words unroll 1"), 8, ["at least 2 words"]),
    (("ends overlap", "ends pieces"), 8, ["needs `ends overlap`"]),
    (("inline none", "inline words"), 8, ["out of line", "inline none"]),
    (("fault exact", "fault block"), 8, ["exact count", "fault exact"]),
])
def test_bad_ladders_are_located_errors(edit, line, words):
    err = _error(LADDER.replace(*edit))
    assert err.loc.file == "p.copy" and err.loc.line == line, err
    for w in words:
        assert w in err.message + (err.hint or ""), err


def test_a_ladder_is_a_clear_only():
    err = _error(TARGET + "copy_user cu for u74 {\n    small below 16; align dst\n"
                 "    words unroll 8; then words unroll 2; shift off\n    tail ladder\n"
                 "    fault exact\n}\n")
    assert "applies to clear_user" in err.message and err.loc.line == 5, err


def test_the_threshold_of_a_ladder_is_one_word():
    """The head's pieces end by dst + 7 and the word after them is stored
    only when it is whole: n >= 8 suffices, where the overlapping head of
    `tail steps` needs 15."""
    st = load_text(LADDER, "p.copy")
    assert st.clear_user.phases.threshold == 8 and not st.warnings
    st = load_text(LADDER.replace("small below 8", "small below 4"), "p.copy")
    assert st.clear_user.phases.threshold == 8
    assert any("raised from 4 to 8" in w.message for w in st.warnings)


@pytest.mark.parametrize("unroll, classes", [
    (2, [2]), (3, [2, 3]), (4, [2, 4]), (6, [2, 4, 6]), (8, [2, 4, 8])])
def test_the_short_classes_double_up_to_the_second_block(unroll, classes):
    assert ladder(unroll) == classes


@pytest.fixture(scope="module")
def ladder_build(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("ladder"), "ladder", LADDER)


def _clear(build) -> str:
    text = next(f for f in build.files if f.name == "uaccess.S").read_text()
    body = text[text.index("SYM_FUNC_START(__clear_user)"):]
    return body[:body.index("SYM_FUNC_END")]


def test_short_classes_store_from_both_ends(ladder_build):
    """Class 2 in line: a word at dst and one ending at the span; class 4
    out of line: two of each.  The end-relative stores exit through a2."""
    code = _clear(ladder_build)
    inline = code[code.index(".Lclear_head_done:"):code.index(".Lclear_done:")]
    stores = [ln.split()[3] for ln in inline.splitlines() if "fixup REG_S" in ln]
    assert stores == ["0(a0),", "-SZREG(a2),"], inline
    four = code[code.index(".Lclear_class_4:"):code.index(".Lclear_class_4_done:")]
    assert [ln.split()[3] for ln in four.splitlines() if "fixup REG_S" in ln] == \
        ["0(a0),", "SZREG(a0),", "-2*SZREG(a2),", "-SZREG(a2),"]
    assert "addi\ta0, a2, -16" in code and ".Lclear_fault_a2_minus_16:" in code


def _faults(n: int):
    """A fault at every byte of the first and last words and around the
    middle, at every dst offset."""
    for off in range(8):
        for into in sorted({1, 2, 3, 4, 5, 6, 7, 8, 9, n // 2, n - 9, n - 7, n - 5, n - 3,
                            n - 1}):
            if 0 < into < n and off < into:       # the page ends inside the buffer
                yield qemu.Case("clear", qemu.PAGE - into + off, 0, n, "dst", qemu.PAGE,
                                seed=n + off)


@pytest.mark.parametrize("words", [(16, 4), (4, 3), (8, 2)], ids=["16-4", "4-3", "8-2"])
def test_ladders_clear_exactly_under_qemu(ladder_build, words, tmp_path):
    """Every size up to two first blocks past the classes (300 bytes for
    the 16-word loop) at every offset, and faults around every store of
    each class: the exact count, nothing past it touched, SUM off."""
    build = ladder_build if words == (16, 4) else _build(
        tmp_path, "l", LADDER.replace("words unroll 16", f"words unroll {words[0]}")
        .replace("then words unroll 4", f"then words unroll {words[1]}"))
    exe = qemu.build_harness(build.objects, tmp_path / "harness")
    top = 300 if words[0] == 16 else 160
    cases = [qemu.Case("clear", d, 0, n, seed=n + d) for n in range(0, top) for d in range(8)]
    for n in (8, 9, 15, 16, 17, 23, 24, 31, 33, 40, 41, 64, 72, 127, 128, 129, 200, 300):
        cases += list(_faults(n))
    cases += qemu.random_cases("clear", 300, max_n=2000, seed=37)
    for case, r in zip(cases, qemu.run_cases(exe, cases)):
        assert not r.sum_at_exit, case
        assert r.prefix_ok and r.rest_untouched, case
        assert r.ret == case.exact_return(), (case, r.ret)


def test_short_aligned_clears_take_no_branch(ladder_build, tmp_path):
    """u74 model: 8 to 23 bytes on an aligned dst store two words on the
    straight path, so whole words cost alike (and so do the calls that
    branch to the last pieces), and less than `tail steps` makes them pay
    (the byte loop below 15 bytes, a skipped step after)."""
    steps = _build(tmp_path, "steps", LADDER.replace("tail ladder", "tail steps")
                   .replace("small below 8", "small below 15"))
    assert _cycles(ladder_build, 8, 0) == _cycles(ladder_build, 16, 0)
    assert _cycles(ladder_build, 12, 0) == _cycles(ladder_build, 23, 0)
    for n in (8, 16, 23):
        assert _cycles(ladder_build, n, 0) + 5 <= _cycles(steps, n, 0), n


def test_no_clear_cell_is_slower_than_the_2021_one(ladder_build, tmp_path):
    """Issue 36's goal 1 on the tuner's grid (u74 model)."""
    from copygen.tune.evaluate import GRID_SIZES
    k2021 = _build(tmp_path, "k2021", KERNEL2021)
    for n in GRID_SIZES:
        for dst in range(8):
            assert _cycles(ladder_build, n, dst) <= _cycles(k2021, n, dst), (n, dst)


@pytest.mark.slow
def test_a_ladder_is_proved_for_every_n(tmp_path):
    """Classes 2 and 3 around a 4-word loop: the proof covers the classes,
    both loops' last blocks from the end and the head's whole word."""
    from copygen.verify.checks.prove import prove_routine
    from copygen.verify.contract.verdict import verdict
    small = LADDER.replace("words unroll 16", "words unroll 4").replace(
        "then words unroll 4", "then words unroll 3")
    rep = prove_routine(str(_build(tmp_path, "small", small).elf), "__clear_user", "clear")
    assert verdict(rep) == "proved", rep.status


def test_u74tuned_clear_is_nowhere_slower_than_the_mainline_one(built_examples, tmp_path):
    """Issue 36's last figure for clear_user: examples/u74tuned.copy's
    clear at or below the mainline layout's (tests/kernel_style, which
    stores a word from the first whole word, as Linux 6.12 does) in every
    cell of the tuner's grid, u74 model.  bench/tune/tune_goals.py measures the
    same against a real tree's uaccess.S."""
    from pathlib import Path

    from copygen.gen.build import build_assembly
    from copygen.tune.evaluate import GRID_SIZES
    fixture = Path(__file__).parent.parent / "kernel_style" / "mainline_layout.S"
    mainline = build_assembly([fixture], tmp_path / "mainline", "mainline")
    for n in GRID_SIZES:
        ours = Bench(built_examples["u74tuned"].elf, "u74_spec", n)
        theirs = Bench(mainline, "u74_spec", n)
        for dst in range(8):
            case = Case("__clear_user", n, 0, dst)
            assert ours.run(case).cycles <= theirs.run(case).cycles, (n, dst)
