"""The machine's observer interface: how a run is watched without changing it.

The hart calls its observer for every memory access it performs (after the
permission check passed), for every instruction it retires (with whether a
branch or jump was taken) and for every fault an `__ex_table` fixup handles.
The cycle cost model (emu.timing.cost.CostModel, or emu.timing.ooo.OooCostModel for an
out-of-order profile) is one observer; the verifier's load recorder is another.  An observer must not change machine state.

The block translator (emu.fast.translate) inlines the cost model's own hooks for
speed, so a Machine with any other observer attached runs on the reference
path (Machine.attach).
Imports: nothing outside the standard library.
"""
from __future__ import annotations

from typing import Protocol


class Observer(Protocol):
    def access(self, addr: int, size: int, store: int) -> None:
        """A load (store=0) or store (store=1) of `size` bytes at `addr`."""

    def on_insn(self, insn, taken: bool) -> None:
        """`insn` retired; `taken`: it was a branch or jump that was taken."""

    def on_fault(self) -> None:
        """A faulting access resumed at its fixup."""


class Fanout:
    """Several observers watching one hart, called in order."""

    def __init__(self, *observers: Observer) -> None:
        self.observers = tuple(observers)

    def access(self, addr: int, size: int, store: int) -> None:
        for o in self.observers:
            o.access(addr, size, store)

    def on_insn(self, insn, taken: bool) -> None:
        for o in self.observers:
            o.on_insn(insn, taken)

    def on_fault(self) -> None:
        for o in self.observers:
            o.on_fault()
