"""The emulator's public Python API: `Machine` and `CallResult`.

Role: load a linked ELF, map user/kernel regions, read and write memory, and
`call` a routine under the RV64 psABI, returning its result, cycles, retired
instructions, the faults taken and SUM at exit.  Runs on the block translator
(`emu.fast.translate`) by default, or on the reference step (`fast=False`).
`start_call` and `run_watched` split a call for a caller that looks at the
machine on the way (the verifier's sample runs): set up, then run on the
reference step with a hook at chosen pcs.
Documented in docs/emulator.md.
Imports: emu.* (not gen, not verify).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from copygen.emu.timing.cost import CostModel
from copygen.emu.hart.observer import Fanout
from copygen.emu.elf import ElfImage, load_into, read_elf
from copygen.emu.errors import ConfigError, MapError, StepLimit
from copygen.emu.hart.machine import SR_SUM, SR_VS, SR_VS_INITIAL, SSTATUS, Fault, Hart
from copygen.emu.hart.memory import PAGE_MASK, PAGE_SIZE, Memory
from copygen.emu.timing.ooo import OooCostModel
from copygen.emu.timing.profile import Profile, load_profile
from copygen.emu.insn.values import MASK

RETURN_SENTINEL = 0xFFFF_FFFF_FFFF_F000  # `ra` of a call; must stay unmapped
STACK_TOP = 0xFFFF_FFFF_F000_0000        # kernel stack grows down from here
CALLEE_SAVED = (2, 8, 9, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27)  # sp, s0-s11
ARG_REGS = (10, 11, 12, 13, 14, 15, 16, 17)  # a0-a7


@dataclass(frozen=True)
class CallResult:
    """Outcome of `Machine.call`.  `cycles` is None without a cost profile."""

    ret: int                      # a0 at return (unsigned 64-bit)
    cycles: int | None
    instret: int                  # retired instructions (faulting ones excluded)
    faults: tuple[Fault, ...]     # (pc, addr, cause) per fault resumed at a fixup
    sum_at_exit: bool             # sstatus.SUM when the routine returned
    callee_saved_ok: bool         # sp and s0-s11 as they were at entry
    misaligned: int = 0           # misaligned accesses (cost model only)
    cache_misses: int = 0         # L1 D misses during the call (cost model only)

    @property
    def ret_signed(self) -> int:
        return self.ret - (1 << 64) if self.ret >> 63 else self.ret


def machine_vlen(profile: Profile | None, vlen: int | None) -> int:
    """The VLEN a machine runs at: as asked, else the profile's [vector] vlen,
    else 128.  A vector profile's tables hold for its own VLEN only."""
    own = profile.vector.vlen if profile is not None and profile.vector is not None else None
    if vlen is None:
        return own or 128
    if own is not None and vlen != own:
        raise ConfigError(f"profile {profile.name} times a VLEN of {own}; the machine was asked for "
                          f"VLEN {vlen} (leave it out to run at {own})")
    return vlen


def _cost_model(profile: Profile | None):
    """The profile's engine: in-order issue (emu.timing.cost) or out of order (emu.timing.ooo)."""
    if profile is None:
        return None
    return OooCostModel(profile) if profile.engine == "ooo" else CostModel(profile)


class Machine:
    """An S-mode RV64 machine with an optional cycle cost profile."""

    def __init__(self, image: ElfImage | None = None, profile: str | Profile | None = None,
                 *, stack_size: int = 4 * PAGE_SIZE, vlen: int | None = None) -> None:
        self.image = image
        self.memory = Memory()
        if isinstance(profile, str):
            profile = load_profile(profile)
        self.profile = profile
        self.cost = _cost_model(profile)
        self.hart = Hart(self.memory, dict(image.extable) if image else {}, self.cost,
                         machine_vlen(profile, vlen))
        if self.cost is not None:
            self.cost.hart = self.hart  # read by the predictor (branch pc) and vector timing (vl)
        if image is not None:
            load_into(image, self.memory)
        self.stack_size = stack_size
        self.memory.map(STACK_TOP - stack_size, stack_size, user=False)
        self._translator = None
        self._observers: list = []

    @classmethod
    def from_elf(cls, path: str | Path, profile: str | Profile | None = None, **kw) -> "Machine":
        return cls(read_elf(path), profile, **kw)

    # --- memory ------------------------------------------------------------
    def map(self, addr: int, size: int, *, user: bool, readable: bool = True,
            writable: bool = True, executable: bool = False) -> None:
        """Map [addr, addr+size) (page multiples) as user or kernel pages.
        Remapping keeps the contents and changes the permissions."""
        self.memory.map(addr, size, user=user, readable=readable, writable=writable,
                        executable=executable)

    def unmap(self, addr: int, size: int) -> None:
        self.memory.unmap(addr & ~PAGE_MASK, size + (addr & PAGE_MASK))

    def write(self, addr: int, data: bytes) -> None:
        """Host write, ignoring permissions (pages must be mapped)."""
        self.memory.host_write(addr, data)

    def read(self, addr: int, n: int) -> bytes:
        """Host read, ignoring permissions (pages must be mapped)."""
        return self.memory.host_read(addr, n)

    def symbol(self, name: str) -> int:
        if self.image is None:
            raise MapError(f"no ELF loaded, so no symbol {name!r}")
        return self.image.address_of(name)

    def attach(self, observer) -> None:
        """Let `observer` (emu.hart.observer.Observer) watch every later step,
        beside the cost model.  Calls then take the reference path, which
        calls every hook (the translator inlines only the cost model's)."""
        watchers = [o for o in (self.cost, *self._observers, observer) if o is not None]
        self._observers.append(observer)
        self.hart.observer = watchers[0] if len(watchers) == 1 else Fanout(*watchers)

    def reset_cache(self) -> None:
        """Empty the modelled caches (they persist across calls otherwise; so
        does an out-of-order profile's branch predictor, which this keeps)."""
        if self.cost is not None:
            self.cost.cache.reset()

    def reset_predictor(self, origin: str | int = 0) -> None:
        """Forget what an out-of-order profile's branch predictor learnt (its
        counters and global history persist across calls otherwise).  From
        now on it indexes branches by their distance from `origin` (a
        symbol or an address; emu.timing.predictor)."""
        predictor = getattr(self.cost, "predictor", None)
        if predictor is not None:
            predictor.reset(origin if isinstance(origin, int) else self.symbol(origin))

    def predictor_history(self) -> int | None:
        """The global history an out-of-order profile's branch predictor
        would index its next branch with (None: no history kept)."""
        predictor = getattr(self.cost, "predictor", None)
        return getattr(predictor, "ghr", None)

    # --- calls ---------------------------------------------------------------
    def call(self, fn: str | int, *args: int, step_limit: int = 10_000_000,
             sum_at_entry: bool = False, fast: bool = True, vector_at_entry: bool = False) -> CallResult:
        """Call `fn` (symbol or address) with integer args in a0..a7 and run it
        until it returns to the sentinel return address.  `vector_at_entry`
        sets sstatus.VS to Initial (as the kernel's vector section does), else
        Off; vector registers and CSRs keep their values across calls."""
        hart = self.hart
        entry = self.start_call(fn, *args, sum_at_entry=sum_at_entry,
                                vector_at_entry=vector_at_entry)
        instret0, faults0 = hart.instret, len(hart.faults)
        misses0 = self.cost.cache.misses if self.cost else 0
        if self.cost is not None:
            self.cost.reset()
        if fast and not self._observers:
            self._fast().run(RETURN_SENTINEL, step_limit)
        else:
            hart.run_reference(RETURN_SENTINEL, step_limit)
        cost = self.cost
        return CallResult(
            ret=hart.x[10], cycles=cost.cycles if cost else None,
            instret=hart.instret - instret0, faults=tuple(hart.faults[faults0:]),
            sum_at_exit=bool(hart.csrs[SSTATUS] & SR_SUM),
            callee_saved_ok=self.callee_saved_kept(entry),
            misaligned=cost.misaligned if cost else 0,
            cache_misses=(cost.cache.misses - misses0) if cost else 0)

    def start_call(self, fn: str | int, *args: int, sum_at_entry: bool = False,
                   vector_at_entry: bool = False) -> tuple[int, ...]:
        """Set up a call of `fn` as `call` does, without running it: the
        registers zeroed, s0-s11 recognisable values, the args in a0..a7,
        sp at the stack top, ra at the return sentinel, SUM and VS as asked,
        pc at the entry.  Returns the 32 registers at the entry; `run_watched`
        runs the call."""
        if len(args) > len(ARG_REGS):
            raise MapError(f"call: at most {len(ARG_REGS)} register arguments")
        hart = self.hart
        entry = fn if isinstance(fn, int) else self.symbol(fn)
        if RETURN_SENTINEL >> 12 in self.memory.pages:
            raise MapError(f"the return sentinel page {RETURN_SENTINEL:#x} must stay unmapped")
        hart.x[:] = [0] * 32  # in place: translated blocks hold this list
        for i, r in enumerate(CALLEE_SAVED[1:]):
            hart.x[r] = 0x5A5A_0000_0000_0000 | (i << 8) | r  # recognisable, checked at exit
        for r, v in zip(ARG_REGS, args):
            hart.x[r] = v & MASK
        hart.x[1] = RETURN_SENTINEL
        hart.x[2] = STACK_TOP
        status = hart.csrs[SSTATUS] & ~(SR_SUM | SR_VS)
        hart.csrs[SSTATUS] = status | (SR_SUM if sum_at_entry else 0) | (SR_VS_INITIAL if vector_at_entry else 0)
        hart.pc = entry
        return tuple(hart.x)

    def run_watched(self, max_steps: int, watch: Collection[int] = (),
                    on_watch: Callable[[int], None] | None = None) -> None:
        """Run the call `start_call` set up on the reference step until it
        returns, calling on_watch(pc) before each instruction whose pc is in
        `watch`.  Each step counts, retired or faulted to its fixup, so a
        fixup that faults again forever ends too: StepLimit when the call has
        not returned after `max_steps` steps; Oops as in `call`."""
        hart = self.hart
        for _ in range(max_steps):
            pc = hart.pc
            if pc == RETURN_SENTINEL:
                return
            if pc in watch:
                on_watch(pc)
            hart.step()
        if hart.pc != RETURN_SENTINEL:
            raise StepLimit(hart.pc, max_steps)

    def callee_saved_kept(self, entry: tuple[int, ...]) -> bool:
        """sp and s0-s11 as they were in `entry` (start_call's registers)."""
        return all(self.hart.x[r] == entry[r] for r in CALLEE_SAVED)

    def _fast(self):
        if self._translator is None:
            from copygen.emu.fast.translate import Translator

            self._translator = Translator(self.hart)
        return self._translator
