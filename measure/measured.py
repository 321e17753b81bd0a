"""Measured cells beside modelled ones: which cells of a table a board
measured, their figures in cycles per call, and where they come from.

Role: the one place that decides whether a cell is measured.  A row of a
measurement file stands for a cell of copygen's tables when it names the
same routine, from the same source file, at the same size, offsets (mod
64, the tables' offsets are from a page boundary) and cache state.  An
`isolated` row is taken before an `orbench` one: the tables count one call,
and the orbench loop adds its own cost per call.  Nothing here models
anything, and nothing turns a measured figure into a modelled one or back.
May import measure.measurements, copygen.errors and the standard library.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from copygen.errors import CopygenError, Loc
from copygen.measure.measurements import Row, Table, read

# preferred method first
METHOD_ORDER = ("isolated", "orbench")


@dataclass(frozen=True)
class Measured:
    cycles: float           # per call, from the row's unit (and clock)
    method: str
    spread: float | None
    board: str
    line: int


def source_name(path: str) -> str:
    """A source file's name as rows and commands compare it: the base name,
    without a `@version`."""
    return Path(path.split("@", 1)[0]).name


@dataclass
class Cells:
    """The measured cells of one or more files for one source."""
    tables: list[Table]
    by_cell: dict[tuple[str, int, int, int, str], Measured]
    unused: int             # rows of other sources, or that no cell asked for

    def get(self, routine: str, size: int, src: int, dst: int, warm: bool = True) -> Measured | None:
        return self.by_cell.get((routine, size, src % 64, dst % 64, "warm" if warm else "cold"))

    def provenance(self) -> str:
        """`measured on BOARD (CPU, kernel, date)` for every file used."""
        return "; ".join(describe(t) for t in self.tables)


def load(paths: list[str], source: str) -> Cells:
    """The cells of `source` (a .copy or .S path) in the files at `paths`.
    Emulated files are refused: their times are the emulator's, not a
    board's."""
    tables = [read(p) for p in paths]
    want = source_name(source)
    by_cell: dict = {}
    unused = 0
    for t in tables:
        if t.emulated:
            raise CopygenError("its times were taken under an emulator (`# emulated: yes`)",
                               loc=Loc(t.path),
                               hint="measurements are a board's: run the hwbench executable on the board")
        for r in t.rows:
            if source_name(r.source_file) != want:
                unused += 1
                continue
            key = (r.routine, r.size, r.src_off % 64, r.dst_off % 64, r.state)
            new = Measured(r.cycles_per_call(), r.method, r.spread, r.board, r.line)
            old = by_cell.get(key)
            if old is None or METHOD_ORDER.index(r.method) < METHOD_ORDER.index(old.method):
                by_cell[key] = new
    used = [t for t in tables if any(source_name(r.source_file) == want for r in t.rows)]
    return Cells(used, by_cell, unused)


def describe(t: Table) -> str:
    """The board, CPU, kernel and date a file says it was measured on."""
    h = t.header
    board = h.get("board") or (t.rows[0].board if t.rows else "unknown")
    cpu = _cpu(h.get("cpuinfo", []), t.rows[0] if t.rows else None)
    kernel = h.get("uname") or "kernel not recorded"
    date = h.get("date") or "date not recorded"
    return f"measured on {board} ({cpu}, {kernel}, {date})"


def _cpu(cpuinfo, row: Row | None) -> str:
    for key in ("uarch", "model name", "isa"):
        for line in cpuinfo if isinstance(cpuinfo, list) else [cpuinfo]:
            name, _, value = line.partition(":")
            if name.strip() == key and value.strip():
                return value.strip()
    if row is not None and row.core:
        return f"{row.core}" + (f" at {row.clock_ghz:g} GHz" if row.clock_ghz else "")
    return "CPU not recorded"


def class_mean(cells: Cells, routine: str, size: int, offsets, warm: bool = True) -> float | None:
    """The mean measured cycles over an alignment class's offset pairs, the
    way the modelled tables average them; None unless every pair was
    measured (a class is not stood for by a part of it)."""
    got = [cells.get(routine, size, s, d, warm) for s, d in offsets]
    if not got or any(m is None for m in got):
        return None
    return sum(m.cycles for m in got) / len(got)


def expectation(cells: Cells, cases) -> tuple[float, float | None]:
    """(the share of a workload's weight a board measured, the expected
    cycles over the measured cases when that share is whole, else None).
    `cases`: (Case, weight) pairs as measure.rank.plan gives them."""
    covered = total = 0.0
    for case, weight in cases:
        m = cells.get(case.routine, case.size, case.src_align, case.dst_align)
        if m is not None:
            covered += weight
            total += weight * m.cycles
    whole = abs(covered - 1.0) < 1e-9
    return covered, (total if whole else None)
