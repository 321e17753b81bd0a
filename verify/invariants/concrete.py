"""Concrete runs of one routine in the emulator, under the same contract the
proofs use: buffers at chosen addresses, the user buffer's pages from the
fault boundary onwards unmapped, margins around dst to catch stray stores.

Used to sample loop-head states (invariant inference), to replay
counterexamples, and by the bounded exhaustive cross-check.
An entry point that runs with SUM held (verify.contract.clauses.holds_sum) is
called with SUM set, and S1 asks that it be set at exit too.
Role: scenario in, outcome and per-clause verdicts out.  May import emu,
verify.contract.clauses, verify.contract.rules.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from copygen.emu.api import Machine
from copygen.emu.errors import Oops, StepLimit
from copygen.emu.hart.machine import SR_SUM, SSTATUS
from copygen.emu.insn.decode import ABI
from copygen.verify.contract.clauses import OVERLAP_KINDS, holds_sum
from copygen.verify.contract.rules import breaks

PAGE = 4096
MARGIN = 2 * PAGE
USER_SIDE = {"to": "dst", "from": "src", "clear": "dst"}


@dataclass
class Scenario:
    kind: str
    D: int
    S: int
    N: int
    src: bytes = b""
    dst0: bytes = b""
    C: int = 0
    F: int | None = None      # first inaccessible address in the user buffer

    @property
    def U(self) -> int:
        return self.S if USER_SIDE.get(self.kind) == "src" else self.D

    def initial(self, addr: int, n: int) -> bytes:
        """What memory outside dst held at [addr, addr+n) before the call:
        padding, and the source bytes where the range meets src (only
        memmove's src can be that close to dst)."""
        out = bytearray(b"\xee" * n)
        lo, hi = max(addr, self.S), min(addr + n, self.S + len(self.src))
        if lo < hi:
            out[lo - addr:hi - addr] = self.src[lo - self.S:hi - self.S]
        return bytes(out)

    @property
    def shared(self) -> bool:
        """memmove's buffers near enough to overlap (or share margins): one
        region holds both, and dst starts as what that region holds."""
        return self.kind in OVERLAP_KINDS and abs(self.D - self.S) < self.N + 4 * MARGIN

    def source_byte(self, addr: int) -> int:
        """What the byte at addr held at the call, near src: a source byte,
        or the padding around it (memmove's shared region pads like dst)."""
        i = addr - self.S
        if 0 <= i < self.N:
            return self.src[i]
        return 0xEE if self.shared else 0xDD

    def dst_before(self) -> bytes:
        """dst as it was before the call (memmove's may hold source bytes)."""
        return self.initial(self.D, self.N) if self.shared else self.dst0

    def expected(self) -> bytes:
        if self.kind == "clear":
            return bytes(self.N)
        if self.kind == "memset":
            return bytes([self.C & 0xFF]) * self.N
        return self.src[:self.N]


@dataclass
class Outcome:
    ret: int = 0
    sum_at_entry: bool = False
    sum_at_exit: bool = False
    callee_ok: bool = True
    dst: bytes = b""
    before: bytes = b""        # MARGIN bytes below dst as found after the call
    after: bytes = b""         # MARGIN bytes past dst + n
    error: str | None = None   # oops / step limit
    error_kind: str | None = None  # Oops | StepLimit | BadJump (a fetch outside the code)
    snapshots: list = field(default_factory=list)
    init: tuple = ()           # the registers at the entry
    faults: list = field(default_factory=list)  # each fault resumed at its fixup
    vstart: int = 0            # the vector unit's vstart at the return
    loads: list | None = None  # (address, size) of every load, when recorded
    rule_breaks: list | None = None  # R1: what broke the register rules, when given


class LoadRecorder:
    """Records a run's loads: an observer of the machine (emu.hart.observer)."""

    def __init__(self):
        self.loads: list[tuple[int, int]] = []

    def access(self, addr: int, size: int, store: int) -> None:
        if not store:
            self.loads.append((addr, size))

    def on_insn(self, insn, taken: bool) -> None:
        pass

    def on_fault(self) -> None:
        pass


class RuleRecorder:
    """Records each instruction of a run that breaks the register rules
    (verify.contract.rules.breaks): an observer of the machine."""

    def __init__(self, rules):
        self.rules, self.breaks = rules, []

    def access(self, addr: int, size: int, store: int) -> None:
        pass

    def on_insn(self, insn, taken: bool) -> None:
        why = breaks(insn, self.rules)
        if why is not None:
            self.breaks.append(why)

    def on_fault(self) -> None:
        pass


def _region(m: Machine, base: int, size: int, user: bool, fill: bytes, pad: int) -> None:
    lo = (base - MARGIN) & ~(PAGE - 1)
    hi = (base + size + MARGIN + PAGE - 1) & ~(PAGE - 1)
    m.map(lo, hi - lo, user=user)
    m.write(lo, bytes([pad]) * (hi - lo))
    m.write(base, fill)


def setup(image, sc: Scenario, vlen: int | None = None) -> Machine:
    m = Machine(image, vlen=vlen)
    if sc.shared:
        lo = min(sc.D, sc.S)
        size = max(sc.D, sc.S) + sc.N - lo
        _region(m, lo, size, False, sc.initial(lo, size), 0xEE)
        return m
    side = USER_SIDE.get(sc.kind)
    _region(m, sc.D, sc.N, side == "dst", sc.dst0, 0xEE)
    if sc.kind in ("to", "from", "memcpy", *OVERLAP_KINDS):
        _region(m, sc.S, sc.N, side == "src", sc.src, 0xDD)
    if sc.F is not None:
        end = (sc.U + sc.N + MARGIN + PAGE - 1) & ~(PAGE - 1)
        m.unmap(sc.F, end - sc.F)
    return m


def args_for(sc: Scenario) -> tuple:
    if sc.kind == "clear":
        return (sc.D, sc.N)
    if sc.kind == "memset":
        return (sc.D, sc.C, sc.N)
    return (sc.D, sc.S, sc.N)


# T1's bound, concretely: a run of n bytes that has not returned after this
# many instructions does not terminate within a bound linear in n (the
# routines here retire at most ~6 per byte and a few hundred around that)
STEPS_BASE, STEPS_PER_BYTE = 4096, 64


def step_bound(n: int) -> int:
    return STEPS_BASE + STEPS_PER_BYTE * n


def run(image, symbol: str, sc: Scenario, trace_pcs=(), max_steps: int | None = None,
        record_loads: bool = True, rules=None, vlen: int | None = None,
        vector_at_entry: bool = False) -> Outcome:
    """One call under the scenario; every load is recorded (B2, B2s) unless
    `record_loads` is off, and a run past `max_steps` (default step_bound(n))
    ends with error_kind StepLimit: a T1 counterexample.  With register
    `rules` (verify.contract.rules) every instruction that breaks them is
    recorded, and a reserved register changed at the return (R1).  A vector
    routine runs at `vlen`, with sstatus.VS on (`vector_at_entry`) as inside
    the kernel's vector section."""
    max_steps = step_bound(sc.N) if max_steps is None else max_steps
    m = setup(image, sc, vlen)
    hart, out = m.hart, Outcome(sum_at_entry=holds_sum(symbol))
    out.init = m.start_call(symbol, *args_for(sc), sum_at_entry=out.sum_at_entry,
                            vector_at_entry=vector_at_entry)
    if record_loads:
        recorder = LoadRecorder()
        m.attach(recorder)
        out.loads = recorder.loads
    if rules:
        watch = RuleRecorder(rules)
        m.attach(watch)
        out.rule_breaks = watch.breaks
    try:
        m.run_watched(max_steps, set(trace_pcs), lambda pc: out.snapshots.append(
            (pc, tuple(hart.x), hart.csrs[SSTATUS], _read_dst(m, sc))))
    except (Oops, StepLimit) as err:
        out.error, out.error_kind = str(err), type(err).__name__
        if isinstance(err, Oops) and err.cause.startswith("fetch"):
            out.error_kind = "BadJump"
    out.faults = list(hart.faults)
    out.ret = hart.x[10]
    out.sum_at_exit = bool(hart.csrs[SSTATUS] & SR_SUM)
    out.callee_ok = m.callee_saved_kept(out.init)
    out.vstart = hart.v.vstart
    if rules:
        out.rule_breaks += [f"{ABI[r]} changed at the return" for r in rules.reserved_numbers
                            if hart.x[r] != out.init[r]]
    out.dst = _read_dst(m, sc)
    out.before = _read(m, sc.D - MARGIN, MARGIN)
    out.after = _read(m, sc.D + sc.N, MARGIN)
    return out


def loads_outside(sc: Scenario, loads, strict: bool = False) -> list[tuple[int, int]]:
    """The (address, size) of a run's loads near the buffers (within MARGIN
    of dst or src; the stack and the code's literals are elsewhere) that
    leave the aligned words covering [src, src+n), or with `strict`
    [src, src+n) itself; with n == 0 every one of them."""
    n = sc.N
    lo, hi = (sc.S, sc.S + n) if strict else (sc.S & ~7, (sc.S + n + 7) & ~7)
    return [(a, k) for a, k in loads
            if any(b - MARGIN <= a < b + n + MARGIN for b in (sc.D, sc.S))
            and not (n > 0 and lo <= a and a + k <= hi)]


def _loads_ok(sc: Scenario, loads) -> tuple[bool, bool]:
    """(B2, B2s) of a run: no load near the buffers leaves the source."""
    return not loads_outside(sc, loads), not loads_outside(sc, loads, strict=True)


def _pages(m: Machine, addr: int, n: int, fill: bytes) -> bytes:
    """[addr, addr+n) page by page (pages are mapped whole); a page that is
    not mapped (past the fault boundary: untouched) reads as `fill`'s bytes
    there."""
    out = bytearray()
    a = addr
    while a < addr + n:
        end = min(addr + n, (a | (PAGE - 1)) + 1)
        try:
            out += m.read(a, end - a)
        except Exception:
            out += fill[a - addr:end - addr]
        a = end
    return bytes(out)


def _read(m: Machine, addr: int, n: int) -> bytes:
    return _pages(m, addr, n, b"\xee" * n)


def _read_dst(m: Machine, sc: Scenario) -> bytes:
    """dst as the routine left it; bytes on inaccessible pages are untouched."""
    return _pages(m, sc.D, sc.N, sc.dst0)


def verdicts(sc: Scenario, out: Outcome, string: bool = False) -> dict[str, bool]:
    """Each contract clause, judged on one concrete run."""
    exp, n = sc.expected(), sc.N
    v = {"X1": out.error_kind != "Oops", "T1": out.error_kind != "StepLimit"}
    if out.error_kind == "BadJump":
        # control left the code: a return to anything but the entry's ra
        v["A1"] = False
    if out.rule_breaks is not None:      # what ran before an oops ran
        v["R1"] = not out.rule_breaks
    if out.error:
        if string:      # no X1 for these: a run that oopses does not do the job
            v["C1"] = False
        return v
    v["S1"] = out.sum_at_exit == out.sum_at_entry
    v["S2"] = not any("SUM clear" in f.cause for f in out.faults)
    v["A1"] = out.callee_ok
    v["B1"] = out.before == sc.initial(sc.D - MARGIN, MARGIN) and \
        out.after == sc.initial(sc.D + n, MARGIN)
    if out.loads is not None:
        v["B2"], v["B2s"] = _loads_ok(sc, out.loads)
    if string:
        v["C1"] = out.ret == sc.D and out.dst == exp
        return v
    if sc.F is None:
        v["C1"] = out.ret == 0 and out.dst == exp
        return v
    r = out.ret
    v["C2"] = 0 <= r <= n
    if not v["C2"]:
        return v
    v["C3"] = out.dst[:n - r] == exp[:n - r]
    v["C4"] = out.dst[n - r:] == sc.dst0[n - r:]
    v["C5"] = r != n or sc.F == sc.U
    v["C6"] = v["C3"] and v["C4"]
    return v
