"""gen.lower.lower_string: what the lowering of memcpy/memmove/memset decides,
asserted on the C IR (gen.emission.cir), without rendering or compiling."""
from __future__ import annotations

import itertools
import re

import pytest

from copygen.gen.emission.cir import CFunction, CPhase, Stmt
from copygen.gen.lower.lower_string import replicate_shifts, string_unit
from copygen.gen.resources import templates_dir
from copygen.gen.front.strategy import SZREG
from copygen.gen.front.validate import load_text


def unit(memcpy="small below 16; align dst; words unroll 2; shift unroll 1; tail bytes",
         memmove="forward memcpy; backward words",
         memset="small below 16; align dst; words unroll 2; tail bytes", misaligned="slow"):
    text = f"""
target t {{ xlen 64; misaligned {misaligned} }}
string lib for t {{
    memcpy {{ {memcpy} }}
    memmove {{ {memmove} }}
    memset {{ {memset} }}
}}
"""
    return string_unit(load_text(text).string)


def phase(fn: CFunction, title: str) -> CPhase:
    ph = fn.phase(title)
    assert ph is not None, f"{fn.symbol} has no {title!r} phase: {[p.title for p in fn.phases]}"
    return ph


def titles(fn: CFunction) -> list[str]:
    return [p.title for p in fn.phases]


def all_text(fn: CFunction) -> str:
    return "\n".join(t for p in fn.phases for i in p.body for t in i.text_lines())


def word_stmts(ph: CPhase) -> tuple[list[int], list[int]]:
    """Positions of the word loads (`... = sw[i]`) and stores (`dw[i] = ...`)."""
    loads = [n for n, s in enumerate(ph.stmts) if re.search(r"= sw\[\d+\];$", s)]
    stores = [n for n, s in enumerate(ph.stmts) if s.startswith("dw[")]
    return loads, stores


def test_loads_first_unroll_4_loads_every_word_before_storing_any():
    words = phase(unit(memcpy="small below 40; words unroll 4 schedule loads_first; "
                              "shift off; tail bytes").function("memcpy"), "words")
    loads, stores = word_stmts(words)
    assert len(loads) == 4 and len(stores) == 4
    assert max(loads) < min(stores)
    assert "while (count >= 4 * SZREG) {" in words.stmts
    assert "d += 4 * SZREG;" in words.stmts and "s += 4 * SZREG;" in words.stmts


def test_interleave_pairs_each_load_with_its_store():
    words = phase(unit(memcpy="small below 40; words unroll 3 schedule interleave; "
                              "shift off; tail bytes").function("memcpy"), "words")
    copies = [s for s in words.stmts if "sw[" in s and "dw[" in s]
    assert copies == ["dw[0] = sw[0];", "dw[1] = sw[1];", "dw[2] = sw[2];"]
    assert not any(s.startswith("word_t w") for s in words.stmts)


def test_interleaved_shift_copy_alternates_load_store_carry():
    shift = phase(unit(memcpy="small below 40; words unroll 1; shift unroll 2 schedule interleave; "
                              "tail bytes").function("memcpy"), "shift copy")
    kinds = [s.split()[0] for s in shift.stmts if s.startswith(("next =", "dw[", "prev ="))]
    assert kinds == ["next", "dw[0]", "prev"] + ["next", "dw[1]", "prev"]
    assert "word_t next;" in shift.stmts


def test_loads_first_shift_copy_chains_neighbouring_words():
    shift = phase(unit(memcpy="small below 40; words unroll 1; shift unroll 3; "
                              "tail bytes").function("memcpy"), "shift copy")
    body = [s for s in shift.stmts if s.startswith(("word_t n", "dw[", "prev = "))]
    assert body == ["word_t n0 = sw[1];", "word_t n1 = sw[2];", "word_t n2 = sw[3];",
                    "dw[0] = (prev >> shr) | (n0 << shl);",
                    "dw[1] = (n0 >> shr) | (n1 << shl);",
                    "dw[2] = (n1 >> shr) | (n2 << shl);", "prev = n2;"]
    assert "sw += 3;" in shift.stmts and "while (count >= 3 * SZREG) {" in shift.stmts


def test_pipelined_is_written_loads_first_in_c():
    def block(schedule):
        fn = unit(memcpy=f"small below 80; words unroll 8 schedule {schedule}; shift off; "
                         "tail bytes").function("memcpy")
        return phase(fn, "words").stmts
    assert block("pipelined") == block("loads_first") != block("interleave")


def test_shift_off_has_no_shift_phase_and_closes_the_word_branch():
    fn = unit(memcpy="small below 16; words unroll 2; shift off; tail bytes").function("memcpy")
    assert "shift copy" not in titles(fn)
    assert "} else {" not in fn.phase("words").stmts
    assert fn.phase("words").body[-1] == Stmt(1, "}")
    assert "misaligned against dst" not in " ".join(fn.doc.lines)


def test_shift_on_opens_the_else_branch_after_the_word_tail():
    fn = unit(memcpy="small below 16; words unroll 2; shift unroll 1; tail words"
              ).function("memcpy")
    assert titles(fn) == ["entry", "head", "words", "word tail", "shift copy", "bytes"]
    assert phase(fn, "shift copy").body[0] == Stmt(1, "} else {")
    assert phase(fn, "word tail").stmts[0] == "while (count >= SZREG) {"


def test_fast_core_ignores_shift_copy_in_code_and_comment():
    fn = unit(memcpy="small below 16; words unroll 2; shift unroll 2; tail bytes",
              misaligned="fast").function("memcpy")
    assert "shift copy" not in titles(fn)
    assert "shr" not in all_text(fn)
    assert "misaligned against dst" not in " ".join(fn.doc.lines)


def test_fast_misaligned_target_reads_through_the_unaligned_word_accessors():
    """A kernel compiles C with -mstrict-align, so a fast core's misaligned
    words go through accessors that say ld and sd, not an aligned(1) type."""
    fast = unit(memcpy="small below 16; words unroll 2; shift off; tail overlap",
                memset="small below 16; words unroll 2; tail overlap", misaligned="fast")
    assert [t.name for t in fast.types] == ["word_t"]
    assert [h.names for h in fast.helpers] == ["load_uword, store_uword"]
    helpers = "\n".join(fast.helpers[0].text_lines())
    assert '"ld %0, %1"' in helpers and '"sd %1, %0"' in helpers
    words = phase(fast.function("memcpy"), "words")
    assert "word_t w0 = load_uword(s);" in words.stmts
    assert "word_t w1 = load_uword(s + 1 * SZREG);" in words.stmts
    assert "if (!((uintptr_t)s & WORD_MASK)) {" not in words.stmts
    assert titles(fast.function("memcpy"))[-2:] == ["overlap tail", "bytes"]
    assert "uword_t" not in "".join(all_text(f) for f in fast.functions)
    slow = unit()
    assert [t.name for t in slow.types] == ["word_t"] and not slow.helpers
    assert not any("_uword(" in all_text(f) for f in slow.functions)


def test_memmove_backward_words_runs_a_backward_word_loop():
    fn = unit(memmove="forward memcpy; backward words").function("memmove")
    back = phase(fn, "backward words").stmts
    assert back.index("d -= SZREG;") < back.index("*(word_t *)d = *(const word_t *)s;")
    assert titles(fn)[-1] == "backward bytes"
    assert "*--d = *--s;" in phase(fn, "backward bytes").stmts
    fn = unit(memmove="forward memcpy; backward bytes").function("memmove")
    assert "backward words" not in titles(fn)
    assert "one byte at a time" in " ".join(fn.doc.lines)


def test_memmove_forward_choice():
    by_memcpy = phase(unit(memmove="forward memcpy; backward bytes").function("memmove"), "forward")
    assert "return __memcpy(dest, src, count);" in by_memcpy.stmts
    assert not by_memcpy.why
    by_bytes = phase(unit(memmove="forward bytes; backward bytes").function("memmove"), "forward")
    assert not any("__memcpy" in s for s in by_bytes.stmts)
    assert "*d++ = *s++;" in by_bytes.stmts


def test_memmove_does_not_trust_an_overlapping_memcpy_tail_on_overlap():
    fwd = phase(unit(memcpy="small below 16; words unroll 2; shift off; tail overlap",
                     memset="small below 16; words unroll 2; tail overlap",
                     misaligned="fast").function("memmove"), "forward")
    disjoint = [n for n, s in enumerate(fwd.stmts) if "/* disjoint */" in s]
    words = fwd.stmts.index("store_uword(d, load_uword(s));")
    assert disjoint and disjoint[0] < words
    assert "overlapping tail" in " ".join(fwd.why)


@pytest.mark.parametrize("k", [1, 3, 8, 16])
def test_comment_states_the_unroll_the_code_uses(k):
    u = unit(memcpy=f"small below {8 * k + 8}; words unroll {k}; shift unroll {k}; tail bytes",
             memset=f"small below 16; words unroll {k}; tail bytes")
    cpy = u.function("memcpy")
    doc = " ".join(cpy.doc.lines)
    said = int(re.search(r"copy (\d+) words? per iteration", doc).group(1))
    said_shift = int(re.search(r"\((\d+) per iteration", doc).group(1))
    assert said == len(word_stmts(phase(cpy, "words"))[1])
    assert said_shift == len(word_stmts(phase(cpy, "shift copy"))[1]) == k
    threshold = int(re.search(r"bytes below (\d+)", doc).group(1))
    assert f"if (count < {threshold})" in phase(cpy, "entry").stmts
    mset = u.function("memset")
    said = int(re.search(r"(\d+) words? of the replicated byte", " ".join(mset.doc.lines))[1])
    assert said == sum(1 for s in phase(mset, "words").stmts if s.endswith("] = w;")) == k


def test_align_none_has_no_head_and_says_so():
    u = unit(memcpy="small below 16; align none; words unroll 2; shift off; tail bytes",
             memset="small below 16; align none; words unroll 2; tail bytes", misaligned="fast")
    for name in ("memcpy", "memset"):
        fn = u.function(name)
        assert "head" not in titles(fn)
        assert "align" not in " ".join(fn.doc.lines)


@pytest.mark.parametrize("align, accessor", [("none", True), ("dst", False)])
def test_fast_core_stores_through_an_aligned_word_only_after_a_head(align, accessor):
    """Without a head dst may be misaligned: a word_t store there is
    undefined in C (UBSAN's alignment check reports it), so the word loops
    and the word tail store through store_uword; after the head, word_t."""
    u = unit(memcpy=f"small below 16; align {align}; words unroll 2; shift off; tail words",
             memset=f"small below 16; align {align}; words unroll 2; tail words",
             misaligned="fast")
    for name in ("memcpy", "memset"):
        text = all_text(u.function(name))
        aligned = re.findall(r"\(word_t \*\)d\b", text)
        through = re.findall(r"store_uword\(d\b", text)
        assert (bool(through), bool(aligned)) == (accessor, not accessor), (name, text)


def test_replicated_byte_fills_every_byte_of_a_word():
    w = 0xA5
    for s in replicate_shifts():
        w = (w | (w << s)) & ((1 << 8 * SZREG) - 1)
    assert w == int("A5" * SZREG, 16)
    stmts = phase(unit().function("memset"), "replicate").stmts
    assert [s for s in stmts if s.startswith("w |=")] == [f"w |= w << {s};"
                                                           for s in replicate_shifts()]


GRID = [g for g in itertools.product(["slow", "fast"], ["loads_first", "interleave", "pipelined"],
                                     [0, 1, 4], ["bytes", "words", "overlap"],
                                     ["forward memcpy; backward words",
                                      "forward bytes; backward bytes"])
        if not (g[0] == "slow" and g[3] == "overlap")]       # overlap needs a fast core


@pytest.mark.parametrize("misaligned,sched,shift,tail,move", GRID)
def test_blocks_nest_and_indent_consistently(misaligned, sched, shift, tail, move):
    """Every `{` opens one level deeper and every `}` closes one, in every function."""
    shift_s = f"unroll {shift}" if shift and misaligned == "slow" else "off"
    u = unit(memcpy=f"small below 40; words unroll 3 schedule {sched}; shift {shift_s}; "
                    f"tail {tail}",
             memmove=move, memset=f"small below 40; words unroll 3; tail {tail}",
             misaligned=misaligned)
    for fn in u.functions:
        depth, single = 1, False
        for item in (i for p in fn.phases for i in p.body if i != Stmt(0, "")):
            text = item.text if isinstance(item, Stmt) else ""
            if text.endswith(":"):
                assert item.depth == 0, (fn.symbol, item)        # a label
                continue
            want = depth + 1 if single else depth - text.startswith("}")
            assert item.depth == want, (fn.symbol, item)
            if single:                           # the one statement of an unbraced if/while
                single = False
                continue
            depth += text.count("{") - text.count("}")
            single = text.startswith(("while", "if")) and not text.endswith("{")
        assert depth == 1 and not single, fn.symbol


def test_string_template_makes_no_decisions():
    text = (templates_dir() / "string.c.j2").read_text()
    assert "{% if" not in text and "{% macro" not in text and "{% set" not in text


@pytest.mark.parametrize("misaligned, shift", [("slow", "shift unroll 2"), ("fast", "shift off")])
def test_a_blank_line_parts_the_loads_from_the_stores(misaligned, shift):
    """checkpatch --strict wants a blank line after declarations: a
    loads-first block declares its words, then stores them."""
    fn = unit(memcpy=f"small below 16; words unroll 2; {shift}; tail bytes",
              misaligned=misaligned).function("memcpy")
    for title in ("words", "shift copy") if misaligned == "slow" else ("words",):
        lines = all_text(CFunction(fn.symbol, fn.alias, fn.ret, fn.params, fn.doc,
                                   (phase(fn, title),))).split("\n")
        last = max(i for i, t in enumerate(lines) if re.match(r"\s*word_t [wn]\d+ = ", t))
        assert lines[last + 1] == "", (title, lines[last:last + 2])


def test_a_one_statement_branch_has_no_braces():
    """memmove's forward branch to memcpy is one statement: kernel style
    (checkpatch) writes it without braces; a longer one keeps them."""
    fwd = phase(unit(memmove="forward memcpy; backward bytes").function("memmove"), "forward")
    assert fwd.stmts[:2] == ("if ((uintptr_t)d - (uintptr_t)s >= count)",
                             "return __memcpy(dest, src, count);")
    assert "}" not in fwd.stmts
    fwd = phase(unit(memcpy="small below 16; words unroll 2; shift off; tail overlap",
                     memset="small below 16; words unroll 2; tail overlap",
                     misaligned="fast").function("memmove"), "forward")
    assert fwd.stmts[0].endswith("{") and fwd.stmts[-1] == "}"
