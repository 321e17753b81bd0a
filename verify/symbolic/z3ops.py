"""The Z3 instance of emu.insn.values.Ops: 64-bit bit-vectors, Bool conditions.

Role: let emu.insn.semantics run symbolically, unchanged; small helpers over
Z3 terms.  May import z3 and
emu.insn.values only.
"""
from __future__ import annotations

import z3

from copygen.emu.insn.values import XLEN

BV = z3.BitVecSort(XLEN)


def bv(x: int) -> z3.BitVecRef:
    return z3.BitVecVal(x & ((1 << XLEN) - 1), XLEN)


class Z3Ops:
    """Values are BitVecRef of width 64; conditions are BoolRef."""

    __slots__ = ()

    def const(self, x):
        return bv(x)

    def add(self, a, b):
        return a + b

    def sub(self, a, b):
        return a - b

    def and_(self, a, b):
        return a & b

    def or_(self, a, b):
        return a | b

    def xor(self, a, b):
        return a ^ b

    def shl(self, a, amount):
        return a << amount

    def lshr(self, a, amount):
        return z3.LShR(a, amount)

    def ashr(self, a, amount):
        return a >> amount

    def ult(self, a, b):
        return z3.ULT(a, b)

    def slt(self, a, b):
        return a < b

    def eq(self, a, b):
        return a == b

    def ne(self, a, b):
        return a != b

    def not_(self, cond):
        return z3.Not(cond)

    def both(self, a, b):
        return z3.And(a, b)

    def ite(self, cond, a, b):
        return z3.If(cond, a, b)

    def sext(self, a, bits):
        return z3.SignExt(XLEN - bits, z3.Extract(bits - 1, 0, a))

    def zext(self, a, bits):
        return z3.ZeroExt(XLEN - bits, z3.Extract(bits - 1, 0, a))

    def trunc(self, a, bits):
        return self.zext(a, bits)

    def mul(self, a, b):
        return a * b

    def _wide(self, a, b, sa, sb):
        ext = (lambda v, s: z3.SignExt(XLEN, v) if s else z3.ZeroExt(XLEN, v))
        return z3.Extract(2 * XLEN - 1, XLEN, ext(a, sa) * ext(b, sb))

    def mulh(self, a, b):
        return self._wide(a, b, True, True)

    def mulhu(self, a, b):
        return self._wide(a, b, False, False)

    def mulhsu(self, a, b):
        return self._wide(a, b, True, False)

    def div(self, a, b):
        # Z3's bvsdiv gives -1 / 1 for x/0 depending on sign; RISC-V wants all ones
        minint = bv(1 << (XLEN - 1))
        return z3.If(b == 0, bv(-1), z3.If(z3.And(a == minint, b == bv(-1)), minint, a / b))

    def divu(self, a, b):
        return z3.If(b == 0, bv(-1), z3.UDiv(a, b))

    def rem(self, a, b):
        minint = bv(1 << (XLEN - 1))
        return z3.If(b == 0, a, z3.If(z3.And(a == minint, b == bv(-1)), bv(0), z3.SRem(a, b)))

    def remu(self, a, b):
        return z3.If(b == 0, a, z3.URem(a, b))


Z3_OPS = Z3Ops()


# expression id -> (expression, its symbols, their ids); the expression is
# kept so its id is not reused while the entry lives.  A proof asks about
# the same facts (preconditions, invariants, path conditions) over and over.
_VARS: dict = {}
_VARS_MAX = 100_000


def _entry(e) -> tuple:
    hit = _VARS.get(e.get_id())
    if hit is not None and hit[0].eq(e):
        return hit
    if len(_VARS) >= _VARS_MAX:
        _VARS.clear()
    out = tuple(_symbols(e))
    hit = _VARS[e.get_id()] = (e, out, frozenset(v.get_id() for v in out))
    return hit


def z3_vars(e) -> tuple:
    """The uninterpreted constants (symbols) that expression e mentions."""
    return _entry(e)[1]


def _symbols(e) -> list:
    out, todo, seen = [], [e], set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.append(t)
        todo += t.children()
    return out


def mentions(e, *names) -> bool:
    """e mentions one of the symbols `names` (of e's context)."""
    ids = _entry(e)[2]
    return any(v.get_id() in ids for v in names)

