"""Expected cycles of routines under a workload, and their ranking.

Role: the library behind `copygen rank`.  For one routine of one ELF, runs
every (grid size, alignment pair) the workload needs on a warm `Bench` and
weighs the cycles by their probabilities (`measure.workload.size_grid` makes the
size expectation exact under linear interpolation).  Routines of the same
kind (copy_to_user, memcpy, ...) are then ordered by expected cycles; each
result carries its routine's `.text` bytes (measure.size) beside them.
Imports: measure.bench, measure.size, measure.workload, the standard library.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from copygen.measure.bench import KINDS, Bench, Case
from copygen.measure.size import routine_size
from copygen.measure.workload import Workload, size_grid


@dataclass(frozen=True)
class Expected:
    source: str            # the .copy file (or ELF) the routine came from
    routine: str           # symbol
    kind: str
    expected_cycles: float
    mean_size: float
    runs: int
    text_bytes: int | None = None      # the routine's .text bytes (measure.size)

    @property
    def bytes_per_cycle(self) -> float:
        return self.mean_size / self.expected_cycles if self.expected_cycles else 0.0

    def as_dict(self) -> dict:
        return {"source": self.source, "routine": self.routine, "kind": self.kind,
                "expected_cycles": round(self.expected_cycles, 2),
                "bytes_per_cycle": round(self.bytes_per_cycle, 4), "runs": self.runs,
                "text_bytes": self.text_bytes}


def plan(routine: str, wl: Workload) -> list[tuple[Case, float]]:
    """The cases to run for `routine` under `wl`, each with its weight (weights sum to 1).
    Routines without a source (clear_user, memset) only see the dst offset."""
    aligns: dict[tuple[int, int], float] = {}
    for s, d, p in wl.aligns:
        key = (s, d) if KINDS[routine].form == "copy" else (0, d)
        aligns[key] = aligns.get(key, 0.0) + p
    return [(Case(routine, size, s, d), w * p)
            for size, w in size_grid(wl.sizes).items() for (s, d), p in aligns.items()]


def expected_cycles(bench: Bench, source: str, routine: str, wl: Workload,
                    advance: Callable[[int], None] | None = None) -> Expected:
    cases = plan(routine, wl)
    total = 0.0
    for case, weight in cases:
        total += weight * bench.run(case).cycles
        if advance:
            advance(1)
    return Expected(source, routine, KINDS[routine].name, total, wl.mean_size, len(cases),
                    routine_size(bench.machine.image, routine).text_bytes)


def rank(results: list[Expected]) -> dict[str, list[tuple[Expected, float]]]:
    """kind -> [(result, cycles relative to the best of that kind)], best first."""
    out: dict[str, list[tuple[Expected, float]]] = {}
    for kind in dict.fromkeys(r.kind for r in results):
        same = sorted((r for r in results if r.kind == kind), key=lambda r: r.expected_cycles)
        best = same[0].expected_cycles or 1.0
        out[kind] = [(r, r.expected_cycles / best) for r in same]
    return out
