"""Vector instruction timing for the in-order cost engine (emu.timing.cost).

Role: what a profile's `[vector]` section makes of one vector instruction,
kept apart from the semantics (emu.insn.vsemantics) and from the scalar rules.
Three kinds are timed, the rest stay serialising as emu.timing.cost charges them:

* `vset`: vsetvli/vsetivli/vsetvl, an ALU-like op whose result (rd and the
  new vl/vtype, pseudo-register VL_REG) is ready `vset_latency` later.
* `vload`/`vstore`: unit-stride (also fault-only-first and whole-register)
  and strided accesses.  The unit they run in (LOAD_UNIT, and STORE_UNIT
  when the profile's `units` is "split") is a pseudo-register held busy for
  the access's occupancy, as emu.timing.cost holds an unpipelined divider; a
  vector register group is a pseudo-register (VREG + its first register)
  that a load writes and a store reads.

Cost by bytes moved.  A unit-stride access of `b` bytes at address `a`
moves the DLEN-wide beats that [a, a+b) spans (one more when it straddles a
beat boundary; a strided access moves one element a beat).  The profile's
tables give cycles per LMUL for a whole register group, LMUL·VLEN/DLEN
beats (at least one); an access of fewer beats costs the column of the
smallest group that holds them, an access of more (a misaligned whole
group) the last column plus one cycle per extra beat:

    beats:   1    1    1    2    4    8    16     (X60: VLEN 256, DLEN 128)
    column:  mf8  mf4  mf2  m1   m2   m4   m8
    load:    3    3    3    3    4    8    16     -> 40 bytes aligned = 3 beats -> m2 -> 4

The in-order issue model makes a vector instruction wait at issue for its
unit and operands: no vector command queue is modelled.
Imports: emu.insn.decode (Insn), emu.timing.profile.
"""

from __future__ import annotations

import re
from functools import lru_cache

from copygen.emu.insn.decode import Insn
from copygen.emu.timing.profile import LMULS, Profile, VectorConfig

VL_REG = 33        # pseudo-register: vl and vtype as the last vset* wrote them
LOAD_UNIT = 34     # pseudo-register: the vector load (or load/store) unit
STORE_UNIT = 35    # pseudo-register: the vector store unit of a "split" profile
VREG = 64          # pseudo-registers 64..95: v0..v31 (a group by its first register)

_UNIT = re.compile(r"v(l|s)e(\d+)(ff)?\.v$")           # vle8.v vle8ff.v vse8.v
_WHOLE = re.compile(r"v(?:l(\d)re(\d+)|s(\d)r)\.v$")   # vl8re8.v vs8r.v
_STRIDED = re.compile(r"v(l|s)se(\d+)\.v$")            # vlse8.v vsse8.v
# LMUL of each table column, as (numerator, denominator)
_LMUL_FRACTION = {"mf8": (1, 8), "mf4": (1, 4), "mf2": (1, 2), "m1": (1, 1), "m2": (2, 1),
                  "m4": (4, 1), "m8": (8, 1)}


def vector_class(name: str) -> str:
    """`vset`, `vload`, `vstore`, or `serial` (a vector op without a timing row)."""
    if name.startswith("vset"):
        return "vset"
    for pattern in (_UNIT, _STRIDED):
        m = pattern.match(name)
        if m:
            return "vload" if m.group(1) == "l" else "vstore"
    m = _WHOLE.match(name)
    if m:
        return "vload" if m.group(1) else "vstore"
    return "serial"


def full_beats(cfg: VectorConfig) -> tuple[int, ...]:
    """Beats of a whole register group per table column (at least one)."""
    return tuple(max(1, cfg.vlen * num // den // cfg.dlen) for num, den in
                 (_LMUL_FRACTION[m] for m in LMULS))


def occupancy(table: tuple[int, ...], beats: int, cfg: VectorConfig) -> int:
    """Cycles of an access of `beats` beats by one of the profile's tables."""
    full = full_beats(cfg)
    for cycles, group in zip(table, full):
        if beats <= group:
            return cycles
    return table[-1] + beats - full[-1]


def span_beats(addr: int, nbytes: int, cfg: VectorConfig) -> int:
    """DLEN-aligned beats that [addr, addr + nbytes) touches."""
    if nbytes <= 0:
        return 0
    width = cfg.dlen // 8
    return (addr + nbytes - 1) // width - addr // width + 1


def access_beats(insn: Insn, x: list[int], vl: int, vlenb: int, cfg: VectorConfig) -> int:
    """Beats the access `insn` just made, from the registers after it ran
    (x: the integer registers, vl as the access left it: an ff load trims it)."""
    m = _STRIDED.match(insn.name)
    if m:
        return vl
    m = _WHOLE.match(insn.name)
    if m:
        nregs = int(m.group(1) or m.group(3))
        return span_beats(x[insn.rs1], nregs * vlenb, cfg)
    m = _UNIT.match(insn.name)
    assert m, f"no beat rule for {insn.name}"
    return span_beats(x[insn.rs1], vl * int(m.group(2)) // 8, cfg)


def _table(name: str, cfg: VectorConfig) -> tuple[int, ...]:
    if vector_class(name) == "vstore":
        return cfg.store
    return cfg.load_ff if name.endswith("ff.v") else cfg.load


@lru_cache(maxsize=None)
def vector_uop_parts(insn: Insn, p: Profile, beats: int) -> tuple[str, tuple, tuple]:
    """(class, sources, destinations) of a vector instruction for emu.timing.cost's
    `Uop`: sources as (register, 0, 0), destinations as (register, cycles)."""
    cfg = p.vector
    assert cfg is not None, "vector timing asked of a profile without [vector]"
    cls = vector_class(insn.name)
    if cls == "vset":
        srcs = [(insn.rs1, 0, 0)] if insn.rs1 and insn.name != "vsetivli" else []
        if insn.name == "vsetvl":
            srcs.append((insn.rs2, 0, 0))
        dsts = [(VL_REG, cfg.vset_latency)] + ([(insn.rd, cfg.vset_latency)] if insn.rd else [])
        return cls, tuple(srcs), tuple(dsts)
    if cls == "serial":
        return cls, (), ()
    unit = STORE_UNIT if cls == "vstore" and cfg.units == "split" else LOAD_UNIT
    srcs = [(insn.rs1, 0, 0), (VL_REG, 0, 0), (unit, 0, 0)]
    if _STRIDED.match(insn.name):
        srcs.append((insn.rs2, 0, 0))
    if not insn.vm:
        srcs.append((VREG, 0, 0))                 # the mask in v0
    busy = occupancy(_table(insn.name, cfg), beats, cfg)
    if cls == "vstore":
        return cls, tuple(srcs + [(VREG + insn.rd, 0, 0)]), ((unit, busy),)
    column = full_beats(cfg)
    latency = next((lat for lat, g in zip(cfg.load_latency, column) if beats <= g), cfg.load_latency[-1])
    return cls, tuple(srcs), ((VREG + insn.rd, latency), (unit, busy))
