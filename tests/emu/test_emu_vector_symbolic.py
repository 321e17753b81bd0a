"""The vector semantics are domain-independent too: every vector row runs over
Z3 (vl, vstart, addresses, element data and the loaded value symbolic; VLEN
and vtype concrete, as emu.insn.vsemantics says) and agrees with the Python-int
domain once the symbols are given the same values."""

from __future__ import annotations

import dataclasses
import random

import pytest

from copygen.emu.insn.decode import decode
from copygen.emu.insn.encode import encode
from copygen.emu.insn.isa import TABLE, VECTOR_NAMES
from copygen.emu.insn.semantics import SEMANTICS
from copygen.emu.insn.values import INT_OPS, MASK
from copygen.emu.insn.vsemantics import VL, VSTART
from emu_randprog import random_fields
from test_emu_symbolic import Recorder, Z3Ops

z3 = pytest.importorskip("z3")
VTYPE = 0b001_001          # e16, m2: every EEW's group fits v8 (EMUL 1/2..8)


class Illegal(Exception):
    pass


class VRecorder(Recorder):
    """Recorder plus the vector state protocol over either domain."""

    vlen = 128

    def __init__(self, ops, regs, loaded, csrs, velem):
        super().__init__(ops, regs, loaded)
        self.csrs, self.velem = csrs, velem

    def csr_read(self, csr):
        return self.csrs[csr]

    def vector_config(self):
        return VTYPE

    def set_vector_config(self, vl, vtype):
        self.effects.append(("vcfg", vtype, vl))

    def read_v(self, reg, e, eew):
        return self.velem(reg, e, eew)

    def write_v(self, reg, e, eew, v):
        self.effects.append(("v", (reg, e, eew), v))

    def elements(self, vstart, end, count):
        return range(count)

    def _on(self, c):
        return self.ops.ite(c, self.ops.const(1), self.ops.const(0))

    def load_element(self, e, active, addr, size):
        self.effects += [("vload", (e, size), addr), ("vload-on", e, self._on(active))]
        return self.ops.zext(self.loaded, 8 * size)

    def store_element(self, e, active, addr, size, v):
        self.effects += [("vstore", (e, size), addr), ("vstore-on", e, self._on(active)),
                         ("vstore-data", e, self.ops.zext(v, 8 * size))]

    def accessible(self, active, addr, size):
        o = self.ops
        return o.ne(o.and_(addr, o.const(0x30)), o.const(0x30))

    def vector_done(self):
        self.effects.append(("done", 0, self.ops.const(0)))

    def concrete(self, v, what):
        return VTYPE

    def illegal(self, why):
        raise Illegal(why)


def _element_value(reg, e, eew):
    return random.Random(reg * 100_003 + e * 131 + eew).getrandbits(eew)


def _insn(rng, enc):
    for _ in range(500):
        try:
            insn = decode(encode(enc.asm, **random_fields(rng, enc)))
        except ValueError:
            continue
        if enc.name.startswith("vset"):
            return insn
        return dataclasses.replace(insn, rd=8, rs2=16 if enc.name.startswith("vmv") else insn.rs2)
    raise AssertionError(f"no operands found for {enc.asm}")


def _run(insn, ops, rec):
    try:
        SEMANTICS[insn.name](insn, ops, rec)
    except Illegal as e:
        rec.effects.append(("illegal", str(e), ops.const(0)))


FAMILIES = ("vsetvli vsetivli vsetvl vle16.v vle32ff.v vse8.v vlse64.v vsse16.v vl2re32.v "
            "vs1r.v vmv2r.v").split()


def test_one_row_per_vector_family_runs_symbolically_and_agrees_with_ints():
    _check([e for e in TABLE if e.name in FAMILIES])


@pytest.mark.slow
def test_every_vector_row_runs_symbolically_and_agrees_with_ints():
    _check([e for e in TABLE if e.name in VECTOR_NAMES])


def _check(rows) -> None:
    assert rows
    rng = random.Random(7)
    zops = Z3Ops()
    zops.both = lambda a, b: z3.And(a, b)
    sym_regs = [z3.BitVec(f"x{r}", 64) for r in range(32)]
    loaded, vl, vstart = z3.BitVec("mem", 64), z3.BitVec("vl", 64), z3.BitVec("vstart", 64)

    for enc in rows:
        insn = _insn(rng, enc)
        elems = {}

        def sym_elem(reg, e, eew):
            key = (reg, e, eew)
            elems.setdefault(key, z3.BitVec(f"v{reg}_{e}_{eew}", eew))
            return z3.ZeroExt(64 - eew, elems[key])

        sym = VRecorder(zops, sym_regs, loaded, {VL: vl, VSTART: vstart}, sym_elem)
        _run(insn, zops, sym)
        for _ in range(2):
            vals = [rng.choice([0, 1, 3, MASK, 0x1000, rng.getrandbits(64)]) for _ in range(32)]
            mem, c_vl, c_vstart = rng.getrandbits(64), rng.randrange(20), rng.choice([0, 0, 1, 5])
            conc = VRecorder(INT_OPS, vals, mem, {VL: c_vl, VSTART: c_vstart}, _element_value)
            _run(insn, INT_OPS, conc)
            subst = [(sym_regs[r], z3.BitVecVal(vals[r], 64)) for r in range(32)]
            subst += [(loaded, z3.BitVecVal(mem, 64)), (vl, z3.BitVecVal(c_vl, 64)),
                      (vstart, z3.BitVecVal(c_vstart, 64))]
            subst += [(s, z3.BitVecVal(_element_value(*k), k[2])) for k, s in elems.items()]
            assert len(sym.effects) == len(conc.effects), enc.asm
            for (kind, key, sv), (ckind, ckey, cv) in zip(sym.effects, conc.effects):
                got = z3.simplify(z3.substitute(sv, *subst)).as_long()
                assert (kind, key) == (ckind, ckey) and got == int(cv), (enc.asm, insn, kind, key)
        assert any(k in ("vload", "vstore", "v", "vcfg") for k, _, _ in sym.effects), enc.asm
