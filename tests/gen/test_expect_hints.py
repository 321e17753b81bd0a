"""`expect aligned` (branch hints of the string functions): what the
language accepts and refuses, the sweep axis, the C it emits, the layout
GCC gives it on the u74 model (aligned calls gain, the others pay), and
the proof for every n."""
from __future__ import annotations

import pytest

from copygen.gen.build import build_file
from copygen.errors import CopygenError
from copygen.gen.front.validate import load_text
from copygen.gen.front.variants import sweep_space
from copygen.measure.bench import Bench, Case
from copygen.verify.checks.prove import prove_routine

LIB = """target u74 { xlen 64; misaligned slow }
string lib for u74 {
    memcpy {
        small below 8
        align dst
        words unroll 8
        shift unroll 2
        tail words
        EXPECT
    }
    memset {
        small below 16
        align dst
        words unroll 2
        tail words
        EXPECT
    }
}
"""


def _text(expect: str) -> str:
    return LIB.replace("EXPECT", f"expect {expect}" if expect else "")


def _build(tmp_path, name: str, expect: str):
    src = tmp_path / f"{name}.copy"
    src.write_text(_text(expect))
    return build_file(src, tmp_path)


@pytest.fixture(scope="module")
def hinted(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("hinted"), "hinted", "aligned")


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("plain"), "plain", "")


def test_expect_is_read_into_the_phases_and_none_is_the_default():
    st = load_text(_text("aligned"), "e.copy")
    assert st.string.memcpy.expect == st.string.memset.expect == "aligned"
    assert load_text(_text("none"), "e.copy").string == load_text(_text(""), "e.copy").string


def test_expect_is_refused_on_a_user_access_routine():
    text = ("target t { xlen 64; misaligned slow }\n"
            "copy_user k for t {\n    small below 16; align dst; words unroll 4\n"
            "    shift unroll 1; tail words; fault exact\n    expect aligned\n}\n")
    with pytest.raises(CopygenError) as info:
        load_text(text, "k.copy")
    assert "`expect` applies to the string functions" in info.value.message
    assert (info.value.loc.file, info.value.loc.line) == ("k.copy", 5)
    with pytest.raises(CopygenError) as info:
        load_text(_text("sideways"), "bad.copy")
    assert "sideways" in info.value.message and info.value.loc.line == 9


HINTED_FN = """target t { xlen 64; misaligned MIS }
string lib for t {
    memcpy { small below 16; align CPY; words unroll 2; SHIFT; tail words
             HINT_CPY }
    memmove { forward memcpy; backward words }
    memset { small below 16; align SET; words unroll 2; tail words
             HINT_SET }
}
"""


@pytest.mark.parametrize("fn,align,mis,warned", [
    ("memset", "none", "fast", True),
    ("memset", "overlap", "fast", True),
    ("memcpy", "none", "fast", True),
    ("memcpy", "dst", "fast", False),
    ("memset", "dst", "slow", False),
    ("memcpy", "dst", "slow", False),
])
def test_a_hint_with_no_alignment_test_to_wrap_is_warned_of(fn, align, mis, warned):
    """A byte head's loop test is all memset has to hint, and all memcpy has
    on a core without a shift copy: `expect aligned` without one is warned of."""
    text = (HINTED_FN.replace("HINT_CPY", "expect aligned" if fn == "memcpy" else "")
            .replace("HINT_SET", "expect aligned" if fn == "memset" else "")
            .replace("MIS", mis)
            .replace("SHIFT", "shift off" if mis == "fast" else "shift unroll 1")
            .replace("CPY", align if fn == "memcpy" else "dst")
            .replace("SET", align if fn == "memset" else "dst"))
    st = load_text(text, "w.copy")
    hits = [w for w in st.warnings if "`expect aligned` has nothing to hint" in w.message]
    assert bool(hits) == warned, st.warnings
    if warned:
        assert (hits[0].loc.file, hits[0].loc.line) == ("w.copy", 4 if fn == "memcpy" else 7)


def test_hints_wrap_the_alignment_tests_and_nothing_else(hinted, plain):
    def source(build):
        return next(f for f in build.files if f.name == "string.c").read_text()
    text = source(hinted)
    # memcpy's and memset's heads, and memcpy's source test
    assert text.count("while (unlikely((uintptr_t)d & WORD_MASK)) {") == 2
    assert text.count("if (likely(!((uintptr_t)s & WORD_MASK))) {") == 1
    assert "expect aligned" in text.split("*/")[0]
    bare = source(plain)
    assert "likely(" not in bare and "expect" not in bare.split("*/")[0]
    unhinted = (text.replace("while (unlikely((uintptr_t)d & WORD_MASK)) {",
                             "while ((uintptr_t)d & WORD_MASK) {")
                .replace("if (likely(!((uintptr_t)s & WORD_MASK))) {",
                         "if (!((uintptr_t)s & WORD_MASK)) {")
                .replace(" * The branch hints make aligned pointers the fall-through path.\n", "")
                .replace(" * The branch hint makes an aligned dst the fall-through path.\n", ""))
    assert unhinted.split("*/", 1)[1] == bare.split("*/", 1)[1]


def test_sweep_axis_gives_one_routine_per_value(tmp_path):
    path = tmp_path / "sw.copy"
    path.write_text(_text("") + "sweep s for lib.memcpy { expect [none, aligned]; "
                                "words unroll [4, 8] }\n")
    space = sweep_space(str(path))
    assert len(space.variants) == 4 and not space.pruned
    labels = {v.label for v in space.variants}
    assert "expect aligned, words unroll 8" in labels
    point = next(v for v in space.variants if v.label == "expect aligned, words unroll 4")
    ph = load_text(point.text, "p.copy").string.memcpy
    assert (ph.expect, ph.word_unroll) == ("aligned", 4)


def test_aligned_calls_gain_and_the_others_pay_on_the_u74(hinted, plain):
    """GCC lays the hinted path out as the fall-through one: under the u74
    model's static prediction an aligned call skips a mispredicted branch,
    a co-aligned or misaligned one takes one."""
    h, p = (Bench(b.elf, "u74", 4096) for b in (hinted, plain))
    for n in (16, 32, 256):
        aligned = Case("memcpy", n, 0, 0)
        assert h.run(aligned).cycles < p.run(aligned).cycles, n
        for s, d in ((3, 3), (1, 6)):
            other = Case("memcpy", n, s, d)
            assert h.run(other).cycles > p.run(other).cycles, (n, s, d)
    assert h.run(Case("memset", 64, 0, 3)).cycles > p.run(Case("memset", 64, 0, 3)).cycles


# memcpy's proof takes minutes (its shift copy), memset's about one
@pytest.mark.parametrize("fn", ["memcpy", "memset"])
@pytest.mark.slow
def test_hinted_string_functions_are_proved_for_every_n(hinted, fn):
    rep = prove_routine(str(hinted.elf), fn, fn)
    # B2s, a property, is broken by design: the shift copy loads whole words
    assert all(st == "proved" for c, st in rep.status.items() if c != "B2s"), rep.as_dict()
