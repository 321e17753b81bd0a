"""The symbolic machine with a vector unit, at a fixed VLEN, and the
exploration step of a vector memory instruction.

`VecSymState` is verify.symbolic.symstate.SymState plus RVV state: VLEN (concrete),
vtype (concrete, as emu.insn.vsemantics requires; VILL where it is unknown, so
an instruction that needs it before a vsetvli is refused), vl and vstart
(Z3 values) and the register file as one Z3 byte per register byte
(indices are always concrete).  A unit-stride load also leaves a summary
of its group in bytes ("group bytes lo..hi-1 hold SRC[base + b]", for
elements of any width: the group's bytes are memory's bytes in order),
and a store of that group, at any width, then writes dst[W] from the
summary at once
instead of through one if-then-else per element (what the solver gave up
on at VLMAX 128).  A byte store of a group whose every byte is the same
constant (a fill's splat: vmv.v.i) writes dst[W] as that constant at once,
the same way.  It implements emu.insn.vsemantics.VectorState,
so the vector instructions run through the one semantics (decision 3).

A vector load or store touches up to VLMAX elements.  Its element accesses
are recorded, not forked one by one: `VecExplorer` checks that they are
unit-stride (element e at base + e * size; anything else is refused), and
turns them into one byte range [base + vstart*size, base + min(vl, VLMAX)*size)
for the S2, B1, B2 and X1 obligations and the fault fork.  A fault in a
plain access takes the first element at or past the first inaccessible
byte (FO): the element that holds it, K = (FO - base) / size, or lo when
that lies below; an element that straddles FO faults whole.  The fault
path re-runs the semantics with only the elements below K performed and
vstart = K (in elements), as the hardware's precise trap leaves them.  A
fault-only-first load can trap on element 0 only (the semantics trims vl at
a later faulting element), so its fault index is 0.  The vl such a load
leaves is, from the semantics, an if-then-else over every element (1024
of them at e8, m8, VLEN 1024), each guarded by all the elements before
it; unmasked and from vstart 0 it is put in closed form (`trimmed_vl`):
the elements are accessible up to the one that holds FO, so vl becomes
(FO - base) / size where that lies below vl (tests/verify/test_vector_ff_vl.py
proves the two equal wherever element 0 did not fault).

Role: one vector instruction's effects over Z3.  May import z3,
emu.insn.semantics, emu.insn.vsemantics, verify.symbolic.explore, verify.symbolic.program,
verify.symbolic.symstate, verify.contract.world, verify.symbolic.z3ops.
"""
from __future__ import annotations

import z3

from copygen.emu.insn.semantics import SEMANTICS
from copygen.emu.insn.vsemantics import VILL, VL, VLENB, VSTART, VTYPE, sew_of, vlmax
from copygen.verify.symbolic.explore import End, Explorer, Obligation, Segment
from copygen.verify.symbolic.program import ProgramError
from copygen.verify.symbolic.symstate import SymState
from copygen.verify.contract.world import SR_SUM, SSTATUS
from copygen.verify.symbolic.z3ops import Z3_OPS, bv

MEMORY_OPS = ("vle", "vse")


class VecSymState(SymState):
    """SymState with RVV state; `fault_at` set: only elements below it run."""

    vlen: int = 128

    @classmethod
    def at_vector_entry(cls, world, entry: int, vlen: int) -> "VecSymState":
        st = cls(world, entry, list(world.R0), world.SS0, world.DST0, z3.BoolVal(False),
                 z3.Array("STACK0", z3.BitVecSort(64), z3.BitVecSort(8)))
        st.setup_vector(vlen, VILL, z3.BitVec("VL0", 64), bv(0), "V0")
        return st

    def setup_vector(self, vlen: int, vtype: int, vl, vstart, havoc: str) -> None:
        self.vlen, self.vtype, self.vl, self.vstart = vlen, vtype, vl, vstart
        self.vregs: dict[int, object] = {}
        self.havoc = havoc          # prefix of the symbols of register bytes not yet written
        self.fault_at = None
        self.elements_done: list = []
        # register group -> (base, lo, hi): its bytes lo..hi-1 hold SRC[base + b]
        self.windows: dict[int, tuple] = {}
        self.aggregate = False      # the explorer writes this store's bytes at once

    def clone(self) -> "VecSymState":
        c = VecSymState(self.world, self.pc, list(self.x), self.sstatus, self.watched,
                        self.written, self.stack, self.stores, self.rom)
        c.setup_vector(self.vlen, self.vtype, self.vl, self.vstart, self.havoc)
        c.vregs = dict(self.vregs)
        c.windows = dict(self.windows)
        return c

    def begin(self, length: int) -> None:
        super().begin(length)
        self.elements_done = []

    # --- CSRs ----------------------------------------------------------------
    def csr_read(self, csr: int):
        vec = {VL: lambda: self.vl, VSTART: lambda: self.vstart,
               VTYPE: lambda: bv(self.vtype), VLENB: lambda: bv(self.vlen // 8)}
        if csr in vec:
            return vec[csr]()
        return super().csr_read(csr)

    def csr_write(self, csr: int, v) -> None:
        if csr == VSTART:
            self.vstart = z3.simplify(v & bv(self.vlen - 1))
        elif csr == SSTATUS:
            super().csr_write(csr, v)
        else:
            raise ProgramError(f"csr {csr:#x} at {self.pc:#x} is not modelled for writing")

    # --- emu.insn.vsemantics.VectorState ---------------------------------------------
    def vector_config(self) -> int:
        return self.vtype

    def set_vector_config(self, vl, vtype: int) -> None:
        self.vl, self.vtype, self.vstart = z3.simplify(vl), vtype, bv(0)

    def vreg_byte(self, i: int):
        """Byte i of the register file (a fresh symbol where none was written)."""
        return self._byte(i)

    def _byte(self, i: int):
        if i not in self.vregs:
            self.vregs[i] = z3.BitVec(f"{self.havoc}_{i}", 8)
        return self.vregs[i]

    def read_v(self, reg: int, e: int, eew: int):
        base = reg * self.vlen // 8 + e * eew // 8
        parts = [self._byte(base + k) for k in range(eew // 8 - 1, -1, -1)]
        val = parts[0] if len(parts) == 1 else z3.Concat(*parts)
        return z3.ZeroExt(64 - eew, val) if eew < 64 else val

    def write_v(self, reg: int, e: int, eew: int, value) -> None:
        self.windows.pop(reg, None)
        base = reg * self.vlen // 8 + e * eew // 8
        for k in range(eew // 8):
            self.vregs[base + k] = z3.simplify(z3.Extract(8 * k + 7, 8 * k, value))

    def elements(self, vstart, end, count: int) -> range:
        return range(count)

    def _performed(self, e: int, active):
        return active if self.fault_at is None else z3.And(active, z3.ULT(bv(e), self.fault_at))

    def load_element(self, e: int, active, addr, size: int):
        # on a fault path the elements from K on are loaded too: only the
        # register file sees them, which no clause reads after a fault
        self.elements_done.append(("load", e, active, z3.simplify(addr), size))
        return self.world.source_word(z3.simplify(addr), size)

    def store_element(self, e: int, active, addr, size: int, value) -> None:
        addr = z3.simplify(addr)
        self.elements_done.append(("store", e, active, addr, size))
        if self.world.user is None:
            raise ProgramError("vector stores are modelled in user copies only")
        if self.aggregate:
            return
        on = self._performed(e, active)
        off = z3.simplify(self.world.D + self.world.W - addr)
        inside = z3.And(on, z3.ULT(off, bv(size)))
        byte = z3.Extract(7, 0, value)
        for k in range(1, size):
            byte = z3.If(off == k, z3.Extract(8 * k + 7, 8 * k, value), byte)
        self.watched = z3.If(inside, byte, self.watched)
        self.written = z3.Or(self.written, inside)

    def accessible(self, active, addr, size: int):
        """An inactive element never faults (as emu.Machine's): a
        fault-only-first load with vl below a faulting element keeps vl."""
        if self.world.user == "src":
            return z3.Or(z3.Not(active),
                         z3.Not(self.world.user_access_faults(z3.simplify(addr), size)))
        return z3.BoolVal(True)

    def vector_done(self) -> None:
        self.vstart = bv(0) if self.fault_at is None else self.fault_at

    def concrete(self, v, what: str) -> int:
        v = z3.simplify(v)
        if not z3.is_bv_value(v):
            raise ProgramError(f"{what} at {self.pc:#x} is not a constant")
        return v.as_long()

    def illegal(self, why: str) -> None:
        raise ProgramError(f"illegal vector instruction at {self.pc:#x}: {why}")


def _bytes(elements, size: int):
    """Elements of `size` bytes as a byte count."""
    return elements if size == 1 else z3.simplify(elements * size)


def trimmed_vl(world, base, size: int, vl):
    """The vl an unmasked fault-only-first load from vstart 0 leaves, where
    its element 0 did not fault: the index of the first element that
    reaches the first inaccessible byte, (FO - (base - U)) / size, where
    that is below vl; else vl.  Elements are accessible up to that one
    (World.user_access_faults: one boundary, FO bytes past U)."""
    if world.user != "src":
        return vl
    first = z3.LShR(world.FO - z3.simplify(base - world.U), size.bit_length() - 1)
    return z3.simplify(z3.If(z3.And(z3.Not(world.NF), z3.ULT(first, vl)), first, vl))


def _unit_range(st: VecSymState, done: list):
    """(kind, base, size, lo, hi) of a unit-stride access: elements lo..hi-1
    (Z3 values) at base + e * size; a ProgramError for anything else."""
    kinds = {d[0] for d in done}
    sizes = {d[4] for d in done}
    if len(kinds) != 1 or len(sizes) != 1:
        raise ProgramError(f"vector access at {st.pc:#x} mixes loads, stores or sizes")
    (kind,), (size,) = kinds, sizes
    base = done[0][3]
    for _, e, _, addr, _ in done:
        if not z3.is_true(z3.simplify(addr == base + bv(e * size))):
            raise ProgramError(f"vector access at {st.pc:#x} is not unit-stride")
    count = len(done)
    hi = z3.If(z3.ULT(st.vl, bv(count)), st.vl, bv(count))
    return kind, base, size, st.vstart, hi


def _store_window(st: VecSymState, window: tuple, base, lo, hi) -> None:
    """dst[W] after a store of the group's bytes lo..hi-1 at base (elements
    scaled to bytes by the caller) from a group whose bytes wlo..whi-1 hold
    SRC[wbase + b] (a unit-stride load's summary): the source byte where
    the window covers the byte, else any byte (a fresh symbol: an
    over-approximation)."""
    w = st.world
    wbase, wlo, whi = window
    e = z3.simplify(w.D + w.W - base)
    inside = z3.And(z3.ULE(lo, e), z3.ULT(e, hi))
    fresh = z3.BitVec(f"VSTORE_{st.pc:x}_{len(st.stores)}", 8)
    value = z3.If(z3.And(z3.ULE(wlo, e), z3.ULT(e, whi)), z3.Select(w.SRC, wbase + e), fresh)
    st.watched = z3.If(inside, value, st.watched)
    st.written = z3.Or(st.written, inside)
    st.aggregate = False


def group_fill(st: VecSymState, reg: int):
    """The byte every byte of the group at `reg` holds (under the current
    vtype: VLMAX elements of SEW bits), when they all hold one constant;
    else None."""
    if st.vtype & VILL:
        return None
    first = reg * st.vlen // 8
    nbytes = vlmax(st.vtype, st.vlen) * sew_of(st.vtype) // 8
    values = {st.vregs.get(first + i) for i in range(nbytes)}
    if len(values) != 1:
        return None
    (v,) = values
    return v if v is not None and z3.is_bv_value(v) else None


def _store_fill(st: VecSymState, value, base, lo, hi) -> None:
    """dst[W] after a store of the group's bytes lo..hi-1 at base from a
    group whose bytes all hold `value`."""
    w = st.world
    e = z3.simplify(w.D + w.W - base)
    inside = z3.And(z3.ULE(lo, e), z3.ULT(e, hi))
    st.watched = z3.If(inside, value, st.watched)
    st.written = z3.Or(st.written, inside)
    st.aggregate = False


class VecExplorer(Explorer):
    """Explorer whose vector loads and stores are one range access each."""

    def _step(self, seg: Segment, st: SymState, cond: list, faulted: bool, witness) -> list:
        insn = self.prog.fetch(st.pc)
        if not insn.name.startswith(MEMORY_OPS) or insn.name.startswith("vset"):
            return super()._step(seg, st, cond, faulted, witness)
        new = st.clone()
        new.begin(insn.length)
        fill = group_fill(st, insn.rd) if insn.name.startswith("vse") else None
        new.aggregate = insn.name.startswith("vse") and (insn.rd in st.windows or fill is not None)
        SEMANTICS[insn.name](insn, Z3_OPS, new)
        kind, base, size, lo, hi = _unit_range(st, new.elements_done)
        if insn.name.endswith("ff.v") and insn.vm and z3.is_true(z3.simplify(lo == 0)):
            new.vl = trimmed_vl(self.world, base, size, st.vl)
        if kind == "load":
            # a fault-only-first load loaded the elements below the vl it left
            top = z3.If(z3.ULT(new.vl, hi), new.vl, hi) if insn.name.endswith("ff.v") else hi
            new.windows[insn.rd] = (base, _bytes(lo, size), z3.simplify(_bytes(top, size)))
        if new.aggregate and fill is not None:
            _store_fill(new, fill, base, _bytes(lo, size), _bytes(hi, size))
        elif new.aggregate:
            _store_window(new, st.windows[insn.rd], base, _bytes(lo, size), _bytes(hi, size))
        w = self.world
        nonempty = z3.ULT(lo, hi)
        start, length = z3.simplify(base + _bytes(lo, size)), z3.simplify((hi - lo) * size)
        c = cond + [nonempty]
        user = w.user == ("dst" if kind == "store" else "src")
        if user:
            seg.obligations.append(Obligation("S2", st.pc, c, st.sstatus & bv(SR_SUM) != 0,
                                              f"user vector {kind} with SUM clear"))
        if kind == "store":
            seg.obligations.append(Obligation("B1", st.pc, c, w.in_dst(start, length),
                                              "vector store outside [dst, dst+n)"))
        else:
            seg.obligations += [
                Obligation("B2", st.pc, c, w.in_src(start, length, False),
                           "vector load outside the source's aligned words"),
                Obligation("B2s", st.pc, c, w.in_src(start, length, True),
                           "vector load outside [src, src+n)")]
        out, cont = [], list(cond)
        if user:
            ff = insn.name.endswith("ff.v")
            fc = self._fault_condition(st, base, size, lo, hi, ff)
            fixup = self.prog.image.extable.get(st.pc)
            seg.obligations.append(Obligation("X1", st.pc, cond,
                                              z3.BoolVal(True) if fixup else z3.Not(fc),
                                              "a faulting vector access has no fixup"))
            if fixup is None:
                pass
            elif self.feasible(cond + [fc])[0]:
                out.append(self._fault_path(st, insn, base, lo, size, ff, fixup, cond + [fc]))
            cont = cont + [z3.Not(fc)]
            if not self.feasible(cont)[0]:
                return out
        new.pc = new.next_pc
        return out + [(new, cont, faulted, False, None)]

    def _fault_condition(self, st, base, size, lo, hi, ff: bool):
        w = self.world
        if ff:      # element 0 alone can trap
            return z3.And(lo == 0, z3.ULT(bv(0), hi), w.user_access_faults(base, size))
        return z3.And(z3.ULT(lo, hi), w.user_access_faults(z3.simplify(base + _bytes(lo, size)),
                                                           z3.simplify((hi - lo) * size)))

    def _fault_path(self, st, insn, base, lo, size: int, ff: bool, fixup: int, cond: list):
        """The state a precise trap leaves: elements below K done, vstart = K
        (K: the element that holds the first inaccessible byte)."""
        if ff:
            k = bv(0)
        else:
            off0 = z3.simplify(base - self.world.U)
            below = z3.LShR(self.world.FO - off0, size.bit_length() - 1)
            k = z3.simplify(z3.If(z3.ULT(off0 + _bytes(lo, size), self.world.FO), below, lo))
        f = st.clone()
        f.begin(insn.length)
        f.fault_at = k
        fill = group_fill(st, insn.rd) if insn.name.startswith("vse") else None
        f.aggregate = insn.name.startswith("vse") and (insn.rd in st.windows or fill is not None)
        SEMANTICS[insn.name](insn, Z3_OPS, f)
        if f.aggregate and fill is not None:
            _store_fill(f, fill, base, _bytes(lo, size), _bytes(k, size))
        elif f.aggregate:
            _store_window(f, st.windows[insn.rd], base, _bytes(lo, size), _bytes(k, size))
        f.fault_at, f.aggregate = None, False
        f.pc = fixup
        return (f, cond, True, False, None)


__all__ = ["VecSymState", "VecExplorer", "End"]
