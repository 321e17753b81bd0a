"""`ends pieces`: the alignment head and the last bytes of a size-class
routine stored as naturally aligned 4-, 2- and 1-byte pieces built from
whole aligned words.  Validation, the code it makes, its behaviour under the
qemu oracle (exact returns at every fault), its cost, and (slow) the proof
for every n."""
from __future__ import annotations

import pytest

from copygen.emu.profile import load_profile
from copygen.gen.build import build_file
from copygen.gen.errors import CopygenError
from copygen.gen.validate import load_text
from copygen.measure.bench import Bench, Case
from copygen.mutate import oracle as qemu

TARGET = "target u74 { xlen 64; misaligned slow }\n"
PIECES = TARGET + """
copy_user cu for u74 {
    small below 8
    align dst
    words unroll 8 schedule loads_first
    then words unroll 2
    shift unroll 4 schedule paired
    then shift unroll 2 schedule paired
    tail words
    ends pieces
    fault exact
}
clear_user cl for u74 { small below 8; align dst; words unroll 8; then words unroll 1;
                        tail bytes; ends pieces; fault exact }
"""


def _error(text: str) -> CopygenError:
    with pytest.raises(CopygenError) as info:
        load_text(text, "p.copy")
    return info.value


@pytest.mark.parametrize("edit, words", [
    # no size classes: the head is the bottom-tested byte loop of the kernel layout
    (("    then words unroll 2\n    shift unroll 4 schedule paired\n"
      "    then shift unroll 2 schedule paired\n", "    shift unroll 4\n"),
     ["needs size classes"]),
    # a last loop of two words leaves up to 15 bytes, more than pieces store
    (("    tail words\n", "    tail bytes\n"), ["leaves up to a whole block", "tail words"]),
    (("ends pieces", "ends halves"), ["syntax error"]),
])
def test_bad_ends_are_located_errors(edit, words):
    err = _error(PIECES.replace(*edit))
    assert err.loc.file == "p.copy" and err.loc.line > 1, err
    for w in words:
        assert w in err.message + (err.hint or ""), err


def test_ends_pieces_refused_where_the_source_is_not_aligned():
    text = PIECES.replace("misaligned slow", "misaligned fast").replace(
        "shift unroll 4 schedule paired\n    then shift unroll 2 schedule paired\n",
        "shift off\n")
    err = _error(text)
    assert "fast misaligned" in err.message and err.loc.line == 10


def test_string_routines_refuse_ends():
    err = _error(TARGET + "string s for u74 {\n  memcpy { small below 16; words unroll 2; "
                 "tail bytes; ends pieces }\n  memset { small below 16; words unroll 1;"
                 " tail bytes }\n}\n")
    assert "copy_user and clear_user" in err.message and err.loc.line == 3


def test_one_word_last_loops_need_no_word_tail():
    text = (PIECES.replace("    tail words\n", "    tail bytes\n")
            .replace("then words unroll 2", "then words unroll 1")
            .replace("then shift unroll 2 schedule paired", "then shift unroll 1 schedule paired"))
    ph = load_text(text, "p.copy").copy_user.phases
    assert ph.ends == "pieces" and ph.tail == "bytes"
    assert load_text(PIECES.replace("ends pieces", "ends bytes"), "p.copy").copy_user.phases.ends \
        == "bytes"


def _build(tmp_path_factory, name: str, text: str):
    d = tmp_path_factory.mktemp(name)
    src = d / f"{name}.copy"
    src.write_text(text)
    return build_file(src, d)


@pytest.fixture(scope="module")
def pieces_build(tmp_path_factory):
    return _build(tmp_path_factory, "pieces", PIECES)


def _body(build, symbol: str) -> str:
    text = next(f for f in build.files if f.name == "uaccess.S").read_text()
    body = text[text.index(f"SYM_FUNC_START({symbol})"):]
    return body[:body.index("SYM_FUNC_END")]


def test_pieces_replace_the_byte_loop_at_both_ends(pieces_build):
    for symbol, pfx in (("__asm_copy_to_user", "copy"), ("__clear_user", "clear")):
        body = _body(pieces_build, symbol)
        # leftover bytes go to the pieces, out of line after the return
        assert f"bne\ta0, a3, .L{pfx}_tail_pieces" in body
        assert body.index(f".L{pfx}_done:") < body.index(f".L{pfx}_tail_pieces:")
        head = body[body.index(f".L{pfx}_head:"):]
        head = head[:head.index(f"j\t.L{pfx}_head_done")]
        for op in ("sb", "sh", "sw"):
            assert f"fixup {op}, " in head, op
        assert "lbu" not in head and "bltu" not in head      # no byte loop in the head
    copy = _body(pieces_build, "__asm_copy_to_user")
    # the shift copy builds its last bytes from prev and stores them in pieces
    shift = copy[copy.index(".Lcopy_shift:"):copy.index(".Lcopy_tail_pieces:")]
    assert "j\t.Lcopy_pieces" in shift and "srl\tt0, a6, a4" in shift


def _exact(case: qemu.Case) -> int:
    """Bytes not copied when the user page at fault_at is inaccessible."""
    if case.fault_side == "none":
        return 0
    off = case.dst_off if case.fault_side == "dst" else case.src_off
    return off + case.n - case.fault_at


def test_pieces_copy_exactly_under_qemu(pieces_build, tmp_path):
    exe = qemu.build_harness(pieces_build.objects, tmp_path / "harness")
    cases = [qemu.Case(fn, d, s, n, seed=n + 8 * d + s)
             for fn in ("to", "clear") for n in range(0, 90) for d in range(8) for s in range(8)
             if fn == "to" or s == 0]
    # faults just inside a buffer's first and last word, at every alignment
    for fn, side in (("to", "dst"), ("from", "src"), ("clear", "dst")):
        for n in (9, 15, 23, 40, 77, 150):
            for off in range(8):
                for into in (1, 3, 7, n - 5, n - 1):
                    base = qemu.PAGE - into
                    d, s = (base + off, off) if side == "dst" else (off, base + off)
                    if fn == "clear":
                        s = 0
                    if 0 < into < n and (d if side == "dst" else s) < qemu.PAGE:
                        cases.append(qemu.Case(fn, d, s, n, side, qemu.PAGE, seed=n + off))
    for i, fn in enumerate(("to", "from", "clear")):
        cases += qemu.random_cases(fn, 300, max_n=600, seed=70 + i)
    # every tail length after each loop, at co-aligned and misaligned offsets
    cases += [qemu.Case("to", d, s, n, seed=n) for n in range(128, 200) for d, s in
              ((0, 0), (1, 1), (0, 3), (5, 2), (7, 1))]
    for case, r in zip(cases, qemu.run_cases(exe, cases)):
        assert not r.sum_at_exit, case
        assert r.prefix_ok and r.rest_untouched, case
        assert r.ret == _exact(case), (case, r.ret)


def test_pieces_cut_the_cost_of_short_co_aligned_copies(pieces_build, tmp_path):
    """The head's bytes no longer go through the byte loop, 5 cycles a byte
    in a copy and 2 in a fill (u74 model): a 7-byte head and a 1-byte tail."""
    src = tmp_path / "b.copy"
    src.write_text(PIECES.replace("ends pieces", "ends bytes"))
    prof = load_profile("u74")
    ours, loop = Bench(pieces_build.elf, prof, 4096), Bench(build_file(src, tmp_path).elf, prof, 4096)
    for n in (16, 64):
        a = ours.run(Case("__asm_copy_to_user", n, 1, 1)).cycles
        b = loop.run(Case("__asm_copy_to_user", n, 1, 1)).cycles
        assert a + 15 <= b, (n, a, b)
        a = ours.run(Case("__clear_user", n, 0, 1)).cycles
        b = loop.run(Case("__clear_user", n, 0, 1)).cycles
        assert a + 5 <= b, (n, a, b)


@pytest.mark.slow
@pytest.mark.parametrize("symbol, kind", [("__asm_copy_from_user", "from"),
                                          ("__clear_user", "clear")])
def test_pieces_are_proved_for_every_n(pieces_build, symbol, kind):
    from copygen.verify.prove import prove_routine
    from copygen.verify.verdict import verdict
    rep = prove_routine(str(pieces_build.elf), symbol, kind)
    assert verdict(rep) == "proved", rep.status
