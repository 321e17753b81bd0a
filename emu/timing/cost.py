"""Cycle cost engine: an in-order issue model plus an L1 D-cache, driven by a profile.

Role: turns the instruction stream into cycles, apart from the semantics, for
profiles with `[engine] kind = "inorder"` (the default; u74, x60).  Out-of-order
profiles use emu.timing.ooo, which shares this module's instruction classes, `uop`,
`Cache` and the per-profile `ScheduleTable`.  Two parts:

* Static schedule.  `schedule(state, uop, taken)` is a *pure* function: the
  issue state (slots and memory slots used in the current cycle, cycles until
  each pending register result is ready) and one instruction give the cycles
  the issue point advanced and the next state.  States are interned to small
  ints so the block translator can memoise a whole block per (entry state,
  branch outcome) and get exactly the cycles the per-instruction reference
  path gets.  Register 32 is a pseudo-register for an unpipelined divider.
* Vector instructions (profiles with a `[vector]` section): timed by
  emu.timing.vcost, whose occupancy depends on the bytes the access moved, so the
  schedule's dynamic outcome for them is that beat count instead of a
  branch outcome.  A profile without `[vector]` refuses to time them.
* Dynamic costs, added as stall cycles that freeze the whole pipeline (so they
  do not change the issue state): L1 D-cache misses (LRU sets, write-allocate),
  misaligned accesses (firmware trap on u74, a small penalty on x60), and
  taken `__ex_table` faults (trap entry, table search, return).

Profiles are TOML data (`emu/profiles/*.toml`, see `emu.timing.profile`).
Imports: emu.insn.decode (Insn only), emu.insn.isa (VECTOR_NAMES), emu.timing.profile, emu.timing.vcost, emu.errors.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

from copygen.emu.insn.decode import Insn
from copygen.emu.errors import ProfileError
from copygen.emu.insn.isa import VECTOR_NAMES
from copygen.emu.timing.profile import Profile
from copygen.emu.timing.vcost import access_beats, vector_class, vector_uop_parts

DIV_UNIT = 32

_CLASS = {}
for _n in "lb lh lw ld lbu lhu lwu".split():
    _CLASS[_n] = "load"
for _n in "sb sh sw sd".split():
    _CLASS[_n] = "store"
for _n in "beq bne blt bge bltu bgeu".split():
    _CLASS[_n] = "branch"
for _n in "mul mulh mulhu mulhsu mulw".split():
    _CLASS[_n] = "mul"
for _n in "div divu rem remu divw divuw remw remuw".split():
    _CLASS[_n] = "div"
for _n in "csrrw csrrs csrrc csrrwi csrrsi csrrci fence fence.i ecall ebreak wfi".split():
    _CLASS[_n] = "serial"
_CLASS.update(jal="jal", jalr="jalr")
# Vector instructions: serialising for the out-of-order engine, which has no
# vector timing; the in-order engine times them by emu.timing.vcost (see `uop`).
# The translator leaves them to the reference step.
for _n in VECTOR_NAMES:
    _CLASS[_n] = "serial"


def insn_class(name: str) -> str:
    return _CLASS.get(name, "alu")


@dataclass(frozen=True, slots=True)
class Uop:
    """What the scheduler needs to know about one instruction."""

    cls: str
    srcs: tuple[tuple[int, int, int], ...]  # (register, cycles it is needed late,
    #                                          the same when a load produced it)
    dsts: tuple[tuple[int, int], ...]  # (register, latency)
    cls_load: bool
    mem: int
    backward: bool
    late_ok: bool  # a simple ALU op or branch: may read its operands in the late stage


_NO_RS1 = frozenset("lui auipc jal csrrwi csrrsi csrrci fence fence.i ecall ebreak wfi vsetivli".split())
_RS2_IMM = frozenset("addi andi ori xori slli srli srai slti sltiu addiw slliw srliw sraiw".split())


def _reads_rs2(i: Insn, cls: str) -> bool:
    if cls in ("store", "branch", "mul", "div"):
        return True
    return cls == "alu" and i.name not in _RS2_IMM and i.name not in ("lui", "auipc")


@lru_cache(maxsize=None)
def _uop(i: Insn, p: Profile) -> Uop:
    cls = insn_class(i.name)
    srcs: list[tuple[int, int, int]] = []
    if i.rs1 and i.name not in _NO_RS1:
        srcs.append((i.rs1, 0, 0))
    if i.rs2 and _reads_rs2(i, cls):
        if cls == "store":  # store data: read late, but a load's result reaches it later
            srcs.append((i.rs2, p.store_data_late, p.lat_load - p.load_to_store))
        else:
            srcs.append((i.rs2, 0, 0))
    lat = {"load": p.lat_load, "mul": p.lat_mul, "div": p.lat_div}.get(cls, p.lat_alu)
    dsts: list[tuple[int, int]] = []
    if cls == "div" and not p.div_pipelined:
        srcs.append((DIV_UNIT, 0, 0))
        dsts.append((DIV_UNIT, p.lat_div))
    if i.rd and cls not in ("store", "branch") and (i.name not in VECTOR_NAMES or i.name.startswith("vset")):
        dsts.append((i.rd, lat))
    late_ok = p.alu_late > 0 and cls in ("alu", "branch")
    return Uop(cls, tuple(srcs), tuple(dsts), cls == "load", int(cls in ("load", "store")),
               i.imm < 0, late_ok)


def _vector_uop(i: Insn, p: Profile, beats: int) -> Uop:
    cls, srcs, dsts = vector_uop_parts(i, p, beats)
    return Uop(cls, srcs, dsts, False, 0, False, False)


def uop(i: Insn, p: Profile, dyn: int = 0) -> Uop:
    """The instruction's Uop; `dyn` is a vector access's beat count."""
    if p.vector is not None and i.name in VECTOR_NAMES:
        return _vector_uop(i, p, dyn)
    return _uop(i, p)


EMPTY_STATE = (0, 0, ())


def schedule(state: tuple, u: Uop, taken: bool, p: Profile) -> tuple[int, tuple]:
    """Advance the issue model by one instruction: (cycles advanced, new state).

    `pend` holds, per register, the cycles until its value is ready for an
    early-stage reader (address generation, store data, multiplier).  A simple
    ALU op or branch whose operands are not ready there may still issue and
    execute `alu_late` cycles later in the late ALU (SiFive-7's AG/M2
    pipeline); its own result then reaches early-stage readers `alu_late`
    cycles later than usual."""
    slots, mem, pend = state
    ready = {reg: (c, by_load) for reg, c, by_load in pend}
    early = 0
    for reg, late, late_load in u.srcs:
        c, by_load = ready.get(reg, (0, False))
        early = max(early, c - (late_load if by_load else late))
    if u.cls == "serial":
        early = max(early, max((c for c, _ in ready.values()), default=0))
    need = early - p.alu_late if u.late_ok else early
    if need <= 0 and (slots >= p.issue_width or mem + u.mem > p.mem_pipes):
        need = 1
    adv = max(need, 0)
    if adv:
        slots = mem = 0
    slots, mem = slots + 1, mem + u.mem
    extra = p.alu_late if early > adv else 0  # executed in the late stage
    bubble, redirect = _control_bubble(u, taken, p)
    step = adv + bubble
    if step or u.dsts:
        ready = {r: (c - step, b) for r, (c, b) in ready.items() if c - step > 0}
        for reg, lat in u.dsts:
            if lat + extra - bubble > 0:
                ready[reg] = (lat + extra - bubble, u.cls_load)
    if redirect:
        slots = p.issue_width  # the next instruction starts a new cycle
    return step, (slots, mem, tuple(sorted((r, c, b) for r, (c, b) in ready.items())))


def _control_bubble(u: Uop, taken: bool, p: Profile) -> tuple[int, bool]:
    """(bubble cycles, whether fetch was redirected so the issue group ends)."""
    if u.cls == "branch":
        if taken != u.backward:  # static prediction: backward taken, forward not
            return p.mispredict, True
        return (p.taken_bubble, True) if taken else (0, False)
    if u.cls == "jal":
        return p.taken_bubble, True
    if u.cls == "jalr":
        return p.jalr_bubble, True
    if u.cls == "serial":
        return p.serial_cost, True
    return 0, False


class Cache:
    """Set-associative LRU L1 D-cache, write-allocate.

    Each set is a dict line -> time of last use (from one shared counter);
    `mru[set]` is that set's most recent line, so an access to it needs no
    update at all.  The translator inlines both tests (MRU, then hit), and
    calls `touch` only on a miss.  `reset` works in place: translated code
    holds these lists."""

    def __init__(self, p: Profile) -> None:
        self.line_shift = p.cache_line.bit_length() - 1
        self.nsets = p.cache_size // (p.cache_line * p.cache_ways)
        self.set_mask = self.nsets - 1
        self.ways = p.cache_ways
        self.load_miss, self.store_miss = p.miss_load, p.miss_store
        self.sets: list[dict[int, int]] = [{} for _ in range(self.nsets)]
        self.mru: list[int] = [-1] * self.nsets
        self.tick = itertools.count()
        self.misses = 0

    def reset(self) -> None:
        for lines in self.sets:
            lines.clear()
        self.mru[:] = [-1] * self.nsets
        self.misses = 0

    def touch(self, line: int, store: int) -> int:
        """Access one line; returns the stall cycles (0 on a hit)."""
        if self.lookup(line):
            return 0
        return self.store_miss if store else self.load_miss

    def lookup(self, line: int) -> bool:
        """Access one line, filling it on a miss (LRU victim); True on a hit."""
        idx = line & self.set_mask
        lines = self.sets[idx]
        self.mru[idx] = line
        if line in lines:
            lines[line] = next(self.tick)
            return True
        if len(lines) >= self.ways:
            del lines[min(lines, key=lines.__getitem__)]
        lines[line] = next(self.tick)
        self.misses += 1
        return False


class ScheduleTable:
    """Interned issue states and the memo of `schedule`, shared by every
    machine with the same profile: state ids mean the same thing on all of
    them, so translated blocks can share their (entry state, taken) memo."""

    def __init__(self) -> None:
        self.states: list[tuple] = []
        self.state_ids: dict[tuple, int] = {}
        self.memo: dict[tuple, tuple[int, int]] = {}

    def intern(self, state: tuple) -> int:
        sid = self.state_ids.get(state)
        if sid is None:
            sid = self.state_ids[state] = len(self.states)
            self.states.append(state)
        return sid

    def step(self, sid: int, insn: Insn, dyn: int, advance) -> tuple[int, int]:
        """(cycles, next state id) for one instruction from state `sid` with its
        dynamic outcome `dyn` (memoised; `raw` determines the instruction);
        `advance(state, insn, dyn)` is the engine's step on a miss."""
        key = (sid, insn.raw, dyn)
        hit = self.memo.get(key)
        if hit is None:
            adv, nxt = advance(self.states[sid], insn, dyn)
            hit = self.memo[key] = (adv, self.intern(nxt))
        return hit


_TABLES: dict[Profile, ScheduleTable] = {}
_STATE_LIMIT = 200_000  # states per table; a new Machine then starts a fresh one


def schedule_table(p: Profile) -> ScheduleTable:
    """The profile's table for a new Machine.  A long sweep of an out-of-order
    profile can intern many states: past the limit new Machines get a fresh
    table, and the old one lives as long as the Machines that hold it."""
    table = _TABLES.get(p)
    if table is None or len(table.states) > _STATE_LIMIT:
        table = _TABLES[p] = ScheduleTable()
    return table


# profiles shipped with a [vector] section, named in the refusal below
VECTOR_PROFILES = ("x60", "x280")


def no_vector_timing(p: Profile, insn: Insn) -> None:
    """Refuse to time a vector instruction on a profile without [vector]:
    charging it as a scalar one would make any vector/scalar comparison meaningless."""
    raise ProfileError(f"profile {p.name} has no [vector] section, so it cannot time {insn.name}; "
                       f"bench vector code with a vector profile ({', '.join(VECTOR_PROFILES)})")


class CostModel:
    """Cycle accounting for one machine: issue state, cache, stall counters.
    `hart` (set by emu.api.Machine) is read, never written, to size vector
    accesses."""

    kind = "inorder"

    def __init__(self, p: Profile) -> None:
        self.profile = p
        self.hart = None
        self.cache = Cache(p)
        self.table = schedule_table(p)
        self.states = self.table.states
        self.reset()

    def reset(self) -> None:
        self.state = self.intern(EMPTY_STATE)
        self.issue_cycles = 0
        self.stall_cycles = 0
        self.misaligned = 0

    @property
    def cycles(self) -> int:
        return self.issue_cycles + self.stall_cycles + 1

    def intern(self, state: tuple) -> int:
        return self.table.intern(state)

    def step(self, sid: int, insn: Insn, dyn: int) -> tuple[int, int]:
        """(cycles, next state id) for one instruction from state `sid` (memoised);
        `dyn`: whether a branch was taken, or a vector access's beats."""
        return self.table.step(sid, insn, dyn, self._schedule)

    def _schedule(self, state: tuple, insn: Insn, dyn: int) -> tuple[int, tuple]:
        u = uop(insn, self.profile, dyn)
        return schedule(state, u, bool(dyn) and u.cls in ("branch", "jal", "jalr"), self.profile)

    def on_insn(self, insn: Insn, taken: bool) -> None:
        dyn = self._vector_beats(insn) if insn.name in VECTOR_NAMES else taken
        adv, self.state = self.step(self.state, insn, dyn)
        self.issue_cycles += adv

    def _vector_beats(self, insn: Insn) -> int:
        """The beats a vector access moved (0 for other vector instructions),
        read from the hart after it ran; the profile must time vectors."""
        p = self.profile
        if p.vector is None:
            no_vector_timing(p, insn)
        if vector_class(insn.name) not in ("vload", "vstore"):
            return 0
        v = self.hart.v
        return access_beats(insn, self.hart.x, v.vl, v.vlenb, p.vector)

    def access(self, addr: int, size: int, store: int) -> None:
        """Dynamic cost of a permitted access (cache lines touched, misalignment)."""
        c = self.cache
        first, last = addr >> c.line_shift, (addr + size - 1) >> c.line_shift
        for line in (first, last) if first != last else (first,):
            if c.mru[line & c.set_mask] != line:
                self.stall_cycles += c.touch(line, store)
        if addr & (size - 1):
            self.misaligned += 1
            self.stall_cycles += self._misaligned_cost()

    def _misaligned_cost(self) -> int:
        """A vector element's by the profile's [vector] misaligned (its beats
        already count the extra beat a misaligned range spans), else the
        scalar [misaligned] cost."""
        vec = self.profile.vector
        if vec is not None and vec.misaligned is not None and \
                getattr(self.hart, "vector_element", False):
            return vec.misaligned
        return self.profile.misaligned_cost

    def on_fault(self) -> None:
        """A fault resumed at its fixup: trap round trip, pipeline drained."""
        self.stall_cycles += self.profile.fault_cost
        self.state = self.intern(EMPTY_STATE)
