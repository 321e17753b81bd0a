"""Semantics of the RVV 1.0 instructions copy code uses, for every value domain.

Role: `VECTOR_SEMANTICS[name](insn, ops, st)`, merged into
`emu.insn.semantics.SEMANTICS`, for vset{i}vl{i}, unit-stride / strided /
fault-only-first / whole-register loads and stores, vmv<n>r.v and vmv.v.i.  Written
over `emu.insn.values.Ops` like the scalar semantics, with the state protocol
`VectorState` below, so the verifier can later run them over Z3.

What is concrete in every domain, and why: VLEN (a machine parameter) and
`vtype` (copy code sets it from vsetvli immediates; `vsetvl` takes it from a
register through `st.concrete`).  They fix SEW, LMUL and VLMAX, so the element
loops have a concrete bound and register-group legality is decided on
concrete numbers.  `vl`, `vstart`, addresses, mask bits and element data are
values: an element is active under the condition vstart <= i < vl (and its
mask bit), and the state performs a memory access only under its condition.

Spec choices (RVV 1.0; where the spec leaves a choice, the one QEMU 7.2 makes):
* vl = min(AVL, VLMAX); rs1 = x0 with rd != x0 asks for VLMAX; rs1 = rd = x0
  keeps vl, clipped to the new VLMAX.  An unsupported vtype (reserved bits,
  SEW > ELEN = 64, LMUL code 100, or a fractional LMUL with SEW > LMUL * ELEN)
  sets vtype to vill alone and vl to 0.
* Tail and inactive (masked-off) elements are left undisturbed, which the
  agnostic policies allow; no element is ever written with all ones.
* A fault on element i leaves elements below i done, sets vstart = i and
  traps (`st.load_element` / `st.store_element` record i).  A completed
  instruction resets vstart to 0.  A fault-only-first load traps only on
  element 0; a fault on a later active element trims vl to its index.
* Illegal (reserved) uses raise through `st.illegal`: vill set, EMUL outside
  [1/8, 8], a register group not aligned to its size, a masked load into v0.
  Whole-register loads, stores and moves ignore vtype and vl.
Imports: emu.insn.values (types only).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Protocol

from copygen.emu.insn.values import Ops

VSTART, VXSAT, VXRM, VCSR = 0x008, 0x009, 0x00A, 0x00F
VL, VTYPE, VLENB = 0xC20, 0xC21, 0xC22
VECTOR_CSRS = frozenset({VSTART, VXSAT, VXRM, VCSR, VL, VTYPE, VLENB})
VILL = 1 << 63
ELEN = 64


class VectorState(Protocol):
    """What a vector instruction may do to the machine, beside `emu.insn.semantics.State`."""

    vlen: int                                              # bits per register (concrete)

    def read_x(self, r: int) -> Any: ...
    def write_x(self, r: int, v: Any) -> None: ...
    def csr_read(self, csr: int) -> Any: ...                # vl and vstart are values
    def vector_config(self) -> int: ...                     # vtype; illegal while VS is off
    def set_vector_config(self, vl: Any, vtype: int) -> None: ...
    def read_v(self, reg: int, e: int, eew: int) -> Any: ...      # element e of the group at reg
    def write_v(self, reg: int, e: int, eew: int, v: Any) -> None: ...
    def elements(self, vstart: Any, end: Any, count: int) -> Iterable[int]: ...
    def load_element(self, e: int, active: Any, addr: Any, size: int) -> Any: ...
    def store_element(self, e: int, active: Any, addr: Any, size: int, v: Any) -> None: ...
    def accessible(self, active: Any, addr: Any, size: int) -> Any: ...
    def vector_done(self) -> None: ...                      # vstart = 0
    def concrete(self, v: Any, what: str) -> int: ...
    def illegal(self, why: str) -> None: ...


VSemantic = Callable[[Any, Ops, VectorState], None]
VECTOR_SEMANTICS: dict[str, VSemantic] = {}


# --- vtype ----------------------------------------------------------------------

def lmul_log2(vtype: int) -> int:
    """log2 of LMUL from vtype.vlmul (-3..3; code 100 is reserved)."""
    code = vtype & 7
    return code - 8 if code & 4 else code


def sew_of(vtype: int) -> int:
    return 8 << ((vtype >> 3) & 7)


def vlmax(vtype: int, vlen: int) -> int:
    """LMUL * VLEN / SEW, or 0 when the machine does not support `vtype` (vill)."""
    if vtype >> 8 or vtype & 7 == 4 or sew_of(vtype) > ELEN:
        return 0
    shift = lmul_log2(vtype)
    if shift < 0 and sew_of(vtype) > ELEN >> -shift:
        return 0
    return (vlen << shift) // sew_of(vtype) if shift >= 0 else (vlen >> -shift) // sew_of(vtype)


# --- vset{i}vl{i} -------------------------------------------------------------------

def _vset(name: str) -> VSemantic:
    def run(i: Any, o: Ops, s: VectorState) -> None:
        s.vector_config()
        vtype = s.concrete(s.read_x(i.rs2), "vsetvl's vtype") if name == "vsetvl" else i.imm
        top = vlmax(vtype, s.vlen)
        if top == 0:
            s.set_vector_config(o.const(0), VILL)
            s.write_x(i.rd, o.const(0))
            return
        if name == "vsetivli":
            avl = o.const(i.rs1)
        elif i.rs1 != 0:
            avl = s.read_x(i.rs1)
        elif i.rd != 0:
            avl = o.const(top)
        else:
            avl = s.csr_read(VL)
        vl = o.ite(o.ult(avl, o.const(top)), avl, o.const(top))
        s.set_vector_config(vl, vtype)
        s.write_x(i.rd, vl)
    return run


for _n in ("vsetvli", "vsetivli", "vsetvl"):
    VECTOR_SEMANTICS[_n] = _vset(_n)


# --- element helpers ----------------------------------------------------------------

def _group(s: VectorState, reg: int, eew: int, vtype: int) -> int:
    """Registers in the group of an EEW-element operand (illegal if reserved)."""
    if vtype & VILL:
        s.illegal("vtype.vill is set")
    emul = (eew.bit_length() - sew_of(vtype).bit_length()) + lmul_log2(vtype)
    if not -3 <= emul <= 3:
        s.illegal(f"EMUL 2**{emul} out of range for EEW {eew}")
    regs = 1 << max(emul, 0)
    if reg % regs:
        s.illegal(f"v{reg} is not aligned to its group of {regs}")
    return regs


def _active(o: Ops, s: VectorState, e: int, vstart: Any, end: Any, vm: int) -> Any:
    """Element e is active: vstart <= e < end and, when masked, v0's bit e is 1."""
    c = o.both(o.not_(o.ult(o.const(e), vstart)), o.ult(o.const(e), end))
    if not vm:
        bit = o.and_(o.lshr(s.read_v(0, e >> 3, 8), o.const(e & 7)), o.const(1))
        c = o.both(c, o.ne(bit, o.const(0)))
    return c


def _load_elements(o: Ops, s: VectorState, vd: int, eew: int, addr_of: Callable[[int], Any],
                   end: Any, count: int, vm: int) -> None:
    """Load elements vstart..end-1 of vd from addr_of(e), keeping inactive ones."""
    vstart, size = s.csr_read(VSTART), eew // 8
    for e in s.elements(vstart, end, count):
        active = _active(o, s, e, vstart, end, vm)
        v = s.load_element(e, active, addr_of(e), size)
        s.write_v(vd, e, eew, o.ite(active, v, s.read_v(vd, e, eew)))


def _store_elements(o: Ops, s: VectorState, vs3: int, eew: int, addr_of: Callable[[int], Any],
                    end: Any, count: int, vm: int) -> None:
    vstart, size = s.csr_read(VSTART), eew // 8
    for e in s.elements(vstart, end, count):
        s.store_element(e, _active(o, s, e, vstart, end, vm), addr_of(e), size, s.read_v(vs3, e, eew))


# --- unit-stride and strided loads and stores ---------------------------------------

def _eew(name: str) -> int:
    """The element width a mnemonic names: vle16.v, vlse16.v, vl2re16.v -> 16."""
    return int(re.search(r"e(\d+)", name).group(1))


def _strided(name: str) -> VSemantic:
    eew, store = _eew(name), name.startswith("vs")
    strided = name.startswith(("vlse", "vsse"))

    def run(i: Any, o: Ops, s: VectorState) -> None:
        vtype = s.vector_config()
        _group(s, i.rd, eew, vtype)
        if not store and not i.vm and i.rd == 0:
            s.illegal("a masked load may not write v0")
        base = s.read_x(i.rs1)
        step = s.read_x(i.rs2) if strided else o.const(eew // 8)
        addr_of = lambda e: o.add(base, o.mul(step, o.const(e)))  # noqa: E731
        move = _store_elements if store else _load_elements
        move(o, s, i.rd, eew, addr_of, s.csr_read(VL), vlmax(vtype, s.vlen), i.vm)
        s.vector_done()
    return run


for _w in (8, 16, 32, 64):
    for _n in (f"vle{_w}.v", f"vse{_w}.v", f"vlse{_w}.v", f"vsse{_w}.v"):
        VECTOR_SEMANTICS[_n] = _strided(_n)


def _fault_only_first(name: str) -> VSemantic:
    """Element 0 loads (and traps) as usual; from element 1 on, the first
    active element that would fault sets vl to its index and stops the load."""
    eew = _eew(name)

    def run(i: Any, o: Ops, s: VectorState) -> None:
        vtype = s.vector_config()
        _group(s, i.rd, eew, vtype)
        if not i.vm and i.rd == 0:
            s.illegal("a masked load may not write v0")
        base, vstart, vl = s.read_x(i.rs1), s.csr_read(VSTART), s.csr_read(VL)
        size, alive, new_vl = eew // 8, True, vl
        for e in s.elements(vstart, vl, vlmax(vtype, s.vlen)):
            active = _active(o, s, e, vstart, vl, i.vm)
            addr = o.add(base, o.const(e * size))
            if e > 0:
                ok = s.accessible(active, addr, size)
                new_vl = o.ite(o.both(alive, o.not_(ok)), o.const(e), new_vl)
                alive = o.both(alive, ok)
                active = o.both(active, alive)
            v = s.load_element(e, active, addr, size)
            s.write_v(i.rd, e, eew, o.ite(active, v, s.read_v(i.rd, e, eew)))
        s.set_vector_config(new_vl, vtype)
        s.vector_done()
    return run


for _w in (8, 16, 32, 64):
    VECTOR_SEMANTICS[f"vle{_w}ff.v"] = _fault_only_first(f"vle{_w}ff.v")


# --- whole registers -------------------------------------------------------------------

def _whole(name: str) -> VSemantic:
    """vl<n>re<eew>.v / vs<n>r.v: n registers as EEW elements, vl ignored."""
    store = name.startswith("vs")
    regs = int(name[2])
    eew = 8 if store else _eew(name)

    def run(i: Any, o: Ops, s: VectorState) -> None:
        s.vector_config()
        if i.rd % regs:
            s.illegal(f"v{i.rd} is not aligned to its group of {regs}")
        count = regs * s.vlen // eew
        base = s.read_x(i.rs1)
        addr_of = lambda e: o.add(base, o.const(e * (eew // 8)))  # noqa: E731
        move = _store_elements if store else _load_elements
        move(o, s, i.rd, eew, addr_of, o.const(count), count, 1)
        s.vector_done()
    return run


def _move_whole(name: str) -> VSemantic:
    """vmv<n>r.v: copy n registers, as SEW elements (bytes while vill is set)."""
    regs = int(name[3])

    def run(i: Any, o: Ops, s: VectorState) -> None:
        vtype = s.vector_config()
        if i.rd % regs or i.rs2 % regs:
            s.illegal(f"v{i.rd}, v{i.rs2} not aligned to groups of {regs}")
        eew = 8 if vtype & VILL else sew_of(vtype)
        count = regs * s.vlen // eew
        vstart = s.csr_read(VSTART)
        for e in s.elements(vstart, o.const(count), count):
            active = _active(o, s, e, vstart, o.const(count), 1)
            s.write_v(i.rd, e, eew, o.ite(active, s.read_v(i.rs2, e, eew), s.read_v(i.rd, e, eew)))
        s.vector_done()
    return run


for _r in (1, 2, 4, 8):
    VECTOR_SEMANTICS[f"vs{_r}r.v"] = _whole(f"vs{_r}r.v")
    VECTOR_SEMANTICS[f"vmv{_r}r.v"] = _move_whole(f"vmv{_r}r.v")
    for _w in (8, 16, 32, 64):
        VECTOR_SEMANTICS[f"vl{_r}re{_w}.v"] = _whole(f"vl{_r}re{_w}.v")


# --- splat ---------------------------------------------------------------------------------

def _splat(i: Any, o: Ops, s: VectorState) -> None:
    """vmv.v.i: elements vstart..vl-1 of the group at vd take the sign-extended
    immediate at SEW; tail elements are left undisturbed."""
    vtype = s.vector_config()
    sew = sew_of(vtype)
    _group(s, i.rd, sew, vtype)
    value = o.const(i.imm & ((1 << sew) - 1))
    vstart, vl = s.csr_read(VSTART), s.csr_read(VL)
    for e in s.elements(vstart, vl, vlmax(vtype, s.vlen)):
        active = _active(o, s, e, vstart, vl, 1)
        s.write_v(i.rd, e, sew, o.ite(active, value, s.read_v(i.rd, e, sew)))
    s.vector_done()


VECTOR_SEMANTICS["vmv.v.i"] = _splat
