"""`inline` (which first-class loops lie on the straight path) and `then
shift off`: what the language accepts and refuses, the sweep axes, the
layout each value gives, exact copies and fault returns under the qemu
oracle, the proof for every n, and the trade on the u74 model (long calls
gain, short ones pay)."""
from __future__ import annotations

import pytest

from copygen.emu.timing.profile import load_profile
from copygen.gen.build import build_file
from copygen.errors import CopygenError
from copygen.gen.front.validate import load_text
from copygen.gen.front.variants import sweep_space
from copygen.measure.bench import Bench, Case
from copygen.mutate import oracle as qemu

BASE = """target u74 { xlen 64; misaligned slow }
copy_user cu for u74 {
    small below 16
    align dst
    words unroll 32 schedule loads_first
    then words unroll 4
    shift unroll 32 schedule paired
    then shift off
    tail steps
    ends pieces
    inline INLINE
    fault exact
}
clear_user cl for u74 {
    small below 8
    align dst
    words unroll 16
    then words unroll 4
    tail words
    ends pieces
    inline CLEAR
    fault exact
}
"""


def _text(inline: str = "both", clear: str = "words") -> str:
    return BASE.replace("INLINE", inline).replace("CLEAR", clear)


def _build(tmp_path, name: str, text: str):
    src = tmp_path / f"{name}.copy"
    src.write_text(text)
    return build_file(src, tmp_path)


def _function(build, symbol: str) -> str:
    text = next(f for f in build.files if f.name == "uaccess.S").read_text()
    body = text[text.index(f"SYM_FUNC_START({symbol})"):]
    return body[:body.index("SYM_FUNC_END")]


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("both"), "both", _text())


def test_inline_and_then_shift_off_are_read_into_the_phases():
    st = load_text(_text("shift", "none"), "i.copy")
    assert st.copy_user.phases.inline == "shift"
    assert st.copy_user.phases.then_shift_unroll == 0
    assert st.clear_user.phases.inline == "none"
    # `then shift off` is the routine without the line
    plain = load_text(_text("shift", "none").replace("    then shift off\n", ""), "i.copy")
    assert plain.copy_user.phases == st.copy_user.phases


@pytest.mark.parametrize("edit,says", [
    (("inline CLEAR", "inline shift"), "has no shift copy"),
    (("inline CLEAR", "inline both"), "has no shift copy"),
    (("    then words unroll 4\n", ""), "needs size classes"),
    (("inline INLINE", "inline sideways"), "unexpected 'sideways'"),
])
def test_bad_inline_lines_are_refused_where_they_stand(edit, says):
    text = BASE.replace(*edit).replace("INLINE", "both").replace("CLEAR", "words")
    if "needs size classes" in says:
        # without `then words` no class line may stay; `inline` is the first checked
        for line in ("    then shift off\n", "    ends pieces\n"):
            text = text.replace(line, "", 1)
        text = text.replace("    tail steps\n", "    tail words\n")
    culprit = edit[1].strip() if edit[1] else "inline both"
    with pytest.raises(CopygenError) as info:
        load_text(text, "bad.copy")
    assert says in info.value.message
    lines = text.splitlines()
    block = "clear_user" if "CLEAR" in edit[0] else "copy_user"
    start = next(i for i, ln in enumerate(lines) if ln.startswith(block))
    want = 1 + next(i for i in range(start, len(lines)) if lines[i].strip() == culprit)
    assert (info.value.loc.file, info.value.loc.line) == ("bad.copy", want)


def test_inline_shift_needs_a_shift_copy_that_is_emitted():
    text = _text("both", "none").replace("misaligned slow", "misaligned fast")
    text = text.replace("    ends pieces\n", "").replace("tail steps", "tail words")
    with pytest.raises(CopygenError) as info:
        load_text(text, "fast.copy")
    assert "fast misaligned access" in info.value.message and info.value.loc.line == 10
    assert load_text(text.replace("inline both", "inline words"), "fast.copy")


def test_inline_does_not_apply_to_string_routines():
    text = ("target t { xlen 64; misaligned slow }\n"
            "string s for t {\n memcpy { small below 16; align dst; words unroll 4; shift unroll 4;"
            " tail words; inline words }\n"
            " memset { small below 16; align dst; words unroll 4; tail words }\n}\n")
    with pytest.raises(CopygenError) as info:
        load_text(text, "s.copy")
    assert "applies to copy_user, clear_user and memcpy with `form asm`" in info.value.message
    assert info.value.loc.line == 3


def test_sweep_axes_for_inline_and_no_second_shift_class(tmp_path):
    text = _text("none", "none").replace("    then shift off\n", "    then shift unroll 4\n")
    text += ("sweep s for cu {\n    then shift unroll [off, 4, 8] schedule [paired]\n"
             "    inline [none, shift, both]\n}\n")
    path = tmp_path / "sw.copy"
    path.write_text(text)
    space = sweep_space(str(path))
    assert len(space.variants) == 9 and not space.pruned
    labels = {v.label for v in space.variants}
    assert "then shift off, inline both" in labels
    assert "then shift unroll 8 schedule paired, inline none" in labels
    # a point's file builds with the phases its label names
    off_both = next(v for v in space.variants if v.label == "then shift off, inline both")
    ph = load_text(off_both.text, "p.copy").copy_user.phases
    assert (ph.inline, ph.then_shift_unroll, ph.shift_unroll) == ("both", 0, 32)
    assert "    then shift off\n" in off_both.text and "    inline both\n" in off_both.text


def test_inline_loops_lie_on_the_straight_path(both, tmp_path):
    copy = _function(both, "__asm_copy_to_user")
    # a short call branches forward to the second class; a long one falls in
    assert "bgtu\ta0, a2, .Lcopy_words_then" in copy
    assert copy.index(".Lcopy_words:") < copy.index(".Lcopy_words_then:")
    assert "bgtu\ta0, a2, .Lcopy_shift_then" in copy
    shift = copy[copy.index(".Lcopy_shift:"):copy.index(".Lcopy_shift_then:")]
    assert "beq\ta0, a3, .Lcopy_pieces_done" in shift and "bleu\ta0, a2, 1b" in shift
    # no out-of-line first class is left behind
    assert ".Lcopy_shift_blocks:" not in copy and "j\t.Lcopy_words_then" not in copy
    clear = _function(both, "__clear_user")
    assert "bgtu\ta0, a2, .Lclear_words_then" in clear
    none = _function(_build(tmp_path, "none", _text("none", "none")), "__asm_copy_to_user")
    assert "bleu\ta0, a2, .Lcopy_words" in none and ".Lcopy_shift_blocks:" in none


def test_inline_loops_copy_exactly_under_qemu(both, tmp_path):
    exe = qemu.build_harness(both.objects, tmp_path / "harness")
    sizes = [n for base in (256, 512) for n in range(base - 9, base + 10)] + [16, 100, 1021]
    cases = [qemu.Case(fn, d, s, n, seed=n + 8 * d + s) for fn in ("to", "from", "clear")
             for n in sizes for d in range(8) for s in range(8) if fn != "clear" or s == 0]
    # a user page that ends in the in-line block, after it, or in a step
    for fn, side in (("to", "dst"), ("from", "src"), ("clear", "dst")):
        for n in (300, 700):
            for off in (0, 3):
                for into in (1, 130, 256, 290):
                    near = qemu.PAGE - into
                    d, s = (near, off) if side == "dst" else (off, near)
                    cases.append(qemu.Case(fn, d, s, n, side, qemu.PAGE, seed=n + into))
    for case, r in zip(cases, qemu.run_cases(exe, cases)):
        assert not r.sum_at_exit, case
        assert r.prefix_ok and r.rest_untouched, case
        assert r.ret == case.exact_return(), (case, r.ret)


def test_inline_shift_trades_short_misaligned_calls_for_long_ones(tmp_path):
    prof = load_profile("u74")
    inline = Bench(_build(tmp_path, "in", _text("shift", "none")).elf, prof, 4096)
    outline = Bench(_build(tmp_path, "out", _text("none", "none")).elf, prof, 4096)

    def cycles(bench, n):
        return bench.run(Case("__asm_copy_to_user", n, 3, 5)).cycles
    # a whole block left: no mispredicted branch to the out-of-line loop
    assert cycles(inline, 1024) + 3 <= cycles(outline, 1024)
    # less than a block: the branch past the in-line loop is the one taken
    assert cycles(inline, 100) >= cycles(outline, 100) + 2


@pytest.mark.slow
def test_an_inline_word_loop_is_proved_for_every_n(tmp_path):
    """The straight-path first loop, its forward exit to the return and the
    second class behind it, proved with the full contract (no shift copy:
    the u74 winner's proof, with `inline shift`, is the tuner's;
    docs/tuning.md)."""
    from copygen.verify.checks.prove import prove_routine
    from copygen.verify.contract.verdict import verdict
    text = (_text("words", "words").replace("    shift unroll 32 schedule paired\n", "    shift off\n")
            .replace("    then shift off\n", "").replace("words unroll 32", "words unroll 4")
            .replace("then words unroll 4\n", "then words unroll 2\n").replace("tail steps", "tail words"))
    build = _build(tmp_path, "words", text)
    assert "bgtu\ta0, a2, .Lcopy_words_then" in _function(build, "__asm_copy_to_user")
    rep = prove_routine(str(build.elf), "__asm_copy_from_user", "from")
    assert verdict(rep) == "proved", rep.status
