"""Encoding table validation, decoder vs GNU objdump, compressed expansion,
encoder round trip."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

import copygen.emu.insn.isa as isa
from copygen.emu.insn.decode import ABI, decode
from copygen.emu.insn.encode import encode
from copygen.emu.errors import IllegalInstruction
from emu_build import CFLAGS, CROSS, needs_toolchain, run
from emu_randprog import random_fields


def test_table_builds_and_is_complete():
    names = {e.name for e in isa.TABLE}
    assert {"add", "ld", "sd", "csrrs", "mulhsu", "remuw", "fence.i", "ecall"} <= names
    assert sum(e.length == 2 for e in isa.TABLE) == len(isa.COMPRESSED)


ORIGINAL_BASE = isa.BASE


def _rebuild(monkeypatch, base=None, compressed=None):
    if base is not None:
        monkeypatch.setattr(isa, "BASE", base)
    if compressed is not None:
        monkeypatch.setattr(isa, "COMPRESSED", compressed)
    return isa.build_table()


def test_ambiguous_overlap_is_rejected_by_name(monkeypatch):
    bad = ORIGINAL_BASE + (("addx", "R", "0000000 ..... ..... 000 ..... 0110011"),)
    with pytest.raises(ValueError, match="addx"):
        _rebuild(monkeypatch, base=bad)
    # a row strictly inside another is allowed (the specific one wins, as c.jr in c.mv)
    inner = ORIGINAL_BASE + (("wide", "I", "....... ..... ..... 000 ..... 0001011"),
                             ("narrow", "R", "0000000 ..... ..... 000 ..... 0001011"))
    assert {"wide", "narrow"} <= {e.asm for e in _rebuild(monkeypatch, base=inner)}


def test_unassigned_and_doubly_assigned_bits_are_rejected(monkeypatch):
    gap = ORIGINAL_BASE + (("gappy", "R", "0000111 ..... ..... 000 ..... 0001011"),)
    _rebuild(monkeypatch, base=gap)  # fully covered: fine
    hole = (("holey", "N", "0000000 ..... 00000 000 00000 0001011"),)
    with pytest.raises(ValueError, match="holey.*neither fixed nor a field"):
        _rebuild(monkeypatch, base=ORIGINAL_BASE + hole)
    twice = (("twice", "R", "0000001 ..1.. ..... 000 ..... 0001011"),)
    with pytest.raises(ValueError, match="twice.*both fixed and a field"):
        _rebuild(monkeypatch, base=ORIGINAL_BASE + twice)
    short = (("short", "R", "0000001 ..... ..... 000 ..... 000101"),)
    with pytest.raises(ValueError, match="short"):
        _rebuild(monkeypatch, base=ORIGINAL_BASE + short)


def test_compressed_more_specific_row_wins():
    assert decode(0x8082).asm == "c.jr"          # ret, inside c.mv's space
    assert decode(0x852E).asm == "c.mv"          # mv a0, a1
    assert decode(0x9002).asm == "c.ebreak"      # inside c.jalr / c.add
    assert decode(0x6141).asm == "c.addi16sp"    # addi sp, sp, 16, inside c.lui


@pytest.mark.parametrize("raw, why", [
    (0x0000, "all-zero"), (0x0000_0053, "fadd.s"), (0x2000, "c.fld"), (0x6001, "c.lui with imm 0"),
    (0x8002, "c.jr x0"), (0x4002, "c.lwsp x0"), (0x0001_0000 | 0x0000, "zero"), (0x1000_0073, "sret"),
    (0x0000_007F, "48-bit"),
])
def test_illegal_encodings(raw, why):
    with pytest.raises(IllegalInstruction) as e:
        decode(raw, 0x80200000)
    assert "0x80200000" in str(e.value)


def test_encode_decode_round_trip_all_rows():
    rng = random.Random(5)
    for enc in isa.TABLE:
        done = 0
        for _ in range(200):
            fields = random_fields(rng, enc)
            try:
                raw = encode(enc.asm, **fields)
            except ValueError:
                continue
            insn = decode(raw)
            assert insn.asm == enc.asm and insn.length == enc.length
            done += 1
        assert done, f"no encodable operands found for {enc.asm}"


def _text_bytes(obj: Path) -> bytes:
    with open(obj, "rb") as f:
        return ELFFile(f).get_section_by_name(".text").data()


@needs_toolchain
@pytest.mark.parametrize("opt", ["-O0", "-O2", "-Os"])
def test_decoder_agrees_with_objdump_on_gcc_output(build_dir, opt):
    src = Path(__file__).with_name("fixtures") / "isa_progs.c"
    obj = build_dir / f"isa_progs{opt}.o"
    run([CROSS + "gcc", "-c", opt, *CFLAGS, "-o", str(obj), str(src)])
    listing = run([CROSS + "objdump", "-d", "-M", "no-aliases", str(obj)])
    seen = 0
    for line in listing.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+([0-9a-f]{4,8})\s+(\S+)\s*(.*)", line)
        if not m:
            continue
        insn = decode(int(m.group(2), 16))
        assert insn.asm == m.group(3), line
        operands = re.sub(r"\b[0-9a-f]+ <[^>]*>", "", m.group(4))  # branch targets
        regs = set(re.findall(r"\b(" + "|".join(ABI) + r")\b", operands))
        ours = {ABI[insn.rd], ABI[insn.rs1], ABI[insn.rs2]}
        assert regs <= ours, line
        seen += 1
    assert seen > 200


COMPRESSIBLE = """
addi a0, a0, 5; li a1, -3; lui a5, 0x1f; lui a4, 0xfffe0; addi sp, sp, -64; addi sp, sp, 496
addi a0, sp, 16; addi s1, sp, 1020; lw a0, 4(a1); lw s0, 124(a5); ld a2, 8(a3); ld a5, 248(s1)
sw a0, 12(a1); sd a4, 240(s0); lw a0, 8(sp); lw t3, 252(sp); ld ra, 24(sp); ld s11, 504(sp)
sw a0, 12(sp); sw t6, 252(sp); sd s0, 16(sp); sd a7, 504(sp); slli a0, a0, 33; slli t0, t0, 1
srli a2, a2, 40; srai a3, a3, 63; andi a3, a3, -4; andi s0, s0, 31; sub a0, a0, a1; xor s0, s0, s1
or a4, a4, a5; and a2, a2, a3; subw a0, a0, a5; addw s1, s1, a0; addiw a0, a0, 7; addiw t1, t1, -32
mv a0, a1; mv t6, s11; add a0, a0, a1; add t5, t5, sp; jr a5; jalr t0; ebreak; nop
""".replace(";", "\n")


@needs_toolchain
def test_compressed_expand_to_the_assembler_base_form(build_dir):
    lines = [s.strip() for s in COMPRESSIBLE.splitlines() if s.strip()]
    lines += ["1: beqz a0, 1b", "1: bnez s1, 1b", "1: j 1b"]
    for rvc in (True, False):
        src = build_dir / f"rvc_{rvc}.S"
        # c.mv expands to `add rd, x0, rs2`, not to the assembler's `mv` (addi)
        body = lines if rvc else [re.sub(r"^mv (\w+), (\w+)", r"add \1, zero, \2", t) for t in lines]
        src.write_text(".text\n" + (".option rvc\n" if rvc else ".option norvc\n") + "\n".join(body) + "\n")
        run([CROSS + "gcc", "-c", "-march=rv64gc" if rvc else "-march=rv64g", "-mabi=lp64d",
             "-o", str(build_dir / f"rvc_{rvc}.o"), str(src)])
    short, long = (_insns(_text_bytes(build_dir / f"rvc_{b}.o")) for b in (True, False))
    assert len(short) == len(long) == len(lines)
    for text, c, base in zip(lines, short, long):
        assert c.length == 2 and base.length == 4, text
        assert (c.name, c.rd, c.rs1, c.rs2, c.imm) == (base.name, base.rd, base.rs1, base.rs2, base.imm), text


def _insns(code: bytes):
    out, pc = [], 0
    while pc < len(code):
        low = int.from_bytes(code[pc:pc + 2], "little")
        size = 4 if low & 3 == 3 else 2
        out.append(decode(int.from_bytes(code[pc:pc + size], "little")))
        pc += size
    return out
