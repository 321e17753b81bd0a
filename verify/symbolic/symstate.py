"""The symbolic machine state: emu.insn.semantics.State over Z3 values.

Memory is not one array: a proof tracks only what its clauses need.
  * source bytes are the array SRC (never written: the buffers are disjoint)
  * the destination is summarised by one *watched* byte, dst[W] for the
    arbitrary index W: its current value and whether it was written
  * the stack (addresses at a constant offset from the entry sp) is an array
Every access is recorded with its address and size, so the explorer can
check bounds (B1, B2), SUM (S2) and fork the fault (fixup) path.

Role: one instruction's effects.  May import z3, emu.insn.semantics (State
protocol), verify.symbolic.program, verify.contract.world, verify.symbolic.z3ops.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import z3

from copygen.verify.symbolic.program import ProgramError
from copygen.verify.contract.world import BV8, BV64, SSTATUS, World
from copygen.verify.symbolic.z3ops import bv


@dataclass
class Access:
    kind: str          # load | store
    addr: z3.BitVecRef
    size: int
    stack: bool
    value: object = None     # what a store writes
    rom: bool = False        # a load of a constant from the read-only image


@dataclass
class SymState:
    world: World
    pc: int
    x: list
    sstatus: z3.BitVecRef
    watched: z3.BitVecRef
    written: z3.BoolRef
    stack: z3.ArrayRef
    stores: tuple = ()       # the segment's store records on this path (verify.symbolic.explore)
    rom: object = None       # addr, size -> value of read-only image memory, or None
    pins: dict = field(default_factory=dict)   # a loop head's fixed frame (verify.invariants.houdini)
    # per-instruction scratch, reset by begin()
    next_pc: int = 0
    branch_to: tuple | None = None
    returned: bool = False
    ret_target: object = None
    accesses: list = field(default_factory=list)

    @classmethod
    def at_entry(cls, world: World, entry: int) -> "SymState":
        return cls(world, entry, list(world.R0), world.SS0, world.DST0, z3.BoolVal(False),
                   z3.Array("STACK0", BV64, BV8))

    def clone(self) -> "SymState":
        return SymState(self.world, self.pc, list(self.x), self.sstatus, self.watched,
                        self.written, self.stack, self.stores, self.rom)

    def begin(self, length: int) -> None:
        self.next_pc = self.pc + length
        self.branch_to = None
        self.returned = False
        self.accesses = []

    # --- State protocol ----------------------------------------------------
    def read_x(self, r: int):
        return self.x[r]

    def write_x(self, r: int, v) -> None:
        if r:
            self.x[r] = z3.simplify(v)

    def _is_stack(self, addr) -> bool:
        off = z3.simplify(addr - self.world.SP0)
        return z3.is_bv_value(off)

    def load(self, addr, size: int):
        addr = z3.simplify(addr)
        if self.rom is not None and z3.is_bv_value(addr):
            value = self.rom(addr.as_long(), size)
            if value is not None:       # e.g. GCC's 0x0101010101010101 in a literal pool
                self.accesses.append(Access("load", addr, size, False, rom=True))
                return bv(value)
        stack = self._is_stack(addr)
        self.accesses.append(Access("load", addr, size, stack))
        if stack:
            parts = [z3.Select(self.stack, addr + k) for k in range(size - 1, -1, -1)]
            val = parts[0] if size == 1 else z3.Concat(*parts)
            return z3.ZeroExt(64 - 8 * size, val) if size < 8 else val
        return self.world.source_word(addr, size)

    def store(self, addr, size: int, v) -> None:
        addr = z3.simplify(addr)
        stack = self._is_stack(addr)
        self.accesses.append(Access("store", addr, size, stack, v))
        if stack:
            for k in range(size):
                self.stack = z3.Store(self.stack, addr + k, z3.Extract(8 * k + 7, 8 * k, v))
            return
        # dst[W] is inside [addr, addr+size) iff (D + W) - addr < size; with
        # pointers written as base + offset, D cancels here
        off = z3.simplify(self.world.D + self.world.W - addr)
        inside = z3.ULT(off, bv(size))
        # byte `off` of v, as a choice over the few possible offsets: cheaper
        # for the solver than a shift by a symbolic 64-bit amount
        byte = z3.Extract(7, 0, v)
        for k in range(1, size):
            byte = z3.If(off == k, z3.Extract(8 * k + 7, 8 * k, v), byte)
        self.watched = z3.If(inside, byte, self.watched)
        self.written = z3.Or(self.written, inside)

    def csr_read(self, csr: int):
        if csr != SSTATUS:
            raise ProgramError(f"csr {csr:#x} at {self.pc:#x} is not modelled (only sstatus)")
        return self.sstatus

    def csr_write(self, csr: int, v) -> None:
        if csr != SSTATUS:
            raise ProgramError(f"csr {csr:#x} at {self.pc:#x} is not modelled (only sstatus)")
        self.sstatus = z3.simplify(v)

    def set_pc(self, target) -> None:
        target = z3.simplify(target)
        if z3.is_bv_value(target):
            self.next_pc = target.as_long()
        else:
            # A jump to a computed address leaves the routine: a return, which
            # the prover checks goes to the entry ra (clause A1).
            self.returned = True
            self.ret_target = target

    def branch(self, cond, target: int) -> None:
        self.branch_to = (cond, target)

    def trap(self, cause: str) -> None:
        raise ProgramError(f"{cause} at {self.pc:#x}")
