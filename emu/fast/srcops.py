"""A third value domain: Python source text, used to compile blocks.

Role: `SrcOps` implements `emu.insn.values.Ops` by returning Python expressions
(strings) instead of numbers, folding constants (ints) with `IntOps`.
`BlockState` implements `emu.insn.semantics.State` by emitting statements.  Running
`emu.insn.semantics` over them yields the body of a translated block, so the fast
path has no instruction semantics of its own.

Generated code conventions (names bound by `emu.fast.translate`):
registers live in locals `x1`..`x31`; `R`/`W` are the current SUM mode's
read/write page tables (`emu.hart.memory`); `MRU`, `TOUCH`, `C` the cache and cost
model (`SETS`, `TICK`: see `emu.timing.cost.Cache`); `MISL`/`MISS` handle misaligned accesses; `_mulh` etc. the M helpers.
With the out-of-order engine a miss is not a stall: its level code is or-ed
into the block's access signature `sg` (emu.timing.ooo) at the access's place.
A refused access raises KeyError (table miss) or MemFault (misaligned helper);
the translator maps the line back to the instruction and replays it on the
reference step.
Imports: emu.insn.values, emu.hart.memory.
"""

from __future__ import annotations

from typing import Any

from copygen.emu.hart.memory import VIEW_INDEX
from copygen.emu.insn.values import INT_OPS, MASK, SIGN

M = f"{MASK:#x}"
S = f"{SIGN:#x}"


class SrcOps:
    """Ops over Python source: ints are constants, strs are expressions."""

    __slots__ = ()

    def const(self, x: int) -> int:
        return x & MASK

    def _fold(self, name: str, *args: Any) -> Any:
        return getattr(INT_OPS, name)(*args)

    def add(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return self._fold("add", a, b)
        if b == 0:
            return a
        if a == 0:
            return b
        return f"(({a} + {b}) & {M})"

    def sub(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return self._fold("sub", a, b)
        return a if b == 0 else f"(({a} - {b}) & {M})"

    def _bitop(self, name: str, sym: str, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return self._fold(name, a, b)
        return f"({a} {sym} {b})"

    def and_(self, a, b):
        if a == 0 or b == 0:
            return 0
        return a if b == MASK else self._bitop("and_", "&", a, b)

    def or_(self, a, b):
        return a if b == 0 else b if a == 0 else self._bitop("or_", "|", a, b)

    def xor(self, a, b):
        return a if b == 0 else b if a == 0 else self._bitop("xor", "^", a, b)

    def shl(self, a, amount):
        if isinstance(a, int) and isinstance(amount, int):
            return self._fold("shl", a, amount)
        return a if amount == 0 else f"(({a} << {amount}) & {M})"

    def lshr(self, a, amount):
        if isinstance(a, int) and isinstance(amount, int):
            return self._fold("lshr", a, amount)
        return a if amount == 0 else f"({a} >> {amount})"

    def ashr(self, a, amount):
        if isinstance(a, int) and isinstance(amount, int):
            return self._fold("ashr", a, amount)
        return a if amount == 0 else f"(((({a} ^ {S}) - {S}) >> {amount}) & {M})"

    def ult(self, a, b):
        return self._fold("ult", a, b) if isinstance(a, int) and isinstance(b, int) else f"({a} < {b})"

    def slt(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return self._fold("slt", a, b)
        return f"(({a} ^ {S}) < ({b} ^ {S}))"

    def eq(self, a, b):
        return a == b if isinstance(a, int) and isinstance(b, int) else f"({a} == {b})"

    def ne(self, a, b):
        return a != b if isinstance(a, int) and isinstance(b, int) else f"({a} != {b})"

    def not_(self, c):
        return (not c) if isinstance(c, bool) else f"(not {c})"

    def both(self, a, b):
        if isinstance(a, bool):
            return b if a else False
        if isinstance(b, bool):
            return a if b else False
        return f"({a} and {b})"

    def ite(self, c, a, b):
        if isinstance(c, bool):
            return a if c else b
        return f"({a} if {c} else {b})"

    def sext(self, a, bits: int):
        if isinstance(a, int):
            return self._fold("sext", a, bits)
        top = 1 << (bits - 1)
        return f"(((({a} & {(1 << bits) - 1:#x}) ^ {top:#x}) - {top:#x}) & {M})"

    def zext(self, a, bits: int):
        return self._fold("zext", a, bits) if isinstance(a, int) else f"({a} & {(1 << bits) - 1:#x})"

    trunc = zext

    def mul(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return self._fold("mul", a, b)
        return f"(({a} * {b}) & {M})"

    def _call(self, name: str, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return self._fold(name, a, b)
        return f"_{name}({a}, {b})"

    def mulh(self, a, b):
        return self._call("mulh", a, b)

    def mulhu(self, a, b):
        return self._call("mulhu", a, b)

    def mulhsu(self, a, b):
        return self._call("mulhsu", a, b)

    def div(self, a, b):
        return self._call("div", a, b)

    def divu(self, a, b):
        return self._call("divu", a, b)

    def rem(self, a, b):
        return self._call("rem", a, b)

    def remu(self, a, b):
        return self._call("remu", a, b)


SRC_OPS = SrcOps()
HELPERS = {f"_{n}": getattr(INT_OPS, n) for n in ("mulh", "mulhu", "mulhsu", "div", "divu", "rem", "remu")}


class BlockState:
    """`emu.insn.semantics.State` that appends Python statements to `lines`."""

    def __init__(self, line_shift: int | None, set_mask: int) -> None:
        self.lines: list[str] = []
        self.pc = 0
        self.used: set[int] = set()
        self.written: set[int] = set()
        self.exit_pc: Any = None       # int (static) or expression (jalr)
        self.cond: Any = None          # branch condition, None if unconditional
        self.branch_target: int | None = None
        self.line_shift, self.set_mask = line_shift, set_mask
        self.sig_shift: int | None = None  # out-of-order engine: where this access's level
        #                                     code goes in the block's signature `sg`
        self.direct: str | None = None  # set by the translator: the next access is this
        #                                  element of a page view already checked
        self._n = 0

    def _tmp(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def read_x(self, r: int):
        if r == 0:
            return 0
        self.used.add(r)
        return f"x{r}"

    def write_x(self, r: int, v) -> None:
        if r:
            self.used.add(r)
            self.written.add(r)
            self.lines.append(f"x{r} = {v}")

    def _address(self, addr) -> str:
        if isinstance(addr, str) and addr.isidentifier():
            return addr
        a = self._tmp("a")
        self.lines.append(f"{a} = {addr}")
        return a

    def _cache_lines(self, a: str, store: int) -> list[str]:
        if self.line_shift is None:
            return []
        ln, lines = self._tmp("l"), self._tmp("s")
        return [f"    {ln} = {a} >> {self.line_shift}",
                f"    if MRU[{ln} & {self.set_mask}] != {ln}:",
                f"        {lines} = SETS[{ln} & {self.set_mask}]",
                f"        if {ln} in {lines}:",
                f"            {lines}[{ln}] = next(TICK)",
                f"            MRU[{ln} & {self.set_mask}] = {ln}",
                "        else:",
                f"            {self._charge(f'TOUCH({ln}, {store})')}"]

    def _charge(self, cost: str) -> str:
        """In-order engine: a miss stalls; out-of-order: its level code is recorded."""
        if self.sig_shift is None:
            return f"C.stall_cycles += {cost}"
        return f"sg |= {cost} << {self.sig_shift}"

    def load(self, addr, size: int):
        if self.direct is not None:  # one of a run of accesses checked together
            v = self._tmp("v")
            self.lines.append(f"{v} = {self.direct}")
            self.direct = None
            return v
        a, v = self._address(addr), self._tmp("v")
        view, shift = VIEW_INDEX[(size, False)], size.bit_length() - 1
        index = f"({a} & 4095) >> {shift}" if shift else f"{a} & 4095"
        fast = [f"    {v} = R[{a} >> 12][{view}][{index}]"] + self._cache_lines(a, 0)
        self._aligned_or_helper(a, size, fast, f"{v} = MISL({a}, {size})")
        return v

    def store(self, addr, size: int, value) -> None:
        if self.direct is not None:
            data = value if size == 8 else SRC_OPS.zext(value, 8 * size)
            self.lines.append(f"{self.direct} = {data}")
            self.direct = None
            return
        a = self._address(addr)
        view, shift = VIEW_INDEX[(size, False)], size.bit_length() - 1
        index = f"({a} & 4095) >> {shift}" if shift else f"{a} & 4095"
        data = value if size == 8 else SRC_OPS.zext(value, 8 * size)
        fast = [f"    W[{a} >> 12][{view}][{index}] = {data}"] + self._cache_lines(a, 1)
        self._aligned_or_helper(a, size, fast, f"MISS({a}, {size}, {value})")

    def _aligned_or_helper(self, a: str, size: int, fast: list[str], slow: str) -> None:
        if size == 1:
            self.lines.extend(line[4:] for line in fast)
            return
        self.lines.append(f"if {a} & {size - 1}:")
        self.lines.append(f"    {slow}")
        if self.sig_shift is not None:
            self.lines.append(f"    {self._charge('C.code')}")
        self.lines.append("else:")
        self.lines.extend(fast)

    def csr_read(self, csr: int):
        raise AssertionError("csr instructions are not translated (run on the reference step)")

    csr_write = csr_read

    def set_pc(self, target) -> None:
        if not isinstance(target, int):
            t = self._tmp("j")
            self.lines.append(f"{t} = {target}")
            target = t
        self.exit_pc = target

    def branch(self, cond, target: int) -> None:
        self.cond, self.branch_target = cond, target

    def trap(self, cause: str) -> None:
        raise AssertionError("ecall/ebreak are not translated (run on the reference step)")
