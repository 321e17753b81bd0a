"""The semantics are domain-independent: every instruction runs over Z3
bit-vectors (as the verifier will), and agrees with the Python-int domain
once the symbols are given the same values.  A Python `if` on a value would
make Z3 raise here."""

from __future__ import annotations

import random

import pytest

from copygen.emu.insn.encode import encode
from copygen.emu.insn.decode import decode
from copygen.emu.insn.isa import TABLE, VECTOR_NAMES
from copygen.emu.insn.semantics import SEMANTICS
from copygen.emu.insn.values import INT_OPS, MASK
from emu_randprog import random_fields

z3 = pytest.importorskip("z3")
MIN = 1 << 63


class Z3Ops:
    """A minimal Z3 instance of emu.insn.values.Ops (the verifier will own the real one)."""

    def const(self, x):
        return z3.BitVecVal(x & MASK, 64)

    add = staticmethod(lambda a, b: a + b)
    sub = staticmethod(lambda a, b: a - b)
    and_ = staticmethod(lambda a, b: a & b)
    or_ = staticmethod(lambda a, b: a | b)
    xor = staticmethod(lambda a, b: a ^ b)
    shl = staticmethod(lambda a, n: a << n)
    lshr = staticmethod(lambda a, n: z3.LShR(a, n))
    ashr = staticmethod(lambda a, n: a >> n)
    ult = staticmethod(lambda a, b: z3.ULT(a, b))
    slt = staticmethod(lambda a, b: a < b)
    eq = staticmethod(lambda a, b: a == b)
    ne = staticmethod(lambda a, b: a != b)
    not_ = staticmethod(lambda c: z3.Not(c))
    ite = staticmethod(lambda c, a, b: z3.If(c, a, b))
    mul = staticmethod(lambda a, b: a * b)

    def sext(self, a, bits):
        return a if bits == 64 else z3.SignExt(64 - bits, z3.Extract(bits - 1, 0, a))

    def zext(self, a, bits):
        return a if bits == 64 else z3.ZeroExt(64 - bits, z3.Extract(bits - 1, 0, a))

    trunc = zext

    def mulh(self, a, b):
        return z3.Extract(127, 64, z3.SignExt(64, a) * z3.SignExt(64, b))

    def mulhu(self, a, b):
        return z3.Extract(127, 64, z3.ZeroExt(64, a) * z3.ZeroExt(64, b))

    def mulhsu(self, a, b):
        return z3.Extract(127, 64, z3.SignExt(64, a) * z3.ZeroExt(64, b))

    def div(self, a, b):
        return z3.If(b == 0, self.const(-1), a / b)

    def divu(self, a, b):
        return z3.If(b == 0, self.const(-1), z3.UDiv(a, b))

    def rem(self, a, b):
        return z3.If(b == 0, a, z3.SRem(a, b))

    def remu(self, a, b):
        return z3.If(b == 0, a, z3.URem(a, b))


class Recorder:
    """State protocol over any domain: registers from `regs`, loads from `loaded`."""

    def __init__(self, ops, regs, loaded):
        self.ops, self.regs, self.loaded = ops, regs, loaded
        self.pc = 0x8020_0000
        self.effects = []

    def read_x(self, r):
        return self.ops.const(0) if r == 0 else self.regs[r]

    def write_x(self, r, v):
        if r:
            self.effects.append(("x", r, v))

    def load(self, addr, size):
        self.effects.append(("load-addr", size, addr))
        return self.ops.zext(self.loaded, 8 * size)

    def store(self, addr, size, v):
        self.effects += [("store-addr", size, addr), ("store-data", size, self.ops.zext(v, 8 * size))]

    def set_pc(self, target):
        self.effects.append(("pc", 0, target))

    def branch(self, cond, target):
        self.effects.append(("branch", target, self.ops.ite(cond, self.ops.const(1), self.ops.const(0))))

    def csr_read(self, csr):
        return self.ops.const(0x40000)

    def csr_write(self, csr, v):
        self.effects.append(("csr", csr, v))

    def trap(self, cause):
        self.effects.append(("trap", cause, self.ops.const(0)))


def _fields(rng, enc):
    for _ in range(500):
        try:
            return decode(encode(enc.asm, **random_fields(rng, enc)))
        except ValueError:
            continue
    raise AssertionError(f"no operands found for {enc.asm}")


def test_every_instruction_runs_symbolically_and_agrees_with_ints():
    rng = random.Random(1)
    zops = Z3Ops()
    sym_regs = [z3.BitVec(f"x{r}", 64) for r in range(32)]
    loaded_sym = z3.BitVec("mem", 64)
    for enc in TABLE:
        if enc.name in VECTOR_NAMES:  # their own state protocol: test_emu_vector_symbolic.py
            continue
        insn = _fields(rng, enc)
        sym = Recorder(zops, sym_regs, loaded_sym)
        SEMANTICS[insn.name](insn, zops, sym)
        for _ in range(8):
            vals = [rng.choice([0, 1, MASK, MIN, 0x80000000, rng.getrandbits(64)]) for _ in range(32)]
            mem = rng.getrandbits(64)
            conc = Recorder(INT_OPS, vals, mem)
            SEMANTICS[insn.name](insn, INT_OPS, conc)
            subst = [(sym_regs[r], z3.BitVecVal(vals[r], 64)) for r in range(32)] + \
                    [(loaded_sym, z3.BitVecVal(mem, 64))]
            assert len(sym.effects) == len(conc.effects), enc.asm
            for (kind, key, sv), (ckind, ckey, cv) in zip(sym.effects, conc.effects):
                got = z3.simplify(z3.substitute(sv, *subst)).as_long()
                assert (kind, key) == (ckind, ckey) and got == int(cv), (enc.asm, insn, kind)
