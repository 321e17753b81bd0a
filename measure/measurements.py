"""Measurements of copy routines on boards: the `copygen-measurements 1`
CSV format (docs/measurements.md), read, checked and written.

Role: one reader for every source of measured figures: the executable that
`copygen hwbench` builds prints this format, and published tables in the
plain form (`board,core,clock_ghz,routine,source_file,mode,size,
bytes_per_ns`, no header lines) are read as the same thing with the
benchmark method they were measured with.  A measured figure stays a
measured figure: nothing here models anything.
May import copygen.errors and the standard library.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from copygen.errors import CopygenError, Loc

MAGIC = "copygen-measurements"
VERSION = 1
COLUMNS = ("board", "core", "clock_ghz", "routine", "source_file", "mode", "size", "src_off",
           "dst_off", "method", "state", "reps", "value", "unit", "spread")
# the columns of a published table in the plain form
PLAIN = ("board", "core", "clock_ghz", "routine", "source_file", "mode", "size", "bytes_per_ns")
UNITS = ("cycles_per_call", "ns_per_call", "bytes_per_cycle", "bytes_per_ns")
METHODS = ("orbench", "isolated")
STATES = ("warm", "cold")
MODES = ("aligned", "co-aligned", "misaligned")
# the plain form's `unaligned`: the optimized-routines bench's dst + 3, src + 1
PLAIN_UNALIGNED = (1, 3)
# a measurement file is a few thousand rows; anything far larger is not one
MAX_BYTES = 64 << 20
# header keys a file may repeat (one line each)
LIST_KEYS = ("cpuinfo",)


class MeasurementError(CopygenError):
    """A measurement file that cannot be read as measurements."""


def mode_of(src_off: int, dst_off: int, routine: str = "") -> str:
    """The alignment class of a cell, as `copygen bench` names them; a
    routine without a source (clear, memset) only looks at dst."""
    if "clear" in routine or "memset" in routine:
        return "aligned" if dst_off % 8 == 0 else "misaligned"
    if src_off % 8 == dst_off % 8:
        return "aligned" if src_off % 8 == 0 else "co-aligned"
    return "misaligned"


@dataclass(frozen=True)
class Row:
    board: str
    core: str
    clock_ghz: float | None
    routine: str
    source_file: str
    mode: str
    size: int
    src_off: int
    dst_off: int
    method: str
    state: str
    reps: int | None
    value: float
    unit: str
    spread: float | None
    line: int = field(default=0, compare=False)     # where it was read, for errors

    def cycles_per_call(self) -> float:
        """The figure as cycles per call (needs the clock for ns and bytes/ns)."""
        if self.unit == "cycles_per_call":
            return self.value
        if self.unit == "bytes_per_cycle":
            return self.size / self.value
        ghz = self._clock()
        if self.unit == "ns_per_call":
            return self.value * ghz
        return self.size / self.value * ghz

    def bytes_per_cycle(self) -> float:
        return self.size / self.cycles_per_call()

    def _clock(self) -> float:
        if not self.clock_ghz:
            raise MeasurementError(message=f"line {self.line}: {self.unit} needs clock_ghz to become cycles "
                                   f"(the row gives none)")
        return self.clock_ghz

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "line"}


@dataclass
class Table:
    header: dict[str, str | list[str]]
    rows: list[Row]
    path: str = "<measurements>"

    @property
    def emulated(self) -> bool:
        return str(self.header.get("emulated", "no")).strip().lower() == "yes"

    def routines(self) -> list[str]:
        return list(dict.fromkeys(r.routine for r in self.rows))

    def boards(self) -> list[str]:
        return list(dict.fromkeys(r.board for r in self.rows))


def read(path: str | Path) -> Table:
    """A measurement file, in either form, checked row by row."""
    path = Path(path)
    if not path.is_file():          # never open a FIFO or a device
        what = "no such file" if not path.exists() else "not a regular file"
        raise MeasurementError(f"measurements: {what}", loc=Loc(str(path)),
                               hint="a CSV written by the hwbench executable, or a published table")
    if path.stat().st_size > MAX_BYTES:
        raise MeasurementError(f"measurements: larger than {MAX_BYTES >> 20} MiB", loc=Loc(str(path)))
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise MeasurementError(f"measurements: cannot read: {err}", loc=Loc(str(path))) from None
    return parse(text, str(path))


def parse(text: str, where: str = "<measurements>") -> Table:
    header: dict[str, str | list[str]] = {}
    lines = text.splitlines()
    first = 0
    while first < len(lines) and (lines[first].startswith("#") or not lines[first].strip()):
        _header_line(lines[first], first + 1, header, where)
        first += 1
    if first == len(lines):
        raise MeasurementError(loc=Loc(where), message=f"no column header and no rows",
                               hint="a CSV whose first line is the column names")
    if header and header.get("_magic") != str(VERSION):
        raise MeasurementError(loc=Loc(where, 1, 1), message=f"not a {MAGIC} {VERSION} file: the first line must be "
                               f"'# {MAGIC} {VERSION}'")
    header.pop("_magic", None)
    reader = csv.reader(io.StringIO("\n".join(lines[first:])))
    columns = [c.strip() for c in next(reader)]
    plain = _column_kind(columns, first + 1, where)
    rows = []
    for k, cells in enumerate(reader, first + 2):
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(columns):
            raise MeasurementError(loc=Loc(where, k, 1), message=f"{len(cells)} cells, the header names {len(columns)}")
        raw = dict(zip(columns, (c.strip() for c in cells)))
        rows.append(_plain_row(raw, k, where) if plain else _row(raw, k, where))
    if not rows:
        raise MeasurementError(loc=Loc(where), message=f"a header but no rows")
    return Table(header, rows, where)


def _header_line(line: str, k: int, header: dict, where: str) -> None:
    body = line.lstrip("#").strip()
    if not body:
        return
    if body.startswith(MAGIC):
        header["_magic"] = body[len(MAGIC):].strip()
        return
    key, sep, value = body.partition(":")
    if not sep:
        raise MeasurementError(loc=Loc(where, k, 1), message=f"a header line is '# key: value', not {line!r}")
    key = key.strip().lower()
    if key in LIST_KEYS:
        header.setdefault(key, []).append(value.strip())
    else:
        header[key] = value.strip()


def _column_kind(columns: list[str], k: int, where: str) -> bool:
    """True for the plain published form, False for ours; anything else is
    an error naming what is missing (units first: a figure without one is
    not a measurement)."""
    if tuple(columns) == COLUMNS:
        return False
    if tuple(columns) == PLAIN:
        return True
    missing = [c for c in COLUMNS if c not in columns]
    if "value" in columns and "unit" not in columns:
        raise MeasurementError(loc=Loc(where, k, 1), message=f"values without units: no `unit` column",
                               hint=f"units are {', '.join(UNITS)}")
    if not {"value", "bytes_per_ns"} & set(columns):
        raise MeasurementError(loc=Loc(where, k, 1), message=f"no figure column: neither `value`+`unit` nor "
                               f"`bytes_per_ns`", hint=f"units are {', '.join(UNITS)}")
    raise MeasurementError(loc=Loc(where, k, 1), message=f"the columns are neither {MAGIC} {VERSION}'s nor the "
                           f"plain published form's; missing: {', '.join(missing)}",
                           hint=f"expected: {','.join(COLUMNS)}")


def _row(raw: dict, k: int, where: str) -> Row:
    at = Loc(where, k, 1)
    row = Row(board=raw["board"] or "unknown", core=raw["core"],
              clock_ghz=_number(raw, "clock_ghz", at, float, optional=True),
              routine=_text(raw, "routine", at), source_file=raw["source_file"],
              mode=_choice(raw, "mode", MODES, at), size=_number(raw, "size", at, int),
              src_off=_number(raw, "src_off", at, int), dst_off=_number(raw, "dst_off", at, int),
              method=_choice(raw, "method", METHODS, at), state=_choice(raw, "state", STATES, at),
              reps=_number(raw, "reps", at, int, optional=True), value=_number(raw, "value", at, float),
              unit=_choice(raw, "unit", UNITS, at), spread=_number(raw, "spread", at, float, optional=True),
              line=k)
    return _checked(row, at)


def _plain_row(raw: dict, k: int, where: str) -> Row:
    at = Loc(where, k, 1)
    mode = raw["mode"]
    if mode not in ("aligned", "unaligned"):
        raise MeasurementError(loc=at, message=f"mode {mode!r}: the plain form knows aligned and unaligned")
    src, dst = (0, 0) if mode == "aligned" else PLAIN_UNALIGNED
    row = Row(board=raw["board"] or "unknown", core=raw["core"],
              clock_ghz=_number(raw, "clock_ghz", at, float, optional=True),
              routine=_text(raw, "routine", at), source_file=raw["source_file"],
              mode=mode_of(src, dst, raw["routine"]), size=_number(raw, "size", at, int),
              src_off=src, dst_off=dst, method="orbench", state="warm", reps=None,
              value=_number(raw, "bytes_per_ns", at, float), unit="bytes_per_ns", spread=None, line=k)
    return _checked(row, at)


def _checked(row: Row, at: str) -> Row:
    if row.size <= 0:
        raise MeasurementError(loc=at, message=f"size {row.size}: must be positive")
    if not (math.isfinite(row.value) and row.value > 0):
        raise MeasurementError(loc=at, message=f"value {row.value}: must be a positive number")
    if row.src_off < 0 or row.dst_off < 0:
        raise MeasurementError(loc=at, message=f"offsets must not be negative")
    if row.mode != mode_of(row.src_off, row.dst_off, row.routine):
        raise MeasurementError(loc=at, message=f"mode {row.mode!r} but offsets {row.src_off}:{row.dst_off} "
                               f"are {mode_of(row.src_off, row.dst_off, row.routine)!r}")
    if row.unit in ("ns_per_call", "bytes_per_ns") and row.clock_ghz is not None and row.clock_ghz <= 0:
        raise MeasurementError(loc=at, message=f"clock_ghz must be positive")
    return row


def _text(raw: dict, key: str, at: str) -> str:
    if not raw[key]:
        raise MeasurementError(loc=at, message=f"`{key}` is empty")
    return raw[key]


def _choice(raw: dict, key: str, allowed: tuple, at: str) -> str:
    if raw[key] not in allowed:
        raise MeasurementError(loc=at, message=f"{key} {raw[key]!r} is not one of {', '.join(allowed)}")
    return raw[key]


def _number(raw: dict, key: str, at: str, kind, optional: bool = False):
    text = raw[key]
    if not text and optional:
        return None
    try:
        return kind(text)
    except ValueError:
        raise MeasurementError(loc=at, message=f"{key} {text!r} is not a number"
                               + (" (an integer)" if kind is int else "")) from None


def write(table: Table) -> str:
    """The table in the `copygen-measurements 1` form."""
    out = io.StringIO()
    out.write(f"# {MAGIC} {VERSION}\n")
    for key, value in table.header.items():
        for v in value if isinstance(value, list) else [value]:
            out.write(f"# {key}: {v}\n")
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in table.rows:
        w.writerow(["" if getattr(r, c) is None else _cell(getattr(r, c)) for c in COLUMNS])
    return out.getvalue()


def _cell(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def with_clock(rows: list[Row], clock_ghz: float) -> list[Row]:
    """Rows whose clock was not recorded, given one (e.g. from --clock-ghz)."""
    return [r if r.clock_ghz else replace(r, clock_ghz=clock_ghz) for r in rows]
