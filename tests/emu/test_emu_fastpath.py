"""The block translator must equal the reference step: registers, memory,
retired instructions, cycles, stalls and faults, on random programs."""

from __future__ import annotations

import random

import pytest

from copygen import emu
from copygen.emu.insn.encode import encode
from emu_randprog import CODE, KBUF, UBUF, assemble, random_program


def _machine(code: bytes, extable: dict[int, int], profile: str | None, seed: int) -> emu.Machine:
    m = emu.Machine(None, profile)
    m.hart.extable.update(extable)
    m.map(CODE, 4096 * ((len(code) + 4095) // 4096), user=False, writable=False, executable=True)
    m.write(CODE, code)
    m.map(KBUF, 8192, user=False)
    m.map(UBUF, 4096, user=True)
    m.map(UBUF + 4096, 4096, user=True, writable=False)
    rnd = random.Random(seed)
    m.write(KBUF, rnd.randbytes(8192))
    m.write(UBUF, rnd.randbytes(8192))
    return m


def _outcome(m: emu.Machine, r: emu.CallResult) -> tuple:
    cost = m.cost
    return (r, tuple(m.hart.x), m.read(KBUF, 8192), m.read(UBUF, 8192),
            (cost.stall_cycles, cost.issue_cycles, cost.states[cost.state]) if cost else None)


@pytest.mark.parametrize("seed", range(60))
def test_random_programs_equal_reference(seed):
    rng = random.Random(seed)
    items = random_program(rng, body=rng.randrange(4, 40))
    code, extable = assemble(items)
    profile = (None, "u74", "c910")[seed % 3]
    sum_at_entry = bool(seed & 4)
    results = []
    for fast in (False, True):
        m = _machine(code, extable, profile, seed)
        r = m.call(CODE, step_limit=100_000, sum_at_entry=sum_at_entry, fast=fast)
        results.append(_outcome(m, r))
    assert results[0] == results[1]


@pytest.mark.parametrize("seed", range(40))
def test_runs_of_accesses_equal_reference(seed):
    """Runs of loads or stores through one base (checked once by the
    translator): misaligned bases, page and line crossings, faults inside."""
    rng = random.Random(1000 + seed)
    code, extable = assemble(random_program(rng, body=rng.randrange(4, 30), runs=True))
    profile = ("u74", None, "c910")[seed % 3]
    results = []
    for fast in (False, True):
        m = _machine(code, extable, profile, seed)
        r = m.call(CODE, step_limit=100_000, sum_at_entry=bool(seed & 2), fast=fast)
        results.append(_outcome(m, r))
    assert results[0] == results[1]


def test_step_limit_inside_a_translated_loop():
    items = random_program(random.Random(7), body=5, iterations=2000)
    code, extable = assemble(items)
    for fast in (False, True):
        m = _machine(code, extable, "u74", 7)
        with pytest.raises(emu.StepLimit):
            m.call(CODE, step_limit=500, fast=fast)


def test_translated_code_is_dropped_when_code_changes():
    def program(value: int) -> bytes:  # li a0, value; ret
        return (encode("addi", rd=10, rs1=0, imm=value).to_bytes(4, "little")
                + encode("jalr", rd=0, rs1=1, imm=0).to_bytes(4, "little"))

    m = _machine(program(5), {}, "u74", 0)
    assert m.call(CODE).ret == 5
    m.write(CODE, program(7))
    assert m.call(CODE).ret == 7


def test_remapping_data_pages_keeps_translations_but_code_pages_drop_them():
    li5 = (encode("addi", rd=10, rs1=0, imm=5).to_bytes(4, "little")
           + encode("jalr", rd=0, rs1=1, imm=0).to_bytes(4, "little"))
    m = _machine(li5, {}, None, 0)
    assert m.call(CODE).ret == 5
    blocks = m._fast().blocks
    assert blocks
    m.map(KBUF, 8192, user=False, readable=False, writable=False)   # data pages only
    m.map(KBUF, 8192, user=False)
    m.unmap(UBUF, 4096)
    assert m.call(CODE).ret == 5 and m._fast().blocks is blocks and blocks
    m.map(CODE, 4096, user=False, writable=False, executable=False)  # code no longer executable
    with pytest.raises(emu.Oops, match="fetch"):
        m.call(CODE)
    m.map(CODE, 4096, user=False, writable=False, executable=True)
    assert m.call(CODE).ret == 5
