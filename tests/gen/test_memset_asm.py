"""memset in assembly (`tail jump`): what the language accepts and refuses,
the memset.S it emits beside a string.c without memset, the bytes it
stores at every size and offset (and none outside), the proof for every
n, and the string patch that keeps memset.o built from the new memset.S.

The run is entered by a computed jump (verify.symbolic.program.Program.run_targets
follows it); the head's pieces run into the first word, which the head
therefore stores too, so that before the run exactly [dst, cursor) is
stored (the cursor invariant).  A run entered with the wrong mask, and a
head that leaves out a piece, are refuted."""
from __future__ import annotations

import re

import pytest

from copygen.emu.api import Machine
from copygen.errors import CopygenError
from copygen.gen import toolchain
from copygen.gen.build import build_file
from copygen.gen.front.validate import load_text
from copygen.verify.checks.prove import prove_routine
from copygen.verify.contract.verdict import verdict
from tests.conftest import ROOT

LIB = """target u74 { xlen 64; misaligned slow; profile u74 }
string lib for u74 {
    memcpy { small below 16; align dst; words unroll 2; shift unroll 1; tail words }
    memmove { forward memcpy; backward words }
    memset { small below SMALL; align dst; words unroll RUN; tail jump }
}
"""


def _text(run: int = 4, small: str = "auto") -> str:
    return LIB.replace("RUN", str(run)).replace("SMALL", small)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("memset_asm")
    src = out / "jump.copy"
    src.write_text(_text())
    return build_file(src, out)


def _file(build, name):
    return next(f for f in build.files if f.name == name)


def test_tail_jump_is_read_with_a_threshold_that_leaves_a_word():
    st = load_text(_text(), "j.copy")
    assert st.string.memset_asm and st.string.memset.tail == "jump"
    assert st.string.memset.threshold == 15 and not st.warnings
    st = load_text(_text(small="8"), "j.copy")
    assert st.string.memset.threshold == 15
    assert [w.loc.line for w in st.warnings] == [5]
    assert "entered without a test for a whole word" in st.warnings[0].message


@pytest.mark.parametrize("old,new,line,words", [
    ("memcpy { small below 16; align dst; words unroll 2; shift unroll 1; tail words }",
     "memcpy { small below 16; align dst; words unroll 2; shift unroll 1; tail jump }",
     3, "generated for memset only"),
    ("words unroll 4; tail jump", "words unroll 3; tail jump", 5, "run of 2, 4, 8, 16, 32"),
    ("words unroll 4; tail jump", "words unroll 4; tail jump; expect aligned", 5,
     "`expect` does not apply to an assembly memset"),
])
def test_tail_jump_is_refused_where_it_is_not_generated(old, new, line, words):
    text = _text()
    assert old in text
    with pytest.raises(CopygenError) as info:
        load_text(text.replace(old, new), "k.copy")
    assert words in info.value.message
    assert (info.value.loc.file, info.value.loc.line) == ("k.copy", line)


def test_clear_user_has_no_jump_tail():
    text = ("target t { xlen 64; misaligned slow }\n"
            "clear_user z for t {\n    small below 16; words unroll 4\n    tail jump; fault exact\n}\n")
    with pytest.raises(CopygenError) as info:
        load_text(text, "z.copy")
    assert "memset only" in info.value.message and info.value.loc.line == 4


def test_memset_goes_to_memset_s_and_string_c_keeps_the_others(built):
    string_c = _file(built, "string.c").read_text()
    memset_s = _file(built, "memset.S").read_text()
    assert "__memcpy(" in string_c and "__memmove(" in string_c and "__memset(" not in string_c
    assert "tail jump; in memset.S" in string_c.replace("\n *", "")
    assert "SYM_FUNC_START(__memset)" in memset_s
    assert "SYM_FUNC_ALIAS_WEAK(memset, __memset)" in memset_s
    # the run is 4-byte stores, entered through an auipc + addi pair
    run = memset_s.split(".Lmemset_run:")[1].split(".option\tpop")[0]
    assert re.findall(r"\tsd\ta1, (\d+)\(t0\)", run) == ["0", "8", "16", "24"]
    entry = memset_s.split("Run entry.")[1].split(".Lmemset_run:")[0]
    assert ".option\tnorvc" in entry and ".option\tnorelax" in entry and "lla\ta5" in entry
    syms = {line.split()[2]: line.split()[1] for line in toolchain.run(
        "nm", [built.elf]).stdout.splitlines() if len(line.split()) == 3}
    assert syms["__memset"] == "T" and syms["memset"] == "W"


def test_every_size_and_offset_stores_the_bytes_and_nothing_else(built):
    m = Machine.from_elf(built.elf)
    base = 0x9000_0000
    m.map(base, 0x2000, user=False)
    for n in list(range(0, 80)) + [255, 256, 257, 1000]:
        for off in range(8):
            m.write(base, bytes([0xEE]) * 0x2000)
            dst = base + 64 + off
            r = m.call("memset", dst, 0x1A5, n)     # only the low byte counts
            assert r.ret == dst
            got = m.read(base, 0x2000)
            want = bytes([0xEE]) * (64 + off) + bytes([0xA5]) * n
            assert got[:len(want)] == want, (n, off)
            assert set(got[len(want):]) == {0xEE}, (n, off)


def test_whole_runs_start_at_the_top_without_the_computed_jump(built):
    """An aligned memset of whole runs (4 words here) skips the jump's
    set-up: each further run adds its 4 stores, addi and bltu and
    nothing else; one word past whole runs adds the jump's six (sub,
    srli, auipc, addi, add, jr) and a first pass of one store, addi and
    bltu."""
    m = Machine.from_elf(built.elf)
    base = 0x9000_0000
    m.map(base, 0x2000, user=False)
    count = {n: m.call("memset", base, 0x5A, n).instret for n in (64, 96, 128, 72)}
    run = 4 + 2                                  # its stores, addi, bltu
    assert count[96] - count[64] == run and count[128] - count[96] == run
    assert count[72] == count[64] + 6 + 3


@pytest.mark.slow
def test_the_memset_is_proved_for_every_n(built):
    rep = prove_routine(str(built.elf), "__memset", "memset")
    assert rep.status and all(s == "proved" for s in rep.status.values()), rep.detail


def _edited(built, tmp_path, old: str, new: str):
    from copygen.gen.build import shim_elf
    text = _file(built, "memset.S").read_text()
    assert old in text
    src = tmp_path / "memset.S"
    src.write_text(text.replace(old, new, 1))
    return shim_elf(src, tmp_path / "build")


def test_a_run_entered_with_the_wrong_mask_is_refuted(built, tmp_path):
    """Skipping too few stores of the run stores words past the end."""
    elf = _edited(built, tmp_path, "andi\ta4, a4, 24", "andi\ta4, a4, 16")
    rep = prove_routine(str(elf), "__memset", "memset")
    assert rep.status["B1"] == "violated", rep.detail


def test_a_run_entered_with_the_skip_negated_is_refuted(built, tmp_path):
    """skip is (t0 - word end) mod run: with the operands swapped a call
    whose word count is odd stores one word too few or too many."""
    elf = _edited(built, tmp_path, "sub\ta4, t0, a3", "sub\ta4, a3, t0")
    rep = prove_routine(str(elf), "__memset", "memset")
    assert "violated" in (rep.status["B1"], rep.status["C1"]), rep.detail


def test_whole_runs_sent_past_the_run_are_refuted(built, tmp_path):
    """The branch that spares whole runs the computed jump must land on
    the run: sent to the tail test it leaves every word unstored."""
    elf = _edited(built, tmp_path, "beqz\ta4, .Lmemset_run", "beqz\ta4, .Lmemset_done")
    rep = prove_routine(str(elf), "__memset", "memset")
    assert rep.status["C1"] == "violated", rep.detail


def test_a_head_without_its_halfword_is_refuted(built, tmp_path):
    elf = _edited(built, tmp_path, "\tsh\ta1, 0(a4)\n", "")
    rep = prove_routine(str(elf), "__memset", "memset")
    assert rep.status["C1"] == "violated", rep.detail


# ---------------------------------------------------------------- memcpy

ASM_MEMCPY = """target u74 { xlen 64; misaligned slow; profile u74 }
string lib for u74 {
    memcpy { small below 8; align dst; words unroll 4; then words unroll 1; shift unroll 2
             then shift unroll 1; tail words; ends pieces; form asm }
    memmove { forward memcpy; backward words }
    memset { small below 15; align dst; words unroll 4; tail jump }
}
"""


@pytest.fixture(scope="module")
def built_memcpy(tmp_path_factory):
    out = tmp_path_factory.mktemp("memcpy_asm")
    src = out / "kcopy.copy"
    src.write_text(ASM_MEMCPY)
    return build_file(src, out)


def test_form_asm_takes_the_user_copy_phases_and_no_fault():
    st = load_text(ASM_MEMCPY, "k.copy")
    assert st.string.memcpy_asm and st.string.memcpy.then_unroll == 1
    assert st.string.memcpy.ends == "pieces"
    for old, new, words in (
            ("form asm }", "form asm; fault exact }", "`fault` does not apply to memcpy in assembly"),
            ("form asm }", "form asm; expect aligned }", "`expect` applies to the string functions in C"),
            ("tail jump }", "tail jump; form asm }", "`form` applies to memcpy, not memset")):
        with pytest.raises(CopygenError) as info:
            load_text(ASM_MEMCPY.replace(old, new), "k.copy")
        assert words in info.value.message
    # a C memcpy still refuses what only the assembly lowering has
    with pytest.raises(CopygenError, match="memcpy with `form asm`, not memcpy"):
        load_text(ASM_MEMCPY.replace("; form asm", ""), "k.copy")


def test_memcpy_s_is_the_user_copy_without_sum_or_exception_entries(built_memcpy):
    text = _file(built_memcpy, "memcpy.S").read_text()
    string_c = _file(built_memcpy, "string.c").read_text()
    assert "__memcpy(" not in string_c.split("void *__memmove(")[0]
    assert "return __memcpy(dest, src, count);" in string_c        # memmove calls it
    body = text.split("SYM_FUNC_START(__memcpy)")[1]
    assert "fixup" not in body and "CSR_STATUS" not in body and "_asm_extable" not in text
    assert body.index("mv\ta7, a0") < body.index("add\ta3, a0, a2")
    rets = [m.start() for m in re.finditer(r"\n\tret\n", body)]
    assert rets and all(body[:r].rstrip().endswith("mv\ta0, a7") for r in rets)
    assert "SYM_FUNC_ALIAS_WEAK(memcpy, __memcpy)" in text


def test_memcpy_and_memmove_copy_every_size_and_offset(built_memcpy):
    m = Machine.from_elf(built_memcpy.elf)
    base = 0x9000_0000
    m.map(base, 0x4000, user=False)
    src_bytes = bytes((i * 7 + 3) & 0xFF for i in range(0x2000))
    for fn in ("memcpy", "memmove"):
        for n in list(range(0, 70)) + [200, 1000]:
            for so, do in ((0, 0), (3, 3), (1, 0), (0, 5), (7, 2)):
                m.write(base, src_bytes + bytes([0xEE]) * 0x2000)
                src, dst = base + 16 + so, base + 0x2000 + 16 + do
                r = m.call(fn, dst, src, n)
                assert r.ret == dst
                got = m.read(base + 0x2000, 0x2000)
                want = bytes([0xEE]) * (16 + do) + src_bytes[16 + so:16 + so + n]
                assert got[:len(want)] == want, (fn, n, so, do)
                assert set(got[len(want):]) == {0xEE}, (fn, n, so, do)


def test_memmove_hands_the_assembly_memcpy_disjoint_buffers_only(built_memcpy):
    """memcpy.S is proved for disjoint buffers: memmove calls it for those
    and copies a forward overlap itself, right for every overlap."""
    from copygen.verify.counterexamples.bounded import check
    string_c = _file(built_memcpy, "string.c").read_text()
    move = string_c.split("void *__memmove(")[1]
    assert move.index("/* disjoint */") < move.index("return __memcpy(dest, src, count);")
    assert "memcpy's contract is" in move
    assert check(str(built_memcpy.elf), "memmove", "memmove", 24) == {}


@pytest.mark.slow
def test_the_assembly_memcpy_is_proved_and_memmove_takes_its_proof(tmp_path):
    """The kernel2021-shaped layout's `__memcpy` is proved for every n, and
    memmove's call of it is taken by that proof (verify.symbolic.summary), not
    followed into its code; the classes-and-pieces one of `built_memcpy` is
    beyond the verifier's invariants as a copy_user too."""
    assert PLAIN_MEMCPY != ASM_MEMCPY
    src = tmp_path / "plain.copy"
    src.write_text(PLAIN_MEMCPY)
    elf = str(build_file(src, tmp_path).elf)
    callees = {}

    def callee(sym, kind):
        callees[sym] = prove_routine(elf, sym, kind)
        return callees[sym]
    rep = prove_routine(elf, "__memmove", "memmove", callee=callee)
    assert list(callees) == ["__memcpy"]
    assert verdict(callees["__memcpy"]) == "proved", callees["__memcpy"].status
    assert verdict(rep) == "proved", rep.status
    assert rep.calls["__memcpy"].startswith("by its own proof"), rep.calls


PLAIN_MEMCPY = ASM_MEMCPY.replace(
    "memcpy { small below 8; align dst; words unroll 4; then words unroll 1; shift unroll 2\n"
    "             then shift unroll 1; tail words; ends pieces; form asm }",
    "memcpy { small below 16; align dst; words unroll 2; shift unroll 1; tail words; form asm }")
