"""The emulator's RVV subset: vector state, vset{i}vl{i}, loads and stores of
every kind, whole-register moves, VS gating and precise per-element traps.
Programs are built with the table's encoder; expected values are computed
here from the spec's rules, not from the emulator."""

from __future__ import annotations

import random

import pytest

from copygen import emu
from copygen.emu.insn.encode import encode
from copygen.emu.hart.machine import SR_VS, SR_VS_DIRTY, SSTATUS

CODE, DATA, PAGE = 0x8020_0000, 0x1000_0000, 4096
RET = encode("jalr", rd=0, rs1=1, imm=0)
VL, VTYPE, VLENB, VSTART, VCSR, VXRM, VXSAT = 0xC20, 0xC21, 0xC22, 0x008, 0x00F, 0x00A, 0x009
T0, T1, A0, A1, A2, A3 = 5, 6, 10, 11, 12, 13
VILL = 1 << 63


def vtypei(sew: int, lmul: str, ta: int = 1, ma: int = 1) -> int:
    code = {"m1": 0, "m2": 1, "m4": 2, "m8": 3, "mf8": 5, "mf4": 6, "mf2": 7}[lmul]
    return ma << 7 | ta << 6 | (sew.bit_length() - 4) << 3 | code


def vlmax(vlen: int, sew: int, lmul: str) -> int:
    if lmul.startswith("mf"):
        return vlen // int(lmul[2:]) // sew
    return vlen * int(lmul[1:]) // sew


def machine(prog, vlen=128, pages=4, extable=None, profile=None) -> emu.Machine:
    code = b"".join(encode(a, **k).to_bytes(4, "little") for a, k in prog) + RET.to_bytes(4, "little")
    m = emu.Machine(None, profile, vlen=vlen)
    m.map(CODE, PAGE, user=False, writable=False, executable=True)
    m.write(CODE, code)
    m.map(DATA, pages * PAGE, user=False)
    m.hart.extable.update(extable or {})
    return m


def csrr(rd: int, csr: int) -> tuple:
    return ("csrrs", dict(rd=rd, rs1=0, csr=csr))


# --- state, CSRs and VS ---------------------------------------------------------------

@pytest.mark.parametrize("vlen", [128, 256, 512, 1024])
def test_vlenb_reads_vlen_over_8_and_reset_vtype_is_vill(vlen):
    m = machine([csrr(A0, VLENB), csrr(A1, VTYPE), csrr(A2, VL)], vlen)
    m.call(CODE, vector_at_entry=True)
    assert m.hart.x[A0:A2 + 1] == [vlen // 8, VILL, 0]


@pytest.mark.parametrize("vlen", [0, 64, 96, 2048, 129])
def test_unsupported_vlen_is_refused(vlen):
    with pytest.raises(emu.ConfigError, match="VLEN"):
        emu.Machine(vlen=vlen)


@pytest.mark.parametrize("prog", [
    [("vsetvli", dict(rd=T0, rs1=A2, imm=0))], [csrr(A0, VL)], [csrr(A0, VLENB)],
    [("vs1r.v", dict(vs3=8, rs1=A1))], [("vmv1r.v", dict(vd=1, vs2=2))],
])
def test_vector_use_with_vs_off_is_illegal(prog):
    m = machine(prog)
    with pytest.raises(emu.IllegalInstruction, match="VS is Off"):
        m.call(CODE, DATA, DATA, 4, vector_at_entry=False)
    m.call(CODE, DATA, DATA, 4, vector_at_entry=True)


def test_vector_instruction_leaves_vs_dirty_and_a_csr_read_does_not():
    m = machine([csrr(A0, VLENB)])
    m.call(CODE, vector_at_entry=True)
    assert m.hart.csrs[SSTATUS] & SR_VS == 1 << 9
    m = machine([("vsetvli", dict(rd=T0, rs1=A2, imm=0))])
    m.call(CODE, DATA, DATA, 4, vector_at_entry=True)
    assert m.hart.csrs[SSTATUS] & SR_VS == SR_VS_DIRTY


@pytest.mark.parametrize("csr", [VL, VTYPE, VLENB])
def test_read_only_vector_csrs_refuse_writes(csr):
    m = machine([("csrrw", dict(rd=0, rs1=A0, csr=csr))])
    with pytest.raises(emu.IllegalInstruction, match="read-only"):
        m.call(CODE, 5, vector_at_entry=True)


def test_writable_vector_csrs_keep_their_bits():
    m = machine([("csrrw", dict(rd=0, rs1=A0, csr=VSTART)), csrr(T0, VSTART),
                 ("csrrw", dict(rd=0, rs1=A1, csr=VCSR)), csrr(T1, VXRM), csrr(A2, VXSAT),
                 ("csrrw", dict(rd=0, rs1=0, csr=VSTART))], vlen=256)
    m.call(CODE, 0x1234, 0b111, vector_at_entry=True)
    assert (m.hart.x[T0], m.hart.x[T1], m.hart.x[A2]) == (0x1234 & 255, 3, 1)


# --- vset{i}vl{i} --------------------------------------------------------------------------

LMULS = ["mf8", "mf4", "mf2", "m1", "m2", "m4", "m8"]


def _supported(sew: int, lmul: str) -> bool:
    return not lmul.startswith("mf") or sew <= 64 // int(lmul[2:])


@pytest.mark.parametrize("vlen", [128, 256, 512, 1024])
def test_vsetvli_sets_vl_to_min_of_avl_and_vlmax(vlen):
    rng = random.Random(vlen)
    for sew in (8, 16, 32, 64):
        for lmul in LMULS:
            top = vlmax(vlen, sew, lmul)
            for avl in {0, 1, top - 1, top, top + 1, 2 * top, 2**64 - 1, rng.randrange(3 * top + 1)}:
                m = machine([("vsetvli", dict(rd=T0, rs1=A2, imm=vtypei(sew, lmul))), csrr(A0, VL),
                             csrr(A1, VTYPE)], vlen)
                m.call(CODE, 0, 0, avl, vector_at_entry=True)
                want = (min(avl, top), vtypei(sew, lmul)) if _supported(sew, lmul) else (0, VILL)
                assert (m.hart.x[T0], m.hart.x[A1]) == want, (sew, lmul, avl)
                assert m.hart.x[A0] == want[0]


def test_vsetivli_and_vsetvl_follow_the_same_rule():
    m = machine([("vsetivli", dict(rd=T0, uimm=31, imm=vtypei(8, "mf8"))),
                 ("vsetvl", dict(rd=T1, rs1=A2, rs2=A3)), csrr(A0, VTYPE)], 512)
    m.call(CODE, 0, 0, 1000, vtypei(16, "m4"), vector_at_entry=True)
    assert (m.hart.x[T0], m.hart.x[T1], m.hart.x[A0]) == (8, 128, vtypei(16, "m4"))


@pytest.mark.parametrize("vtype", [1 << 8, 1 << 40, VILL | 3, 4 << 3, 4, vtypei(16, "mf8"),
                                   vtypei(32, "mf4"), vtypei(64, "mf2")])
def test_unsupported_vtype_sets_vill_and_vl_zero(vtype):
    m = machine([("vsetvl", dict(rd=T0, rs1=A2, rs2=A3)), csrr(A0, VTYPE), csrr(A1, VL)])
    m.call(CODE, 0, 0, 17, vtype, vector_at_entry=True)
    assert (m.hart.x[T0], m.hart.x[A0], m.hart.x[A1]) == (0, VILL, 0)


def test_rs1_x0_asks_for_vlmax_or_keeps_vl():
    m = machine([("vsetvli", dict(rd=0, rs1=A2, imm=vtypei(8, "m1"))),
                 ("vsetvli", dict(rd=0, rs1=0, imm=vtypei(8, "m2"))), csrr(A0, VL),
                 ("vsetvli", dict(rd=0, rs1=0, imm=vtypei(64, "m1"))), csrr(A1, VL),
                 ("vsetvli", dict(rd=T0, rs1=0, imm=vtypei(16, "m8")))], 256)
    m.call(CODE, 0, 0, 20, vector_at_entry=True)
    # x0/x0 keeps vl (20), clipped to a smaller VLMAX (256/64 = 4); rd != x0 asks VLMAX
    assert (m.hart.x[A0], m.hart.x[A1], m.hart.x[T0]) == (20, 4, 128)


# --- loads and stores ---------------------------------------------------------------------------

def _fill(m: emu.Machine, seed: int, n: int = 4 * PAGE) -> bytes:
    data = random.Random(seed).randbytes(n)
    m.write(DATA, data)
    return data


def _vfill(m: emu.Machine, seed: int) -> bytes:
    m.hart.v.regs[:] = random.Random(seed).randbytes(len(m.hart.v.regs))
    return bytes(m.hart.v.regs)


@pytest.mark.parametrize("vlen", [128, 512])
@pytest.mark.parametrize("eew", [8, 16, 32, 64])
def test_unit_stride_load_then_store_moves_vl_elements(vlen, eew):
    size = eew // 8
    for lmul in ("m1", "m4", "mf2") if eew < 64 else ("m1", "m8"):
        top = vlmax(vlen, eew, lmul)
        for avl in (0, 1, top // 2 + 1, top, top + 3):
            m = machine([("vsetvli", dict(rd=T0, rs1=A2, imm=vtypei(eew, lmul))),
                         (f"vle{eew}.v", dict(vd=8, rs1=A1)), (f"vse{eew}.v", dict(vs3=8, rs1=A0))], vlen)
            data, regs = _fill(m, avl), _vfill(m, eew)
            m.call(CODE, DATA + 2 * PAGE, DATA, avl, vector_at_entry=True)
            n = min(avl, top) * size
            group = 8 * vlen // 8
            assert m.read(DATA + 2 * PAGE, 2 * PAGE) == data[:n] + data[2 * PAGE + n:4 * PAGE]
            # tail of the group undisturbed
            got = bytes(m.hart.v.regs[group:group + 8 * vlen // 8])
            assert got[:n] == data[:n] and got[n:] == regs[group + n:group + 8 * vlen // 8]
            assert m.hart.v.vstart == 0


def test_masked_load_and_store_leave_inactive_elements():
    m = machine([("vsetvli", dict(rd=T0, rs1=A2, imm=vtypei(16, "m2"))),
                 ("vle16.v", dict(vd=2, rs1=A1, vm=0)), ("vse16.v", dict(vs3=4, rs1=A0, vm=0))], 128)
    data, regs = _fill(m, 1), _vfill(m, 2)
    mask = int.from_bytes(regs[:2], "little")
    m.call(CODE, DATA + PAGE, DATA, 13, vector_at_entry=True)
    for e in range(16):
        loaded = m.hart.v.read(2, e, 16)
        stored = m.read(DATA + PAGE + 2 * e, 2)
        on = e < 13 and mask >> e & 1
        assert loaded == int.from_bytes((data if on else regs[32:])[2 * e:2 * e + 2], "little")
        assert stored == (regs[64 + 2 * e:66 + 2 * e] if on else data[PAGE + 2 * e:PAGE + 2 * e + 2])


def test_masked_load_into_v0_and_misaligned_groups_are_illegal():
    for insn in [("vle8.v", dict(vd=0, rs1=A1, vm=0)), ("vle8.v", dict(vd=3, rs1=A1)),
                 ("vle32.v", dict(vd=2, rs1=A1)), ("vl2re8.v", dict(vd=1, rs1=A1)),
                 ("vmv4r.v", dict(vd=4, vs2=2))]:
        m = machine([("vsetvli", dict(rd=T0, rs1=A2, imm=vtypei(8, "m2"))), insn])
        with pytest.raises(emu.IllegalInstruction):
            m.call(CODE, DATA, DATA, 8, vector_at_entry=True)


def test_loads_with_vill_are_illegal():
    m = machine([("vsetvl", dict(rd=T0, rs1=A2, rs2=A3)), ("vle8.v", dict(vd=8, rs1=A1))])
    with pytest.raises(emu.IllegalInstruction, match="vill"):
        m.call(CODE, DATA, DATA, 8, 1 << 9, vector_at_entry=True)


@pytest.mark.parametrize("stride", [0, 1, 3, 8, -8, 100, -1])
@pytest.mark.parametrize("eew", [8, 16, 32, 64])
def test_strided_load_and_store_use_the_stride(stride, eew):
    size, n = eew // 8, 7
    base = DATA + 2 * PAGE
    m = machine([("vsetvli", dict(rd=T0, rs1=A2, imm=vtypei(eew, "m4"))),
                 (f"vlse{eew}.v", dict(vd=4, rs1=A1, rs2=A3)), (f"vsse{eew}.v", dict(vs3=4, rs1=A0, rs2=A3))], 256)
    data = _fill(m, stride & 0xFFFF)
    m.call(CODE, DATA + 100, base, n, stride, vector_at_entry=True)
    for e in range(n):
        off = 2 * PAGE + e * stride
        assert m.hart.v.read(4, e, eew) == int.from_bytes(data[off:off + size], "little")
    if stride:  # a zero stride stores every element to one place, the last wins
        for e in range(n):
            assert m.read(DATA + 100 + e * stride, size) == data[2 * PAGE + e * stride:][:size]


@pytest.mark.parametrize("regs", [1, 2, 4, 8])
def test_whole_register_load_store_and_move_ignore_vl(regs):
    vlen = 256
    nbytes = regs * vlen // 8
    m = machine([("vsetivli", dict(rd=T0, uimm=1, imm=vtypei(8, "m1"))),
                 (f"vl{regs}re32.v", dict(vd=8, rs1=A1)), (f"vmv{regs}r.v", dict(vd=16, vs2=8)),
                 (f"vs{regs}r.v", dict(vs3=16, rs1=A0))], vlen)
    data, vregs = _fill(m, regs), _vfill(m, regs)
    m.call(CODE, DATA + 2 * PAGE, DATA, vector_at_entry=True)
    vb = vlen // 8
    assert bytes(m.hart.v.regs[8 * vb:8 * vb + nbytes]) == data[:nbytes]
    assert bytes(m.hart.v.regs[16 * vb:16 * vb + nbytes]) == data[:nbytes]
    assert m.read(DATA + 2 * PAGE, nbytes + 1) == data[:nbytes] + data[2 * PAGE + nbytes:][:1]
    assert bytes(m.hart.v.regs[(8 + regs) * vb:16 * vb]) == vregs[(8 + regs) * vb:16 * vb]


# --- vmv.v.i -----------------------------------------------------------------------------

@pytest.mark.parametrize("sew,lmul,imm", [(8, "m8", 0), (16, "m2", -3), (64, "m1", 15), (32, "mf2", -16)])
@pytest.mark.parametrize("vlen", [128, 512])
def test_vmv_v_i_fills_vl_elements_with_the_sign_extended_immediate(vlen, sew, lmul, imm):
    avl = vlmax(vlen, sew, lmul) - 1 or 1
    prog = [("vsetvli", dict(rd=T0, rs1=A2, imm=vtypei(sew, lmul))), ("vmv.v.i", dict(vd=8, imm=imm)),
            ("vsetvli", dict(rd=T0, rs1=0, imm=vtypei(sew, lmul))), (f"vse{sew}.v", dict(vs3=8, rs1=A0))]
    m = machine(prog, vlen)
    m.write(DATA, b"\xaa" * PAGE)
    m.call(CODE, DATA, 0, avl, vector_at_entry=True)
    size = sew // 8
    got = m.read(DATA, vlmax(vlen, sew, lmul) * size)
    want = (imm % (1 << sew)).to_bytes(size, "little") * avl
    assert got[:avl * size] == want


def test_vmv_v_i_needs_an_aligned_group_and_a_vtype():
    m = machine([("vsetvli", dict(rd=T0, rs1=A2, imm=vtypei(8, "m8"))), ("vmv.v.i", dict(vd=4, imm=0))])
    with pytest.raises(emu.IllegalInstruction):
        m.call(CODE, DATA, 0, 8, vector_at_entry=True)
    m = machine([("vmv.v.i", dict(vd=0, imm=0))])
    with pytest.raises(emu.IllegalInstruction):
        m.call(CODE, vector_at_entry=True)
