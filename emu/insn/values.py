"""The value-operations interface the instruction semantics is written against.

Role: `Ops` (a Protocol) lists every operation `emu.insn.semantics` may apply to a
register value; `IntOps` is the concrete instance over Python ints (unsigned,
masked to 64 bits).  A Z3 instance (64-bit bit-vectors, `BoolRef` for
conditions) implements the same Protocol for the verifier, and
`emu.fast.translate` has a third one that prints Python source.

Conventions every instance follows:
* Values are XLEN = 64 bits wide.  Narrow quantities (a loaded byte, a 32-bit
  W result) live in the low bits of a 64-bit value; `sext`/`zext` widen the
  low `bits` bits back to 64.
* Comparisons (`ult`, `slt`, `eq`, `ne`) return a condition, not a value:
  use it with `not_`, `ite` or the machine's `branch`; never with Python `if`.
* Shifts take an amount already reduced below 64 (the semantics masks it).
* Division follows RISC-V: x/0 = all ones, x%0 = x, signed overflow
  (-2**63 / -1) = -2**63 with remainder 0.  The W variants are expressed in
  `emu.insn.semantics` through these 64-bit operations plus `sext`/`zext`.
Imports: nothing from the project.
"""

from __future__ import annotations

from typing import Any, Protocol

XLEN = 64
MASK = (1 << XLEN) - 1
SIGN = 1 << (XLEN - 1)


class Ops(Protocol):
    """Operations on XLEN-bit values (`V`) and conditions (`C`)."""

    def const(self, x: int) -> Any: ...
    def add(self, a: Any, b: Any) -> Any: ...
    def sub(self, a: Any, b: Any) -> Any: ...
    def and_(self, a: Any, b: Any) -> Any: ...
    def or_(self, a: Any, b: Any) -> Any: ...
    def xor(self, a: Any, b: Any) -> Any: ...
    def shl(self, a: Any, amount: Any) -> Any: ...
    def lshr(self, a: Any, amount: Any) -> Any: ...
    def ashr(self, a: Any, amount: Any) -> Any: ...
    def ult(self, a: Any, b: Any) -> Any: ...
    def slt(self, a: Any, b: Any) -> Any: ...
    def eq(self, a: Any, b: Any) -> Any: ...
    def ne(self, a: Any, b: Any) -> Any: ...
    def not_(self, cond: Any) -> Any: ...
    def both(self, a: Any, b: Any) -> Any: ...          # conjunction of two conditions
    def ite(self, cond: Any, a: Any, b: Any) -> Any: ...
    def sext(self, a: Any, bits: int) -> Any: ...
    def zext(self, a: Any, bits: int) -> Any: ...
    def trunc(self, a: Any, bits: int) -> Any: ...
    def mul(self, a: Any, b: Any) -> Any: ...
    def mulh(self, a: Any, b: Any) -> Any: ...
    def mulhu(self, a: Any, b: Any) -> Any: ...
    def mulhsu(self, a: Any, b: Any) -> Any: ...
    def div(self, a: Any, b: Any) -> Any: ...
    def divu(self, a: Any, b: Any) -> Any: ...
    def rem(self, a: Any, b: Any) -> Any: ...
    def remu(self, a: Any, b: Any) -> Any: ...


def signed(x: int) -> int:
    """Two's-complement reading of a 64-bit unsigned int."""
    return x - (1 << XLEN) if x & SIGN else x


class IntOps:
    """Concrete values: Python ints in [0, 2**64).  Conditions are bools."""

    __slots__ = ()

    def const(self, x: int) -> int:
        return x & MASK

    def add(self, a: int, b: int) -> int:
        return (a + b) & MASK

    def sub(self, a: int, b: int) -> int:
        return (a - b) & MASK

    def and_(self, a: int, b: int) -> int:
        return a & b

    def or_(self, a: int, b: int) -> int:
        return a | b

    def xor(self, a: int, b: int) -> int:
        return a ^ b

    def shl(self, a: int, amount: int) -> int:
        return (a << amount) & MASK

    def lshr(self, a: int, amount: int) -> int:
        return a >> amount

    def ashr(self, a: int, amount: int) -> int:
        return (signed(a) >> amount) & MASK

    def ult(self, a: int, b: int) -> bool:
        return a < b

    def slt(self, a: int, b: int) -> bool:
        return signed(a) < signed(b)

    def eq(self, a: int, b: int) -> bool:
        return a == b

    def ne(self, a: int, b: int) -> bool:
        return a != b

    def not_(self, cond: bool) -> bool:
        return not cond

    def both(self, a: bool, b: bool) -> bool:
        return a and b

    def ite(self, cond: bool, a: int, b: int) -> int:
        return a if cond else b

    def sext(self, a: int, bits: int) -> int:
        top = 1 << (bits - 1)
        return (((a & ((1 << bits) - 1)) ^ top) - top) & MASK

    def zext(self, a: int, bits: int) -> int:
        return a & ((1 << bits) - 1)

    def trunc(self, a: int, bits: int) -> int:
        return a & ((1 << bits) - 1)

    def mul(self, a: int, b: int) -> int:
        return (a * b) & MASK

    def mulh(self, a: int, b: int) -> int:
        return ((signed(a) * signed(b)) >> XLEN) & MASK

    def mulhu(self, a: int, b: int) -> int:
        return (a * b) >> XLEN

    def mulhsu(self, a: int, b: int) -> int:
        return ((signed(a) * b) >> XLEN) & MASK

    def div(self, a: int, b: int) -> int:
        return div_s(a, b)

    def divu(self, a: int, b: int) -> int:
        return a // b if b else MASK

    def rem(self, a: int, b: int) -> int:
        return rem_s(a, b)

    def remu(self, a: int, b: int) -> int:
        return a % b if b else a


def div_s(a: int, b: int) -> int:
    """RISC-V signed division of 64-bit unsigned encodings (truncating)."""
    if b == 0:
        return MASK
    sa, sb = signed(a), signed(b)
    q = abs(sa) // abs(sb)
    return (-q if (sa < 0) != (sb < 0) else q) & MASK


def rem_s(a: int, b: int) -> int:
    """RISC-V signed remainder (sign of the dividend)."""
    if b == 0:
        return a
    sa, sb = signed(a), signed(b)
    r = abs(sa) % abs(sb)
    return (-r if sa < 0 else r) & MASK


INT_OPS = IntOps()
