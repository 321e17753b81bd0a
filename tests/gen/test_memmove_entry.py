"""memmove's `form asm`: all of memmove in memcpy.S, a branch into memcpy
for disjoint buffers and its own copies of overlapping ones, so that
memcpy.S names no other file's symbol (kexec's purgatory links it alone).
Validation, the code, results under the emulator and a bounded check, the
cycles it saves, and (slow) the proof with memcpy's call taken by memcpy's
own proof, the branch included."""
from __future__ import annotations

import re

import pytest

from copygen.emu.api import Machine
from copygen.errors import CopygenError
from copygen.gen.emission.emit import render_memcpy, render_string
from copygen.gen.front.validate import load_text
from copygen.measure.bench import Bench, Case
from tests.conftest import build_text

LIB = """target u74 { xlen 64; misaligned slow; profile u74 }
string lib for u74 {
    memcpy { small below 16; align dst; words unroll 2; shift unroll 1; tail words; form asm }
    memmove { forward memcpy; backward words; form asm }
    memset { small below 15; align dst; words unroll 4; tail jump }
}
"""
IN_C = LIB.replace("backward words; form asm }", "backward words }")


@pytest.fixture(scope="module")
def entry(tmp_path_factory):
    return build_text(tmp_path_factory, LIB, "entry")


@pytest.fixture(scope="module")
def bytes_back(tmp_path_factory):
    return build_text(tmp_path_factory, LIB.replace("backward words", "backward bytes"), "bytes")


@pytest.fixture(scope="module")
def in_c(tmp_path_factory):
    return build_text(tmp_path_factory, IN_C, "in_c")


@pytest.mark.parametrize("old, new", [
    ("tail words; form asm }\n    memmove", "tail words }\n    memmove"),
    ("forward memcpy; backward words; form asm", "forward bytes; backward words; form asm"),
])
def test_the_entry_needs_an_assembly_memcpy_to_branch_into(old, new):
    with pytest.raises(CopygenError) as info:
        load_text(LIB.replace(old, new), "m.copy")
    assert "needs `forward memcpy` and memcpy with `form asm`" in info.value.message
    assert (info.value.loc.file, info.value.loc.line) == ("m.copy", 4)


def test_memcpy_s_holds_all_of_memmove_and_there_is_no_string_c(entry):
    st = load_text(LIB, "m.copy")
    assert st.string.memmove_asm and not load_text(IN_C, "m.copy").string.memmove_asm
    asm = next(f for f in entry.files if f.name == "memcpy.S").read_text()
    move = asm[asm.index("SYM_FUNC_START(__memmove)"):]
    assert asm.index("SYM_FUNC_END(__memcpy)") < asm.index("SYM_FUNC_START(__memmove)")
    assert re.search(r"\tbgeu\tt1, a2, __memcpy\b", move)      # after memcpy: a backward branch
    assert not re.search(r"^\t(tail|call|jal|jr)\t", move, re.M)
    assert "REG_L\tt3, 0(a1)" in move and "REG_S\tt3, 0(a3)" in move    # backward words
    assert "SYM_FUNC_ALIAS_WEAK(memmove, __memmove)" in move and "EXPORT_SYMBOL(memmove)" in move
    assert [f.name for f in entry.files if f.suffix == ".c"] == []
    assert render_string(st, "m.copy") is None
    # a kernel tree's files: memmove gets the prefixed aliases too
    kasm = render_memcpy(st, "m.copy", exports=False, prefixes=("__pi_",))
    assert "SYM_FUNC_ALIAS(__pi_memmove, __memmove)" in kasm
    assert "SYM_FUNC_ALIAS(__pi___memmove, __memmove)" in kasm
    # backward bytes: no word loop in the backward copy
    move = render_memcpy(load_text(LIB.replace("backward words", "backward bytes"), "m.copy"),
                         "m.copy")
    back = move[move.index(".Lmemmove_backward:"):]
    assert "REG_L" not in back and "lbu\tt3, 0(a1)" in back


def test_memcpy_o_names_no_symbol_of_another_file(entry):
    """kexec's purgatory links memcpy.o without the rest of arch/riscv/lib:
    memcpy.S must define every symbol it uses."""
    import subprocess
    from copygen.gen.toolchain import program
    obj = next(f for f in entry.objects if f.name == "memcpy.o")
    undefined = subprocess.run([program("nm"), "-u", str(obj)], capture_output=True, text=True,
                               check=True).stdout.split()
    assert undefined == []
    defined = subprocess.run([program("nm"), str(obj)], capture_output=True, text=True,
                             check=True).stdout
    assert " T __memmove" in defined and " W memmove" in defined


@pytest.mark.parametrize("which", ["entry", "bytes_back"])
def test_memmove_is_right_for_every_overlap(which, request):
    """dst at every offset from src - 40 to src + 40, sizes 0 to 40, so
    every branch of the entry and both directions of the overlap copy
    (the backward one with words, and bytes only)."""
    m = Machine.from_elf(request.getfixturevalue(which).elf)
    base = 0x9000_0000
    m.map(base, 0x1000, user=False)
    data = bytes((i * 13 + 5) & 0xFF for i in range(0x1000))
    for n in range(41):
        for delta in range(-40, 41):
            src = base + 0x400 + (n % 8)
            dst = src + delta
            m.write(base, data)
            r = m.call("memmove", dst, src, n)
            want = bytearray(data)
            want[dst - base:dst - base + n] = data[src - base:src - base + n]
            assert r.ret == dst and m.read(base, 0x1000) == bytes(want), (n, delta)


def test_a_bounded_check_finds_nothing(entry):
    from copygen.verify.counterexamples.bounded import check
    assert check(str(entry.elf), "memmove", "memmove", 24) == {}


def test_the_entry_costs_two_cycles_over_memcpy(entry, in_c):
    """u74 model, warm, disjoint buffers: the entry's two subtractions and
    two branches (the second predicted taken), against the C memmove's
    tests, moves and tail call."""
    ours, theirs = Bench(entry.elf, "u74_spec", 1024), Bench(in_c.elf, "u74_spec", 1024)
    for n, s, d in ((8, 0, 0), (8, 3, 5), (16, 1, 1), (64, 0, 4), (1024, 7, 2)):
        memcpy = ours.run(Case("memcpy", n, s, d)).cycles
        assert ours.run(Case("memmove", n, s, d)).cycles <= memcpy + 2, (n, s, d)
        assert theirs.run(Case("memmove", n, s, d)).cycles >= memcpy + 3, (n, s, d)


@pytest.mark.slow
def test_the_entry_is_proved_with_memcpy_taken_by_its_own_proof(entry):
    from copygen.verify.checks.prove import prove_routine
    from copygen.verify.contract.verdict import verdict
    callees = {}

    def callee(sym, kind):
        callees[sym] = prove_routine(str(entry.elf), sym, kind, jobs=1)
        return callees[sym]
    rep = prove_routine(str(entry.elf), "__memmove", "memmove", callee=callee, jobs=1)
    assert list(callees) == ["__memcpy"]
    assert verdict(callees["__memcpy"]) == "proved", callees["__memcpy"].status
    assert verdict(rep) == "proved", rep.status
    assert rep.calls["__memcpy"].startswith("by its own proof"), rep.calls
