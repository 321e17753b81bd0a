"""Conditional branch direction predictors for the out-of-order cost engine.

Role: say, for each executed conditional branch, whether the front end
mispredicted it, and learn from the outcome.  A predictor lives as long as
its Machine, across calls, the way a benchmark loop lets a real predictor
learn: the second call of the same copy finds its loop branches trained.

Kinds (profile `[predictor] kind`):

* `static`: backward taken, forward not taken (no state).
* `bimodal`: a table of `entries` 2-bit saturating counters indexed by the
  branch's pc (pc >> 1, modulo the table size); counters start weakly
  not-taken (1).
* `gshare`: the same counters indexed by (pc >> 1) xor the last `history`
  outcomes (global history register, newest outcome in bit 0).

A counter predictor indexes with pc - `origin` (0 unless reset with
another): a bench that sets it to the entry of the routine it measures
places every routine alike in the table, as if each were linked at the
same address, so that a routine's cycles do not move with the size of
unrelated code linked before it (its branches meeting other entries).

Jumps (`jal`, `jalr`) are taken as predicted (BTB and return stack).
Imports: nothing outside the standard library.
"""

from __future__ import annotations


class StaticPredictor:
    kind = "static"

    def mispredicted(self, pc: int, backward: bool, taken: bool) -> int:
        return int(taken != backward)

    def reset(self, origin: int = 0) -> None:
        pass


class CounterPredictor:
    """Bimodal (history 0) or gshare (history > 0) 2-bit counters."""

    def __init__(self, entries: int, history: int) -> None:
        self.kind = "gshare" if history else "bimodal"
        self.entries, self.history = entries, history
        self.mask = entries - 1
        self.hmask = (1 << history) - 1
        self.table = [1] * entries
        self.ghr = 0
        self.origin = 0

    def reset(self, origin: int = 0) -> None:
        self.table[:] = [1] * self.entries
        self.ghr = 0
        self.origin = origin

    def mispredicted(self, pc: int, backward: bool, taken: bool) -> int:
        idx = (((pc - self.origin) >> 1) ^ self.ghr) & self.mask
        c = self.table[idx]
        miss = int((c >= 2) != taken)
        if taken:
            if c < 3:
                self.table[idx] = c + 1
        elif c > 0:
            self.table[idx] = c - 1
        if self.history:
            self.ghr = ((self.ghr << 1) | taken) & self.hmask
        return miss


def make_predictor(kind: str, entries: int, history: int):
    if kind == "static":
        return StaticPredictor()
    return CounterPredictor(entries, history if kind == "gshare" else 0)
