"""Out-of-order cycle engine: dispatch window, ports, store buffer, predictor, L1/L2/DRAM.

Role: the cost model of profiles with `[engine] kind = "ooo"`; the same
interface as emu.timing.cost.CostModel (an Observer, plus the hooks the block
translator inlines), so the machine and translator host either.

The model, per instruction in program order (all times in cycles):

* dispatch D: in order, at most `issue_width` per cycle, not before the
  front end is ready (`fe`: after a mispredict, a serialising instruction,
  or a taken branch when `taken_ends_group`), and only with room in the
  window: fewer than `rob` instructions not yet retired, fewer than
  `issue_queue` not yet issued, and for a store fewer than `store_buffer`
  stores not yet drained.
* issue I >= D, >= the ready time of every source; on the pipe of its class
  (`[ports]`; 0 pipes = the alu pipes) that is free earliest, lowest pipe
  first.  Pipes are reserved in program order, so a younger instruction may
  take an earlier free cycle than an older one: that is the out-of-order part.
  A pipe is busy 1 cycle (a misaligned access 1 + `misaligned.cost`, an
  unpipelined divide its latency).
* complete C = I + latency: alu/mul/div from `[latency]`; branch and store 1;
  a load by the level code of its line (emu.timing.memhier): L1 `latency.load`; L2
  or DRAM: the level's latency from the cycle its channel is free, which then
  stays busy `line_cycles`; prefetched lines: `latency.load` from the cycle
  the channel is free (bandwidth, not latency); a misaligned access adds
  `misaligned.cost`.  Stores that miss take the line the same way; their data
  may drain only once it is there.
* retire R = max(C, previous R), at most `retire_width` per cycle.  A store
  drains after it retired, one every `store_drain` cycles, in order.
* a mispredicted branch lets the next instruction dispatch `mispredict`
  cycles after the branch issued; the predictor (emu.timing.predictor) says which.

Memory disambiguation is perfect and store-to-load forwarding is not
modelled.  A call's cycles are the retire cycle of its last instruction
(pending stores drain in the background).

The state is kept relative to the last dispatch cycle and pruned of every
time that can no longer delay anything, so it is a finite value: interned
to an int like the in-order state, it lets the translator memoise a block
per (entry state, access codes, branch outcome, prediction).
Imports: emu.timing.cost, emu.insn.decode (Insn only), emu.insn.isa (VECTOR_NAMES), emu.timing.memhier, emu.timing.predictor, emu.timing.profile.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from copygen.emu.timing.cost import DIV_UNIT, insn_class, no_vector_timing, schedule_table, uop
from copygen.emu.insn.decode import Insn
from copygen.emu.insn.isa import VECTOR_NAMES
from copygen.emu.timing.memhier import Hierarchy
from copygen.emu.timing.predictor import make_predictor
from copygen.emu.timing.profile import Profile

MISALIGNED, TAKEN, MISPREDICT = 8, 16, 32   # bits of an instruction's dynamic code
LEVEL = 7                                   # its low bits: the emu.timing.memhier level code
CODE_BITS = 4                               # bits per access in a block's signature

# (slots, fe, regs, rob, iq, ports, sb, l2_free, dram_free, ret_last, ret_count)
RET_LAST = 9


@dataclass(frozen=True, slots=True)
class Engine:
    """A profile's numbers as the step function reads them."""

    width: int
    rob: int
    iq: int
    retire: int
    sb: int
    drain: int
    taken_ends_group: bool
    pipes: dict                  # class -> tuple of pipe indices
    npipes: int
    lat: dict                    # class -> latency
    div_pipelined: bool
    load: int
    l2: tuple[int, int]          # latency, line cycles
    dram: tuple[int, int]
    misaligned: int
    mispredict: int
    taken_bubble: int
    jalr_bubble: int
    serial: int


@lru_cache(maxsize=None)
def engine(p: Profile) -> Engine:
    o = p.ooo
    pipes, n = {}, 0
    for cls, count in o.ports:
        pipes[cls] = tuple(range(n, n + count))
        n += count
    for cls, _ in o.ports:
        pipes[cls] = pipes[cls] or pipes["alu"]
    pipes.update(jal=pipes["branch"], jalr=pipes["branch"], serial=pipes["alu"])
    lat = dict(alu=p.lat_alu, mul=p.lat_mul, div=p.lat_div, load=p.lat_load, store=1, branch=1,
               jal=p.lat_alu, jalr=p.lat_alu, serial=1)
    return Engine(p.issue_width, o.rob, o.issue_queue if 0 < o.issue_queue < o.rob else 0,
                  o.retire_width, o.store_buffer, o.store_drain, o.taken_ends_group, pipes, n, lat,
                  p.div_pipelined, p.lat_load, (o.l2_latency, o.l2_line_cycles),
                  (o.dram_latency, o.dram_line_cycles), p.misaligned_cost, p.mispredict,
                  p.taken_bubble, p.jalr_bubble, p.serial_cost)


def empty_state(e: Engine) -> tuple:
    return (0, 0, (), (), (), ((),) * e.npipes, (), 0, 0, 0, 0)


def _dispatch(state: tuple, cls: str, e: Engine) -> int:
    """Cycle (relative to the last dispatch) the next instruction dispatches."""
    slots, fe, _, rob, iq, _, sb = state[:7]
    t = max(0 if slots < e.width else 1, fe)
    if len(rob) >= e.rob:
        t = max(t, rob[-e.rob])
    if e.iq and len(iq) >= e.iq:
        t = max(t, iq[-e.iq])
    if cls == "store" and len(sb) >= e.sb:
        t = max(t, sb[-e.sb])
    return t


def _pick_pipe(ports: tuple, pipes: tuple, ready: int, occ: int) -> tuple[int, int]:
    """(issue cycle, pipe): the earliest cycle >= ready some pipe is free for occ cycles.

    A pipe's busy cycles are sorted, so one pass finds its earliest free
    window: a busy cycle inside [x, x + occ) moves x past it, the first one
    at or after x + occ ends the search (a misaligned access on a core that
    traps it holds a pipe for hundreds of cycles)."""
    best = None
    for p in pipes:
        x = ready
        for b in ports[p]:
            if b >= x + occ:
                break
            if b >= x:
                x = b + 1
        if best is None or x < best[0]:
            best = (x, p)
    return best


def _memory(code: int, issue: int, chans: list[int], e: Engine) -> int:
    """Cycle the line of an access at `issue` is there (L1: issue); books the channel."""
    level = code & LEVEL
    if not level:
        return issue
    ch = 0 if level in (1, 3) else 1
    lat, occ = e.l2 if ch == 0 else e.dram
    start = max(issue, chans[ch])
    chans[ch] = start + occ
    return start + (lat if level in (1, 2) else 0)


def step(state: tuple, u, code: int, e: Engine) -> tuple[int, tuple]:
    """Dispatch one instruction: (cycles the dispatch point advanced, new state)."""
    slots, fe, regs, rob, iq, ports, sb, l2f, drf, rlast, rcount = state
    cls = u.cls
    t = _dispatch(state, cls, e)
    ready = dict(regs)
    r = t
    for reg, _, _ in u.srcs:
        if reg != DIV_UNIT:
            r = max(r, ready.get(reg, 0))
    if cls == "serial":
        r = max(r, rlast, sb[-1] if sb else 0)
    lat = e.lat[cls]
    occ = lat if cls == "div" and not e.div_pipelined else 1
    if code & MISALIGNED:
        occ += e.misaligned
    issue, pipe = _pick_pipe(ports, e.pipes[cls], r, occ)
    chans = [l2f, drf]
    complete = issue + lat
    line_ready = issue
    if u.mem:
        line_ready = _memory(code, issue, chans, e)
        if cls == "load":
            complete = line_ready + (e.load if code & LEVEL in (0, 3, 4) else 0)
        complete += e.misaligned if code & MISALIGNED else 0
    retire = max(complete, rlast)
    if retire == rlast and rcount >= e.retire:
        retire += 1
    rcount = rcount + 1 if retire == rlast else 1
    fe2, ends = _front_end(cls, code, t, issue, complete, e)
    for reg, _ in u.dsts:
        if reg != DIV_UNIT:
            ready[reg] = complete
    new_sb = tuple(x - t for x in sb if x > t)
    if cls == "store":
        end = max(retire, sb[-1] if sb else 0, line_ready) + e.drain
        new_sb += (end - t,)
    busy = list(ports)
    busy[pipe] = tuple(sorted(set(busy[pipe]) | set(range(issue, issue + occ))))
    nxt = (e.width if ends else (slots if t == 0 else 0) + 1, max(fe2 - t, 0),
           tuple(sorted((g, v - t) for g, v in ready.items() if v > t)),
           tuple(x - t for x in rob if x > t) + (retire - t,),
           tuple(sorted(x - t for x in iq + (issue,) if x > t)) if e.iq else (),
           tuple(tuple(x - t for x in b if x >= t) for b in busy), new_sb,
           max(chans[0] - t, 0), max(chans[1] - t, 0), retire - t, rcount)
    return t, nxt


def _front_end(cls: str, code: int, t: int, issue: int, complete: int, e: Engine) -> tuple[int, bool]:
    """(earliest next dispatch, whether this instruction ends its dispatch group)."""
    if cls == "branch":
        if code & MISPREDICT:
            return issue + e.mispredict, True
        if code & TAKEN:
            return t + 1 + e.taken_bubble, e.taken_ends_group
        return 0, False
    if cls == "jal":
        return t + 1 + e.taken_bubble, e.taken_ends_group
    if cls == "jalr":
        return t + 1 + e.jalr_bubble, e.taken_ends_group
    if cls == "serial":
        return complete + e.serial, True
    return 0, False


class OooCostModel:
    """Cycle accounting for one machine with an out-of-order profile."""

    kind = "ooo"

    def __init__(self, p: Profile) -> None:
        self.profile = p
        self.engine = engine(p)
        self.cache = Hierarchy(p)
        o = p.ooo
        self.predictor = make_predictor(o.predictor, o.predictor_entries, o.predictor_history)
        self.table = schedule_table(p)
        self.states = self.table.states
        self.hart = None   # set by the machine: the pc of a branch, for the predictor
        self.code = 0      # level code of the access the current instruction made
        self.reset()

    def reset(self) -> None:
        self.state = self.intern(empty_state(self.engine))
        self.issue_cycles = 0
        self.stall_cycles = 0
        self.misaligned = 0
        self.code = 0

    @property
    def cycles(self) -> int:
        return self.issue_cycles + self.stall_cycles + self.states[self.state][RET_LAST]

    def intern(self, state: tuple) -> int:
        return self.table.intern(state)

    def step(self, sid: int, insn: Insn, code: int) -> tuple[int, int]:
        """(cycles, next state id) for one instruction with its dynamic code (memoised)."""
        return self.table.step(sid, insn, code, self._step)

    def _step(self, state: tuple, insn: Insn, code: int) -> tuple[int, tuple]:
        return step(state, uop(insn, self.profile), code, self.engine)

    def mispredicted(self, pc: int, backward: bool, taken: bool) -> int:
        return self.predictor.mispredicted(pc, backward, taken)

    def on_insn(self, insn: Insn, taken: bool) -> None:
        cls = insn_class(insn.name)
        code = 0
        if cls == "serial" and insn.name in VECTOR_NAMES:
            no_vector_timing(self.profile, insn)
        if cls in ("load", "store"):
            code, self.code = self.code, 0
        elif cls == "branch":
            code = TAKEN * taken | MISPREDICT * self.mispredicted(self.hart.pc, insn.imm < 0, taken)
        elif cls in ("jal", "jalr"):
            code = TAKEN
        adv, self.state = self.step(self.state, insn, code)
        self.issue_cycles += adv

    def fold(self, insns, sig: int) -> None:
        """Account for straight-line instructions whose accesses are coded in `sig`."""
        j = 0
        for insn in insns:
            code = 0
            if insn_class(insn.name) in ("load", "store"):
                code, j = (sig >> (CODE_BITS * j)) & 15, j + 1
            adv, self.state = self.step(self.state, insn, code)
            self.issue_cycles += adv

    def access(self, addr: int, size: int, store: int) -> None:
        """Level code of a permitted access (cache lines touched, misalignment)."""
        c = self.cache
        first, last = addr >> c.line_shift, (addr + size - 1) >> c.line_shift
        code = 0
        for line in (first, last) if first != last else (first,):
            if c.mru[line & c.set_mask] != line:
                code = max(code, c.touch(line, store))
        if addr & (size - 1):
            self.misaligned += 1
            code |= MISALIGNED
        self.code = code

    def on_fault(self) -> None:
        """A fault resumed at its fixup: what is in flight retires, then the trap."""
        self.stall_cycles += self.profile.fault_cost + self.states[self.state][RET_LAST]
        self.state = self.intern(empty_state(self.engine))
        self.code = 0
