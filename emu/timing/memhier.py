"""Memory hierarchy for the out-of-order cost engine: L1, L2, DRAM, prefetcher.

Role: decide, for every cache line an access touches, where its data comes
from, as a small *level code*; the timing (latency, bandwidth) of each level
is the engine's business (emu.timing.ooo).  Only which lines are where is kept here,
so the answer does not depend on time and a block's costs can be memoised
on its codes.

    0  L1 hit                  1  L2 hit              2  DRAM
    3  prefetched, from L2     4  prefetched, from DRAM

The L1 is `emu.timing.cost.Cache` (same sets, MRU list and LRU ticks, so the block
translator's inline hit test works unchanged); `touch` is called on what
that test does not settle and returns a level code instead of a stall.
The L2 is set-associative LRU and holds every line brought in from DRAM
(demand or prefetch); L1 evictions are not written back (copies stream, and
write-back traffic is folded into each level's per-line occupancy).

Prefetcher (`[prefetch] kind`), trained on L1 misses, never crossing a 4 KiB
page: `next_line` fetches the `degree` lines after each missed line;
`stride` keeps, per page, the last missed line and stride, and once a stride
repeats fetches `degree` strides ahead.  Prefetched lines wait in a FIFO
buffer of `buffer` lines (source level recorded) until a demand miss takes
them into L1: that miss is coded 3 or 4, so the engine charges the level's
bandwidth but not its latency.
Imports: emu.timing.cost, emu.timing.profile.
"""

from __future__ import annotations

from copygen.emu.timing.cost import Cache
from copygen.emu.timing.profile import Profile

L1, L2, DRAM, PF_L2, PF_DRAM = range(5)


class Hierarchy(Cache):
    """L1 (the base class) plus L2, DRAM and the prefetch buffer."""

    def __init__(self, p: Profile) -> None:
        super().__init__(p)
        o = p.ooo
        self.l2_sets = max(o.l2_size // (p.cache_line * o.l2_ways), 1)
        self.l2_ways = o.l2_ways
        self.l2: list[dict[int, int]] = [{} for _ in range(self.l2_sets)]
        self.pf_kind, self.degree, self.buffer = o.prefetch, o.prefetch_degree, o.prefetch_buffer
        self.page_lines = max(4096 >> self.line_shift, 1)
        self.pf: dict[int, int] = {}          # line -> source level, FIFO order
        self.streams: dict[int, tuple[int, int]] = {}  # page -> (last missed line, stride)

    def reset(self) -> None:
        super().reset()
        for s in self.l2:
            s.clear()
        self.pf.clear()
        self.streams.clear()

    # --- L1 miss path -------------------------------------------------------
    def touch(self, line: int, store: int) -> int:
        """L1 access that the MRU test did not settle; returns the level code."""
        if self.lookup(line):
            return L1
        src = self.pf.pop(line, None)
        if src is not None:
            code = PF_L2 if src == L2 else PF_DRAM
        else:
            code = L2 if self._l2_lookup(line) else DRAM
        if self.pf_kind != "none":
            self._train(line)
        return code

    def _l2_lookup(self, line: int) -> bool:
        """Look `line` up in L2 and leave it there (filled from DRAM on a miss)."""
        s = self.l2[line % self.l2_sets]
        hit = line in s
        if not hit and len(s) >= self.l2_ways:
            del s[min(s, key=s.__getitem__)]
        s[line] = next(self.tick)
        return hit

    # --- prefetcher ---------------------------------------------------------
    def _train(self, line: int) -> None:
        page = line // self.page_lines
        if self.pf_kind == "next_line":
            targets = [line + k for k in range(1, self.degree + 1)]
        else:
            last, stride = self.streams.get(page, (None, 0))
            delta = line - last if last is not None else 0
            self.streams[page] = (line, delta)
            if not delta or delta != stride:
                return
            targets = [line + delta * k for k in range(1, self.degree + 1)]
        for t in targets:
            if t // self.page_lines == page:
                self._prefetch(t)

    def _prefetch(self, line: int) -> None:
        if line in self.pf or line in self.sets[line & self.set_mask]:
            return
        self.pf[line] = L2 if self._l2_lookup(line) else DRAM
        if len(self.pf) > self.buffer:
            del self.pf[next(iter(self.pf))]
