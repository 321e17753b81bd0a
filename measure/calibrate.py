"""Predict measured cells with the emulator under a profile with some parameters changed.

Role: the model side of `copygen calibrate` (measure.calibrate_fit searches
with it).  Each measured cell (a routine, size, offsets, benchmark method
and cache state) is predicted by running the emulator on the machine code
that was measured, as the method runs it: `orbench` (a loop of calls over
the same buffers) is a warm call (measure.bench: caches and predictor in
the steady state of such a loop) plus a per-call overhead of the loop;
`isolated` is one call, warm or cold, plus that method's own overhead.
A free parameter is a (TOML table, key) of the profile, an integer as
emu.timing.profile requires; a candidate profile is the profile's data
with the free values put in, parsed by emu.timing.profile.  The per-call
overhead of each method is continuous and is solved for every candidate
by golden-section search (no emulator runs).  The error of a cell is
predicted/measured - 1 of bytes/cycle; the objective is the sum of their
squares and of any extra constraints' (e.g. ratios measured on the same
core elsewhere).  Predictions are cached per (parameter values, run).

May import emu.errors, emu.timing.profile, measure.bench, measure.measurements,
copygen.errors and the standard library.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from copygen.emu.errors import ProfileError
from copygen.emu.timing.profile import _KEYS, _OOO_KEYS, Profile, parse_profile
from copygen.errors import CopygenError, Loc
from copygen.measure.bench import Bench, Case
from copygen.measure.measurements import MeasurementError, Row, Table

# size bands for leave-one-band-out: below memcpy-style small-size thresholds,
# L1-sized block copies, and the large copies (where a 32 KiB L1 spills)
BANDS = ((128, "small (< 128 B)"), (1024, "medium (128 B - 1 KiB)"), (math.inf, "large (>= 1 KiB)"))
# parameters that the engines need at least one of
AT_LEAST_ONE = {"pipeline.issue_width", "pipeline.mem_pipes", "window.rob", "window.retire_width",
                "store_buffer.entries", "l2.ways", "cache.ways", "cache.line"}
OVERHEAD_MAX = 2000.0       # cycles per call: a bound for the overhead's search
# A loop of calls on an out-of-order core overlaps each call with the next,
# so its cost per call may be below one call's latency (what the emulator
# gives): the overhead may be negative, down to this share of the shortest call.
OVERLAP_MAX = 0.5
DEFAULT_NOISE = 0.01        # relative noise of a cell that states no spread


@dataclass(frozen=True)
class Cell:
    """One measured figure (its row's routine, mode, size, offsets, method,
    state and spread read through), as bytes per cycle."""

    row: Row
    measured: float           # bytes per cycle
    where: str                # file:line

    def __getattr__(self, name: str):
        if name == "row":     # not set yet (a copy being made)
            raise AttributeError(name)
        return getattr(self.row, name)

    @property
    def run(self) -> tuple:
        """What the emulator runs for it (cells differing only by method share it)."""
        return (self.routine, self.size, self.src_off % 64, self.dst_off % 64, self.state)

    @property
    def band(self) -> str:
        return next(name for top, name in BANDS if self.size < top)

    def label(self) -> str:
        return f"{self.routine} {self.mode} {self.size}"


def cells_of(table: Table) -> list[Cell]:
    """The table's rows as cells; refuses emulated times and figures that
    cannot become bytes/cycle, each with its location."""
    if table.emulated:
        raise CopygenError("these times were measured under an emulator (`# emulated: yes`): "
                           "they time the host running the emulator, not the board's pipeline, "
                           "so no profile can be fitted to them", Loc(table.path, _header_line(table)),
                           hint="calibrate against a CSV measured on the board itself")
    cells = []
    for r in table.rows:
        try:
            bpc = r.bytes_per_cycle()
        except MeasurementError:
            raise CopygenError(f"{r.unit} needs the clock to become bytes/cycle, and the row gives "
                               "none", Loc(table.path, r.line),
                               hint="fill the clock_ghz column (the board's fixed core clock)") from None
        cells.append(Cell(r, bpc, f"{table.path}:{r.line}"))
    return cells


def _header_line(table: Table) -> int:
    """The line of `# emulated:` in the file (1 when it cannot be read)."""
    try:
        lines = Path(table.path).read_text().splitlines()
    except OSError:
        return 1
    return next((k for k, ln in enumerate(lines, 1) if ln.lstrip("# ").lower().startswith("emulated")), 1)


@dataclass(frozen=True)
class Param:
    """A free parameter: TOML (table, key), start value and bounds."""

    table: str
    key: str
    start: int
    lo: int
    hi: int

    @property
    def name(self) -> str:
        return f"{self.table}.{self.key}"


def _aliases(data: dict) -> dict[str, tuple[str, str]]:
    """Names a free parameter may be given by: table.key, the Profile field
    (lat_load), the out-of-order field (store_drain) and a bare key that
    only one table of the profile has."""
    out: dict[str, tuple[str, str]] = {}
    for (table, key), fld in _KEYS.items():
        out[fld] = (table, key)
    for (table, key), (fld, _) in _OOO_KEYS.items():
        out.setdefault(fld, (table, key))
    bare: dict[str, list[tuple[str, str]]] = {}
    for table, body in data.items():
        if isinstance(body, dict) and table != "calibration":
            for key in body:
                out[f"{table}.{key}"] = (table, key)
                bare.setdefault(key, []).append((table, key))
    for key, where in bare.items():
        if len(where) == 1:
            out.setdefault(key, where[0])
    for (table, key) in list(_KEYS) + list(_OOO_KEYS):
        out.setdefault(f"{table}.{key}", (table, key))
    return out


def resolve_params(specs: Sequence[str], data: dict, profile: Profile) -> list[Param]:
    """`name` or `name=LO:HI` per free parameter, against the profile's data."""
    names = _aliases(data)
    params, seen = [], set()
    for spec in specs:
        name, _, bounds = spec.partition("=")
        name = name.strip()
        if name not in names:
            raise CopygenError(f"--free: `{name}` is no integer parameter of profile {profile.name}",
                               hint="give table.key (latency.load, pipeline.issue_width, ...) or a "
                                    "profile field (lat_load, miss_store, store_drain, ...)")
        table, key = names[name]
        value = _current(data, profile, table, key)
        if type(value) is not int:
            raise CopygenError(f"--free: {table}.{key} is {value!r}, not an integer cycle count or width",
                               hint="only integer parameters can be fitted")
        if (table, key) in seen:
            raise CopygenError(f"--free names {table}.{key} twice")
        seen.add((table, key))
        lo, hi = _bounds(f"{table}.{key}", value, bounds)
        params.append(Param(table, key, value, lo, hi))
    return params


def _current(data: dict, profile: Profile, table: str, key: str):
    """The value the profile runs with (its file's, else the engine's default)."""
    if key in data.get(table, {}):
        return data[table][key]
    if (table, key) in _KEYS:
        return getattr(profile, _KEYS[table, key])
    if (table, key) in _OOO_KEYS and profile.ooo is not None:
        return getattr(profile.ooo, _OOO_KEYS[table, key][0])
    raise CopygenError(f"--free: {table}.{key} is not used by profile {profile.name}'s "
                       f"{profile.engine} engine")


def _bounds(name: str, value: int, text: str) -> tuple[int, int]:
    floor = 1 if name in AT_LEAST_ONE else 0
    if not text:
        return floor, max(4 * value, value + 16)
    lo, sep, hi = text.partition(":")
    try:
        lo_i, hi_i = int(lo), int(hi)
    except ValueError:
        lo_i = hi_i = -1
    if not sep or lo_i < floor or hi_i < lo_i:
        raise CopygenError(f"--free {name}={text}: bounds are LO:HI, integers, {floor} <= LO <= HI")
    return lo_i, hi_i


@dataclass(frozen=True)
class Constraint:
    """An extra residual: a figure the model must reproduce (e.g. a ratio of
    two routines' throughput measured on the same core), weighted."""

    name: str
    target: float
    model: Callable[[Profile], float]
    weight: float = 1.0


class Model:
    """Predictions of cells (and constraints) for parameter values, cached."""

    def __init__(self, data: dict, where: str, elfs: dict[str, Path], max_size: int) -> None:
        self.data, self.where, self.elfs = data, where, elfs
        self.max_size = max_size
        self.cache: dict[tuple, float] = {}
        self.constraint_cache: dict[tuple, float] = {}
        self.runs = 0
        self.seconds = 0.0

    def profile(self, params: Sequence[Param], values: Sequence[int]) -> Profile:
        data = copy.deepcopy(self.data)
        for p, v in zip(params, values):
            data.setdefault(p.table, {})[p.key] = int(v)
        return parse_profile(data, self.where)

    def cycles(self, params, values, cells: Sequence[Cell]) -> dict[tuple, float] | None:
        """Routine cycles per run of `cells` (None: the values make no valid profile)."""
        values = tuple(values)
        todo = sorted({c.run for c in cells if (values, c.run) not in self.cache})
        if todo:
            try:
                prof = self.profile(params, values)
            except ProfileError:
                return None
            benches: dict[tuple, Bench] = {}
            t0 = time.perf_counter()
            for run in todo:
                routine, size, src, dst, state = run
                if (routine, state) not in benches:
                    benches[routine, state] = Bench(self.elfs[routine], prof, self.max_size,
                                                    warm=state == "warm")
                sample = benches[routine, state].run(Case(routine, size, src, dst))
                self.cache[values, run] = float(sample.cycles)
                self.runs += 1
            self.seconds += time.perf_counter() - t0
        return {c.run: self.cache[values, c.run] for c in cells}

    def constraint(self, params, values, con: Constraint) -> float | None:
        key = (tuple(values), con.name)
        if key not in self.constraint_cache:
            try:
                prof = self.profile(params, values)
            except ProfileError:
                return None
            self.constraint_cache[key] = con.model(prof)
        return self.constraint_cache[key]


def predicted_bpc(cell: Cell, cycles: float, overhead: dict[str, float]) -> float:
    return cell.size / max(cycles + overhead.get(cell.method, 0.0), 1e-9)


def relative_errors(cells, cycles, overhead) -> list[float]:
    """predicted/measured - 1 per cell (positive: the model is optimistic)."""
    return [predicted_bpc(c, cycles[c.run], overhead) / c.measured - 1 for c in cells]


def fit_overhead(cells: Sequence[Cell], cycles: dict, fixed: dict[str, float]) -> dict[str, float]:
    """Each method's per-call overhead (cycles) minimising its cells' squared
    relative errors, unless `fixed` gives it."""
    out = {}
    for method in sorted({c.method for c in cells}):
        if method in fixed:
            out[method] = fixed[method]
            continue
        mine = [c for c in cells if c.method == method]

        def cost(o: float) -> float:
            return sum((c.size / (cycles[c.run] + o) / c.measured - 1) ** 2 for c in mine)
        out[method] = _golden(cost, -OVERLAP_MAX * min(cycles[c.run] for c in mine), OVERHEAD_MAX)
    return out


def _golden(f: Callable[[float], float], a: float, b: float, tol: float = 1e-3) -> float:
    """A minimum of f on [a, b] by golden-section search (f is unimodal here:
    a sum of squares of terms monotone in the overhead); the ends are tried too."""
    g = (math.sqrt(5) - 1) / 2
    lo, hi = a, b
    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    fc, fd = f(c), f(d)
    while hi - lo > tol:
        if fc < fd:
            hi, d, fd = d, c, fc
            c = hi - g * (hi - lo)
            fc = f(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + g * (hi - lo)
            fd = f(d)
    best = (lo + hi) / 2
    return min((best, a, b), key=f)


@dataclass
class Evaluation:
    """The model at one point: overheads, errors, constraint values, objective."""

    values: tuple[int, ...]
    overhead: dict[str, float]
    errors: list[float]
    constraints: list[tuple[Constraint, float]] = field(default_factory=list)
    cost: float = math.inf
    residuals: list[float] = field(default_factory=list)   # whose squares sum to cost

    @property
    def mean_abs(self) -> float:
        return sum(abs(e) for e in self.errors) / len(self.errors) if self.errors else 0.0


def evaluate(model: Model, params, values, cells, constraints=(), fixed_overhead=None,
             overhead: dict[str, float] | None = None, prior: float = 0.0) -> Evaluation:
    """The objective at `values`: overheads solved for unless given; `prior`
    weighs the squared relative moves of the parameters from their start
    (the profile's documented values), so that the data must pay for a move."""
    cycles = model.cycles(params, values, cells)
    if cycles is None:
        return Evaluation(tuple(values), {}, [])
    ov = overhead if overhead is not None else fit_overhead(cells, cycles, fixed_overhead or {})
    errs = relative_errors(cells, cycles, ov)
    cons = []
    for con in constraints:
        got = model.constraint(params, values, con)
        if got is None:
            return Evaluation(tuple(values), ov, errs)
        cons.append((con, got))
    res = errs + [con.weight * (got / con.target - 1) for con, got in cons]
    res += [math.sqrt(prior) * (v - p.start) / max(abs(p.start), 1) for p, v in zip(params, values)]
    return Evaluation(tuple(values), ov, errs, cons, sum(r * r for r in res), res)
