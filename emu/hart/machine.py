"""The hart: registers, CSRs, fetch, and the reference (one instruction at a time) step.

Role: the kernel's machine model around `emu.insn.semantics` with Python ints.
S-mode only.  `sstatus.SUM` (bit 18) selects which pages loads and stores may
touch (`emu.hart.memory`).  A `MemFault` in an instruction that has an
`__ex_table` entry resumes at its fixup with `sstatus` unchanged and is
recorded as a `Fault`; any other fault raises `Oops`.  A faulting instruction
has no effect and does not retire, except that a vector load or store keeps
the elements below the faulting one and records its index in vstart (RVV's
precise per-element traps).  The vector unit (`emu.hart.vector`, VLEN a machine
parameter) is reachable only while sstatus.VS is not Off: a vector
instruction or vector CSR access with VS Off is an illegal instruction, and
one with VS on leaves VS Dirty.  sstatus.SD is not modelled.  This step is the reference the block
translator (`emu.fast.translate`) is tested against, and it executes whatever the
fast path hands back (faults, misaligned corner cases).
Imports: emu.insn.decode, emu.insn.semantics, emu.insn.vsemantics, emu.hart.vector, emu.insn.values, emu.hart.memory,
emu.timing.cost, emu.hart.observer, emu.errors.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from copygen.emu.timing.cost import CostModel
from copygen.emu.hart.observer import Observer
from copygen.emu.insn.decode import Insn, decode
from copygen.emu.errors import IllegalInstruction, Oops, StepLimit, Trap
from copygen.emu.hart.memory import PAGE_MASK, MemFault, Memory
from copygen.emu.insn.semantics import SEMANTICS
from copygen.emu.insn.values import INT_OPS, MASK
from copygen.emu.hart.vector import READ_ONLY, VectorUnit
from copygen.emu.insn.vsemantics import VECTOR_CSRS

SSTATUS = 0x100
SR_SUM = 1 << 18
SR_VS = 3 << 9             # sstatus.VS: 0 off, 1 initial, 2 clean, 3 dirty
SR_VS_INITIAL, SR_VS_DIRTY = 1 << 9, 3 << 9
# Supervisor CSRs the model keeps, with their writable bits (WARL).
CSR_WRITABLE = {
    SSTATUS: (1 << 1) | (1 << 5) | (1 << 8) | SR_VS | SR_SUM | (1 << 19),  # SIE SPIE SPP VS SUM MXR
    0x105: MASK,  # stvec
    0x140: MASK,  # sscratch
    0x141: MASK,  # sepc
    0x142: MASK,  # scause
    0x143: MASK,  # stval
}


class Fault(NamedTuple):
    """A fault resumed through `__ex_table`: instruction, effective address, cause."""

    pc: int
    addr: int
    cause: str


class Hart:
    """One RV64 hart in S-mode; implements `emu.insn.semantics.State` over ints."""

    def __init__(self, memory: Memory, extable: dict[int, int], cost: CostModel | None = None,
                 vlen: int = 128) -> None:
        self.mem = memory
        self.extable = extable
        self.cost = cost            # the cost model: the translator inlines its hooks
        self.observer: Observer | None = cost   # every hook goes here (emu.hart.observer)
        self.x = [0] * 32
        self.pc = 0
        self.next_pc = 0
        self.taken = False
        self.csrs = dict.fromkeys(CSR_WRITABLE, 0)
        self.faults: list[Fault] = []
        self.instret = 0
        self.v = VectorUnit(vlen)
        self.vlen = vlen
        self._decoded: dict[int, Insn] = {}
        self._code_version = -1

    # --- State protocol ----------------------------------------------------
    @property
    def sum_set(self) -> int:
        return (self.csrs[SSTATUS] >> 18) & 1

    def read_x(self, r: int) -> int:
        return self.x[r]

    def write_x(self, r: int, v: int) -> None:
        if r:
            self.x[r] = v

    def load(self, addr: int, size: int) -> int:
        self.mem.check(addr, size, "load", self.sum_set)
        if self.observer is not None:
            self.observer.access(addr, size, 0)
        return self.mem.get(addr, size)

    def store(self, addr: int, size: int, v: int) -> None:
        self.mem.check(addr, size, "store", self.sum_set)
        if self.observer is not None:
            self.observer.access(addr, size, 1)
        self.mem.put(addr, size, v)

    def csr_read(self, csr: int) -> int:
        if csr in VECTOR_CSRS:
            self._require_vector(dirty=False)
            return self.v.csr_read(csr)
        if csr not in self.csrs:
            self.illegal(f"csr {csr:#x} not modelled")
        return self.csrs[csr]

    def csr_write(self, csr: int, v: int) -> None:
        if csr in VECTOR_CSRS:
            self._require_vector(dirty=True)
            if csr in READ_ONLY:
                self.illegal(f"csr {csr:#x} is read-only")
            self.v.csr_write(csr, v)
            return
        mask = CSR_WRITABLE.get(csr)
        if mask is None:
            raise IllegalInstruction(self.pc, self._decoded[self.pc].raw, 4, f"csr {csr:#x} not modelled")
        self.csrs[csr] = (self.csrs[csr] & ~mask) | (v & mask)

    def set_pc(self, target: int) -> None:
        self.next_pc = target

    def branch(self, cond: Any, target: int) -> None:
        if cond:
            self.next_pc = target
            self.taken = True

    def trap(self, cause: str) -> None:
        raise Trap(self.pc, cause)

    def illegal(self, why: str) -> None:
        insn = self.fetch(self.pc)
        raise IllegalInstruction(self.pc, insn.raw, insn.length, why)

    # --- vector State protocol (emu.insn.vsemantics.VectorState) ---------------
    def _require_vector(self, dirty: bool) -> None:
        status = self.csrs[SSTATUS]
        if not status & SR_VS:
            self.illegal("vector unit used while sstatus.VS is Off")
        if dirty:
            self.csrs[SSTATUS] = status | SR_VS_DIRTY

    def vector_config(self) -> int:
        self._require_vector(dirty=True)
        return self.v.vtype

    def set_vector_config(self, vl: int, vtype: int) -> None:
        self.v.vl, self.v.vtype, self.v.vstart = vl, vtype, 0

    def read_v(self, reg: int, e: int, eew: int) -> int:
        return self.v.read(reg, e, eew)

    def write_v(self, reg: int, e: int, eew: int, value: int) -> None:
        self.v.write(reg, e, eew, value)

    def elements(self, vstart: int, end: int, count: int) -> range:
        return range(vstart, min(end, count))

    # an element access is in flight (the cost model prices its misalignment
    # by the profile's [vector] rule, not the scalar one)
    vector_element = False

    def load_element(self, e: int, active: bool, addr: int, size: int) -> int:
        if not active:
            return 0
        self.vector_element = True
        try:
            return self.load(addr, size)
        except MemFault:
            self.v.vstart = e
            raise
        finally:
            self.vector_element = False

    def store_element(self, e: int, active: bool, addr: int, size: int, value: int) -> None:
        if active:
            self.vector_element = True
            try:
                self.store(addr, size, value)
            except MemFault:
                self.v.vstart = e
                raise
            finally:
                self.vector_element = False

    def accessible(self, active: bool, addr: int, size: int) -> bool:
        if active:
            try:
                self.mem.check(addr, size, "load", self.sum_set)
            except MemFault:
                return False
        return True

    def vector_done(self) -> None:
        self.v.vstart = 0

    def concrete(self, v: int, what: str) -> int:
        return v

    # --- fetch and step ----------------------------------------------------
    def fetch(self, pc: int) -> Insn:
        """Decode the instruction at pc (cached until executable memory changes)."""
        if self._code_version != self.mem.code_version:
            self._decoded.clear()
            self._code_version = self.mem.code_version
        insn = self._decoded.get(pc)
        if insn is None:
            insn = self._decoded[pc] = self._fetch_decode(pc)
        return insn

    def _fetch_decode(self, pc: int) -> Insn:
        if pc & 1:
            raise Oops(pc, pc, "fetch: misaligned pc")
        try:
            self.mem.fetch_check(pc)
            low = self.mem.get(pc, 2)
            if low & 3 == 3:
                if (pc & PAGE_MASK) > PAGE_MASK - 3:
                    self.mem.fetch_check(pc + 2)
                low |= self.mem.get(pc + 2, 2) << 16
        except MemFault as f:
            raise Oops(pc, f.addr, f.cause) from None
        return decode(low, pc)

    def step(self) -> None:
        """Execute one instruction with the reference semantics."""
        pc = self.pc
        insn = self.fetch(pc)
        self.next_pc = (pc + insn.length) & MASK
        self.taken = False
        try:
            SEMANTICS[insn.name](insn, INT_OPS, self)
        except MemFault as f:
            self.take_fault(pc, f)
            return
        if self.observer is not None:
            self.observer.on_insn(insn, self.taken)
        self.pc = self.next_pc
        self.instret += 1

    def take_fault(self, pc: int, f: MemFault) -> None:
        fixup = self.extable.get(pc)
        if fixup is None:
            raise Oops(pc, f.addr, f.cause)
        self.faults.append(Fault(pc, f.addr, f.cause))
        if self.observer is not None:
            self.observer.on_fault()
        self.pc = fixup

    def run_reference(self, stop_pc: int, limit: int) -> None:
        """Step until pc == stop_pc; StepLimit after `limit` retired instructions."""
        end = self.instret + limit
        while self.pc != stop_pc:
            if self.instret >= end:
                raise StepLimit(self.pc, limit)
            self.step()
