"""Instruction families against expected values, and against Unicorn as an
independent oracle on random operands (single instructions)."""

from __future__ import annotations

import random

import pytest

from copygen import emu
from copygen.emu.insn.encode import encode
from copygen.emu.insn.isa import TABLE
from copygen.emu.insn.values import INT_OPS, MASK

M = MASK
MIN = 1 << 63
CODE = 0x8000_0000
DATA = 0x7000_0000


def run_insn(asm: str, *, a: int = 0, b: int = 0, imm: int = 0, rd: int = 7, fast: bool = False,
             data: bytes = b"") -> emu.Machine:
    """Execute one instruction (rs1=x5=a, rs2=x6=b) then `ret`; returns the machine."""
    m = emu.Machine(None, None)
    m.map(CODE, 4096, user=False, writable=False, executable=True)
    m.map(DATA, 4096, user=False)
    m.write(DATA, data.ljust(64, b"\0"))
    fields = dict(rd=rd, rs1=5, rs2=6, imm=imm)
    enc = next(e for e in TABLE if e.asm == asm)
    used = {k for k, _ in enc.operands}
    raw = encode(asm, **{k: v for k, v in fields.items() if k in used})
    m.write(CODE, raw.to_bytes(enc.length, "little") + (0x00008067).to_bytes(4, "little"))
    m.hart.x[5], m.hart.x[6] = a & M, b & M
    hart = m.hart
    hart.pc, hart.x[1], hart.x[2] = CODE, emu.RETURN_SENTINEL, emu.STACK_TOP
    (m._fast().run if fast else hart.run_reference)(emu.RETURN_SENTINEL, 10)
    return m


def alu(asm: str, a: int, b: int = 0, imm: int = 0) -> int:
    results = {run_insn(asm, a=a, b=b, imm=imm, fast=f).hart.x[7] for f in (False, True)}
    assert len(results) == 1, f"fast path and reference differ on {asm}"
    return results.pop()


@pytest.mark.parametrize("asm, a, b, want", [
    ("add", M, 1, 0), ("sub", 0, 1, M), ("sll", 1, 65, 2), ("srl", MIN, 63, 1), ("sra", MIN, 63, M),
    ("slt", M, 0, 1), ("sltu", M, 0, 0), ("xor", 0xF0, 0xFF, 0x0F), ("or", 1, 2, 3), ("and", 6, 3, 2),
    ("mul", M, M, 1), ("mulh", M, M, 0), ("mulhu", M, M, M - 1), ("mulhsu", M, M, M),
    ("mulhsu", 2, M, 1), ("div", MIN, M, MIN), ("div", 7, 0, M), ("div", -7, 2, -3 & M),
    ("rem", -7, 2, -1 & M), ("rem", MIN, M, 0), ("rem", 7, 0, 7), ("divu", 7, 0, M), ("remu", 7, 0, 7),
    ("addw", 0x7FFFFFFF, 1, 0xFFFFFFFF80000000), ("subw", 0, 1, M), ("sllw", 1, 31, 0xFFFFFFFF80000000),
    ("sllw", 1, 32, 1), ("srlw", 0xFFFFFFFF80000000, 31, 1), ("sraw", 0x80000000, 31, M),
    ("mulw", 0x10000, 0x10000, 0), ("mulw", 0x7FFFFFFF, 2, M - 1),
    ("divw", 0x80000000, M, 0xFFFFFFFF80000000), ("divw", 5, 0, M), ("divuw", 5, 0, M),
    ("divuw", 0xFFFFFFFF, 1, M), ("remw", 0x80000000, M, 0), ("remw", 5, 0, 5),
    ("remuw", 0xFFFFFFFF, 0, M), ("remuw", 0x1_0000_0005, 3, 2),
])
def test_register_register(asm, a, b, want):
    assert alu(asm, a, b) == want


@pytest.mark.parametrize("asm, a, imm, want", [
    ("addi", 1, -2, M), ("slti", M, 0, 1), ("sltiu", 5, -1, 1), ("xori", 0, -1, M), ("ori", 0, -2048, -2048 & M),
    ("andi", M, 0x7FF, 0x7FF), ("slli", 1, 63, MIN), ("srli", M, 60, 15), ("srai", MIN, 60, -8 & M),
    ("addiw", 0x7FFFFFFF, 1, 0xFFFFFFFF80000000), ("slliw", 3, 31, 0xFFFFFFFF80000000),
    ("srliw", 0xFFFFFFFF, 28, 15), ("sraiw", 0x80000000, 4, 0xFFFFFFFFF8000000),
    ("lui", 0, -4096, -4096 & M), ("lui", 0, 0x7FFFF000, 0x7FFFF000),
])
def test_register_immediate(asm, a, imm, want):
    assert alu(asm, a, imm=imm) == want


def test_auipc_and_jumps_link():
    m = run_insn("auipc", imm=0x1000)
    assert m.hart.x[7] == CODE + 0x1000


@pytest.mark.parametrize("asm, want", [
    ("lb", 0xFFFFFFFFFFFFFF81), ("lbu", 0x81), ("lh", 0xFFFFFFFFFFFF8281), ("lhu", 0x8281),
    ("lw", 0xFFFFFFFF84838281), ("lwu", 0x84838281), ("ld", 0x8887868584838281),
])
def test_loads_extend(asm, want):
    data = bytes(range(0x81, 0x89))
    for fast in (False, True):
        assert run_insn(asm, a=DATA, imm=0, data=data, fast=fast).hart.x[7] == want


@pytest.mark.parametrize("asm, size", [("sb", 1), ("sh", 2), ("sw", 4), ("sd", 8)])
def test_stores_truncate(asm, size):
    for fast in (False, True):
        m = run_insn(asm, a=DATA, b=0x1122334455667788, imm=8, fast=fast)
        assert m.read(DATA + 8, 9) == (0x1122334455667788).to_bytes(8, "little")[:size].ljust(9, b"\0")


def test_x0_stays_zero():
    for fast in (False, True):
        m = run_insn("addi", a=5, imm=3, rd=0, fast=fast)
        assert m.hart.x[0] == 0


def test_int_ops_division_corners():
    assert INT_OPS.div(MIN, M) == MIN and INT_OPS.rem(MIN, M) == 0
    assert INT_OPS.divu(1, 0) == M and INT_OPS.remu(9, 0) == 9
    assert INT_OPS.sext(0x80, 8) == M - 0x7F and INT_OPS.zext(M, 32) == 0xFFFFFFFF


RANDOM_OPS = ("add sub sll slt sltu xor srl sra or and mul mulh mulhu mulhsu div divu rem remu addw subw "
              "sllw srlw sraw mulw divw divuw remw remuw").split()
EDGES = [0, 1, 2, M, M - 1, MIN, MIN - 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFF80000000, 31, 32, 63, 64]


def test_against_unicorn_random_operands():
    unicorn = pytest.importorskip("unicorn")
    from unicorn import riscv_const as rc

    uc = unicorn.Uc(unicorn.UC_ARCH_RISCV, unicorn.UC_MODE_RISCV64)
    uc.mem_map(CODE, 4096)
    rng = random.Random(11)
    for asm in RANDOM_OPS:
        raw = encode(asm, rd=7, rs1=5, rs2=6)
        uc.mem_write(CODE, raw.to_bytes(4, "little"))
        for _ in range(25):
            a = rng.choice(EDGES) if rng.random() < 0.4 else rng.getrandbits(64)
            b = rng.choice(EDGES) if rng.random() < 0.4 else rng.getrandbits(64)
            uc.reg_write(rc.UC_RISCV_REG_T0, a)
            uc.reg_write(rc.UC_RISCV_REG_T1, b)
            uc.emu_start(CODE, CODE + 4, count=1)
            want = uc.reg_read(rc.UC_RISCV_REG_T2)
            m = run_insn(asm, a=a, b=b)
            assert m.hart.x[7] == want, (asm, hex(a), hex(b))
