"""`align overlap` (string functions on a core with fast misaligned access):
what the language accepts and refuses, the sweep axis, the C it emits,
what it buys on the c910 model, and the proof for every n, which needs
the cursor invariant's floor (the head's word is written before the word
loop's cursor has passed it).  A head that skips a byte is caught."""
from __future__ import annotations

import pytest

from copygen.gen import toolchain
from copygen.gen.build import build_file
from copygen.errors import CopygenError
from copygen.gen.front.validate import load_text
from copygen.gen.front.variants import sweep_space
from copygen.measure.bench import Bench, Case
from copygen.verify.checks.prove import prove_routine

LIB = """target c910 { xlen 64; misaligned fast; profile c910 }
string lib for c910 {
    memcpy { small below 8; align ALIGN; words unroll 4 schedule interleave; shift off
             tail overlap }
    memmove { forward memcpy; backward words }
    memset { small below 8; align ALIGN; words unroll 2; tail overlap }
}
"""
HEAD_STEP = "s += SZREG - ((uintptr_t)d & WORD_MASK);"


def _text(align: str) -> str:
    return LIB.replace("ALIGN", align)


def _build(tmp_path, align: str):
    src = tmp_path / f"{align}.copy"
    src.write_text(_text(align))
    return build_file(src, tmp_path)


def _string_c(build):
    return next(f for f in build.files if f.name == "string.c")


@pytest.fixture(scope="module")
def overlap(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("overlap"), "overlap")


@pytest.fixture(scope="module")
def unaligned(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("none"), "none")


def test_overlap_is_read_and_its_threshold_is_one_word():
    st = load_text(_text("overlap"), "o.copy")
    assert st.string.memcpy.align == st.string.memset.align == "overlap"
    assert st.string.memcpy.threshold == st.string.memset.threshold == 8
    assert not st.warnings


@pytest.mark.parametrize("text,line,words", [
    ("target t { xlen 64; misaligned fast }\n"
     "copy_user k for t {\n    small below 16; words unroll 4; shift off\n"
     "    align overlap\n    tail words; fault exact\n}\n",
     4, "applies to the string functions"),
    (LIB.replace("misaligned fast; profile c910", "misaligned slow")
        .replace("shift off", "shift unroll 1").replace("tail overlap", "tail words")
        .replace("ALIGN", "overlap"),
     3, "misaligned word, which this target traps"),
])
def test_overlap_is_refused_where_it_cannot_be(text, line, words):
    with pytest.raises(CopygenError) as info:
        load_text(text, "k.copy")
    assert words in info.value.message
    assert (info.value.loc.file, info.value.loc.line) == ("k.copy", line)


def test_the_head_is_one_word_and_memmove_keeps_it_to_disjoint_buffers(overlap, unaligned):
    text = _string_c(overlap).read_text()
    memcpy, memmove = text.split("void *__memcpy(")[1], text.split("void *__memmove(")[1]
    head = memcpy.split("/* Words:")[0]
    assert "store_uword(d, load_uword(s));" in head and HEAD_STEP in head
    assert "while" not in head.split("copy_bytes;")[1]        # no loop, no branch
    assert "word_t *dw = (word_t *)d;" in memcpy            # dst aligned after it
    assert "memcpy's overlapping head\n\t\t * and tail words" in memmove.split("EXPORT_SYMBOL")[0]
    assert "store_uword(d, w);" in text.split("void *__memset(")[1]
    assert HEAD_STEP not in _string_c(unaligned).read_text()


def test_sweep_axis_takes_overlap_for_strings_and_refuses_it_for_copy_user(tmp_path):
    path = tmp_path / "sw.copy"
    path.write_text(_text("none") + "sweep s for lib.memset { align [none, dst, overlap] }\n")
    space = sweep_space(str(path))
    assert sorted(v.label for v in space.variants) == [
        "align dst", "align none", "align overlap"] and not space.pruned
    user = tmp_path / "user.copy"
    user.write_text("target t { xlen 64; misaligned fast }\n"
                    "copy_user k for t { small below 16; align dst; words unroll 4; shift off;"
                    " tail words; fault exact }\n"
                    "sweep u for k { align [dst, overlap] }\n")
    with pytest.raises(CopygenError) as info:      # no point could use the value
        sweep_space(str(user))
    assert "`align overlap` applies to the string functions" in info.value.message
    assert info.value.loc.line == 3


def test_misaligned_dst_gains_on_the_c910(overlap, unaligned):
    """Without a head every word store of a misaligned dst is misaligned,
    which the c910 model charges; after the overlapping head none is (and
    memcpy's loads neither, when src is co-aligned with dst)."""
    o, u = (Bench(b.elf, "c910", 4096) for b in (overlap, unaligned))
    for fn, src in (("memset", 0), ("memcpy", 3)):
        for n in (256, 1024):
            case = Case(fn, n, src, 3)
            fast, slow = o.run(case), u.run(case)
            assert fast.cycles < slow.cycles, (fn, n)
            assert fast.misaligned <= 4 < n // 8 <= slow.misaligned, (fn, n)


@pytest.mark.parametrize("fn", ["memcpy", "memset"])
@pytest.mark.slow
def test_overlapping_heads_are_proved_for_every_n(overlap, fn):
    rep = prove_routine(str(overlap.elf), fn, fn)
    assert all(st in ("proved", "yes") for st in rep.status.values()), rep.as_dict()


@pytest.mark.slow
def test_memmove_behind_an_overlapping_head_is_proved_for_every_n(overlap):
    rep = prove_routine(str(overlap.elf), "memmove", "memmove")
    assert all(st == "proved" for st in rep.status.values()), rep.as_dict()


def test_a_head_that_skips_a_byte_is_caught(overlap, tmp_path):
    """The same memcpy with its head stepping one byte too far on the
    source: C1 violated, with a replayed counterexample."""
    src = _string_c(overlap)
    broken = tmp_path / "string.c"
    text = src.read_text()
    assert text.count(HEAD_STEP) == 1
    broken.write_text(text.replace(HEAD_STEP, "s += SZREG + 1 - ((uintptr_t)d & WORD_MASK);"))
    obj, elf = tmp_path / "string.o", tmp_path / "broken.elf"
    toolchain.compile_c(broken, overlap.outdir / "include", obj)
    toolchain.link([obj], overlap.outdir / "copygen.ld", elf)
    rep = prove_routine(str(elf), "memcpy", "memcpy")
    assert rep.status["C1"] == "violated", rep.as_dict()
