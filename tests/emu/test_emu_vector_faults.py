"""Precise per-element vector traps: a fault on element i keeps the elements
below i, sets vstart = i and takes the scalar fault path (__ex_table fixup or
oops); execution restarts at vstart; fault-only-first loads trim vl instead
of trapping past element 0.  Also: the fast path equals the reference step on
random vector programs."""

from __future__ import annotations

import random

import pytest

from copygen import emu
from test_emu_vector import (A0, A1, A2, CODE, DATA, PAGE, T0, VL, VSTART, csrr, machine,
                             vtypei)

LOAD_AT, STORE_AT = CODE + 4, CODE + 8     # the vector access of the programs below


def _copy_prog(eew: int = 8, lmul: str = "m8") -> list:
    return [("vsetvli", dict(rd=T0, rs1=A2, imm=vtypei(eew, lmul))),
            (f"vle{eew}.v", dict(vd=8, rs1=A1)), (f"vse{eew}.v", dict(vs3=8, rs1=A0))]


@pytest.mark.parametrize("vlen", [128, 256, 512, 1024])
@pytest.mark.parametrize("eew", [8, 16, 32, 64])
def test_load_fault_keeps_lower_elements_and_sets_vstart(vlen, eew):
    m = machine(_copy_prog(eew), vlen, pages=1)
    size, k = eew // 8, 5
    src = DATA + PAGE - k * size                # element k is the first outside the mapped page
    m.write(DATA, bytes(range(256)) * 16)
    before = bytes(m.hart.v.regs)
    with pytest.raises(emu.Oops) as e:
        m.call(CODE, DATA, src, 64, vector_at_entry=True)
    assert (e.value.pc, e.value.addr) == (LOAD_AT, DATA + PAGE)
    assert m.hart.v.vstart == k
    vb = vlen // 8
    got = bytes(m.hart.v.regs[8 * vb:16 * vb])
    assert got[:k * size] == m.read(src, k * size) and got[k * size:] == before[8 * vb + k * size:16 * vb]


def test_store_fault_keeps_lower_elements_and_resumes_at_the_fixup():
    fixup = CODE + 12                            # `csrr a0, vstart` then ret
    m = machine(_copy_prog() + [csrr(A0, VSTART)], 256, pages=2, extable={STORE_AT: fixup})
    m.unmap(DATA + PAGE, PAGE)
    m.write(DATA, bytes(range(200)))
    dst = DATA + PAGE - 37
    r = m.call(CODE, dst, DATA, 100, vector_at_entry=True)
    assert r.faults == (emu.Fault(STORE_AT, DATA + PAGE, "store: unmapped"),)
    assert r.ret == 37 and m.hart.v.vstart == 37
    assert m.read(dst, 37) == bytes(range(37))


def test_user_page_without_sum_faults_on_the_first_element():
    m = machine(_copy_prog(), 128, pages=1)
    m.map(DATA, PAGE, user=True)
    with pytest.raises(emu.Oops, match="SUM"):
        m.call(CODE, DATA + 512, DATA, 16, vector_at_entry=True)
    assert m.hart.v.vstart == 0
    r = m.call(CODE, DATA + 512, DATA, 16, vector_at_entry=True, sum_at_entry=True)
    assert r.faults == () and m.hart.v.vstart == 0


def test_execution_restarts_at_vstart():
    """After a load fault at element k, the same load with the page mapped
    again loads only elements k.. (those below keep their first values)."""
    m = machine(_copy_prog(), 128, pages=2)
    m.unmap(DATA + PAGE, PAGE)
    m.write(DATA, b"\x11" * PAGE)
    with pytest.raises(emu.Oops):
        m.call(CODE, DATA, DATA + PAGE - 6, 50, vector_at_entry=True)
    m.map(DATA + PAGE, PAGE, user=False)
    m.write(DATA + PAGE - 6, b"\x22" * 6 + b"\x33" * 100)
    hart = m.hart
    hart.pc = LOAD_AT                           # re-run the load alone, vstart kept
    hart.x[1] = hart.pc + 4
    hart.run_reference(LOAD_AT + 4, 10)
    assert m.hart.v.register(8)[:16] == b"\x11" * 6 + b"\x33" * 10
    assert m.hart.v.vstart == 0


def test_csr_written_vstart_skips_lower_elements():
    m = machine([("vsetvli", dict(rd=T0, rs1=A2, imm=vtypei(8, "m1"))),
                 ("csrrw", dict(rd=0, rs1=A0, csr=VSTART)), ("vle8.v", dict(vd=1, rs1=A1)),
                 csrr(A0, VSTART)])
    m.write(DATA, bytes(range(100, 116)))
    m.hart.v.regs[16:32] = bytes(16)
    m.call(CODE, 3, DATA, 16, vector_at_entry=True)
    assert m.hart.v.register(1) == bytes(3) + bytes(range(103, 116)) and m.hart.x[A0] == 0


@pytest.mark.parametrize("vlen", [128, 1024])
@pytest.mark.parametrize("eew", [8, 16, 32, 64])
def test_fault_only_first_trims_vl_past_element_zero(vlen, eew):
    size, k = eew // 8, 3
    m = machine([("vsetvli", dict(rd=T0, rs1=A2, imm=vtypei(eew, "m2"))),
                 (f"vle{eew}ff.v", dict(vd=8, rs1=A1)), csrr(A0, VL)], vlen, pages=1)
    m.write(DATA, bytes(range(256)) * 16)
    r = m.call(CODE, 0, DATA + PAGE - k * size, 2 * vlen // eew, vector_at_entry=True)
    assert r.faults == () and r.ret == k and m.hart.v.vl == k and m.hart.v.vstart == 0
    group = m.hart.v.regs[8 * vlen // 8:]
    assert group[:k * size] == m.read(DATA + PAGE - k * size, k * size)
    with pytest.raises(emu.Oops):               # element 0 itself faults: a trap
        m.call(CODE, 0, DATA + PAGE, 4, vector_at_entry=True)
    assert m.hart.v.vstart == 0


def test_fault_only_first_skips_masked_off_elements():
    m = machine([("vsetvli", dict(rd=T0, rs1=A2, imm=vtypei(8, "m1"))),
                 ("vle8ff.v", dict(vd=8, rs1=A1, vm=0)), csrr(A0, VL)], 128, pages=1)
    m.hart.v.regs[0:2] = (0b1100_1111_1111_1111).to_bytes(2, "little")   # elements 12, 13 off
    r = m.call(CODE, 0, DATA + PAGE - 12, 16, vector_at_entry=True)
    assert r.ret == 14


# --- fast path = reference -------------------------------------------------------------------

def _random_vector_program(rng: random.Random) -> list:
    """Straight-line vset/load/store/move code with legal operands, bases near
    the unmapped page at DATA + 2 pages, and scalar pointer steps."""
    prog, sew, lmul = [], 8, 0
    for _ in range(rng.randrange(4, 24)):
        k = rng.random()
        if k < 0.25 or not prog:
            sew, lmul = rng.choice([8, 16, 32, 64]), rng.choice([0, 1, 2, 3])
            prog.append(("vsetvli", dict(rd=T0, rs1=rng.choice([A2, 13]), imm=(sew.bit_length() - 4) << 3 | lmul)))
        elif k < 0.4:
            prog.append(("addi", dict(rd=rng.choice([A0, A1]), rs1=rng.choice([A0, A1]), imm=rng.randrange(-64, 64))))
        else:
            prog.append(_random_access(rng, sew, lmul))
    return prog


def _random_access(rng: random.Random, sew: int, lmul: int) -> tuple:
    legal = [w for w in (8, 16, 32, 64) if -3 <= (w.bit_length() - sew.bit_length()) + lmul <= 3]
    eew, vd, vm = rng.choice(legal), rng.choice([8, 16, 24]), rng.choice([0, 1, 1])
    base = rng.choice([A0, A1])
    kind = rng.choice(["vle", "vse", "vlse", "vsse", "ff", "whole", "vmv"])
    if kind == "ff":
        return f"vle{eew}ff.v", dict(vd=vd, rs1=base, vm=vm)
    if kind in ("vle", "vse"):
        return f"{kind}{eew}.v", {("vd" if kind == "vle" else "vs3"): vd, "rs1": base, "vm": vm}
    if kind in ("vlse", "vsse"):
        return f"{kind}{eew}.v", {("vd" if kind == "vlse" else "vs3"): vd, "rs1": base, "rs2": 14, "vm": vm}
    n = rng.choice([1, 2, 4, 8])
    if kind == "vmv":
        return f"vmv{n}r.v", dict(vd=vd, vs2=rng.choice([0, 8, 16, 24]))
    return rng.choice([(f"vl{n}re{eew}.v", dict(vd=vd, rs1=base)), (f"vs{n}r.v", dict(vs3=vd, rs1=base))])


def _state(m: emu.Machine, r: emu.CallResult) -> tuple:
    v = m.hart.v
    return (r, tuple(m.hart.x), bytes(v.regs), v.vl, v.vtype, v.vstart, m.read(DATA, 2 * PAGE))


@pytest.mark.parametrize("seed", range(30))
def test_fast_path_equals_reference_on_vector_programs(seed):
    rng = random.Random(seed)
    prog = _random_vector_program(rng)
    # a vector profile times vector code at its own VLEN (x60: 256, x280: 512)
    profile = (None, "x60", "x280")[seed % 3]
    vlen = {"x60": 256, "x280": 512}.get(profile, (128, 256, 512, 1024)[seed % 4])
    extable = {CODE + 4 * i: CODE + 4 * (i + 1) for i in range(len(prog))}
    args = (DATA + PAGE + rng.randrange(PAGE), DATA + rng.randrange(2 * PAGE), rng.randrange(300),
            rng.randrange(60), rng.choice([1, 2, 8, -8, 64]))
    states = []
    for fast in (False, True):
        m = machine(prog, vlen, pages=2, extable=extable, profile=profile)
        m.write(DATA, random.Random(seed).randbytes(2 * PAGE))
        m.hart.v.regs[:] = random.Random(~seed).randbytes(len(m.hart.v.regs))
        r = m.call(CODE, *args, vector_at_entry=True, fast=fast, step_limit=10_000)
        states.append(_state(m, r))
    assert states[0] == states[1]
    assert any(name.startswith("v") and name != "vsetvli" for name, _ in prog)
