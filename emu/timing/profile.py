"""Cost profiles: a core described as data (`emu/profiles/<name>.toml`).

Role: read and validate a profile file into a frozen, hashable `Profile`.
Adding a core is adding a TOML file; no code.  Every profile carries a
`[calibration]` table saying what it was calibrated against and how far off
it is.  Errors are `ProfileError`s naming the file and key.
Imports: emu.errors.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from importlib.resources import files
from pathlib import Path

from copygen.emu.errors import ProfileError

# package data, found as a wheel installs it (copygen.emu/profiles/*.toml)
PROFILE_DIR = Path(str(files("copygen.emu"))) / "profiles"

# Keys a profile may leave out, with their default.
# (-1: the generic rule, load latency minus store_data_late.)
_OPTIONAL = {("latency", "alu_late"): 0, ("latency", "load_to_store"): -1}

# (toml table, key) -> Profile field
_KEYS = {
    ("pipeline", "issue_width"): "issue_width",
    ("pipeline", "mem_pipes"): "mem_pipes",
    ("pipeline", "mispredict"): "mispredict",
    ("pipeline", "taken_bubble"): "taken_bubble",
    ("pipeline", "jalr_bubble"): "jalr_bubble",
    ("pipeline", "serial_cost"): "serial_cost",
    ("pipeline", "fault_cost"): "fault_cost",
    ("latency", "alu"): "lat_alu",
    ("latency", "load"): "lat_load",
    ("latency", "mul"): "lat_mul",
    ("latency", "div"): "lat_div",
    ("latency", "div_pipelined"): "div_pipelined",
    ("latency", "store_data_late"): "store_data_late",
    ("latency", "alu_late"): "alu_late",
    ("latency", "load_to_store"): "load_to_store",
    ("misaligned", "cost"): "misaligned_cost",
    ("cache", "size"): "cache_size",
    ("cache", "line"): "cache_line",
    ("cache", "ways"): "cache_ways",
    ("cache", "miss_load"): "miss_load",
    ("cache", "miss_store"): "miss_store",
}


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    description: str
    issue_width: int
    mem_pipes: int
    mispredict: int
    taken_bubble: int
    jalr_bubble: int
    serial_cost: int
    fault_cost: int
    lat_alu: int
    lat_load: int
    lat_mul: int
    lat_div: int
    div_pipelined: bool
    store_data_late: int
    alu_late: int
    load_to_store: int
    misaligned_cost: int
    cache_size: int
    cache_line: int
    cache_ways: int
    miss_load: int
    miss_store: int
    calibrated_against: str
    calibration_error: str
    engine: str = "inorder"          # [engine] kind: "inorder" (emu.timing.cost) or "ooo" (emu.timing.ooo)
    ooo: OooConfig | None = None     # the out-of-order engine's tables, when engine is "ooo"
    vector: VectorConfig | None = None  # [vector]: the core's RVV timing; None: no vector unit
    provenance: str = ""             # one phrase: fitted to what, how far off (or not fitted)


@dataclass(frozen=True, slots=True)
class OooConfig:
    """What the out-of-order engine (emu.timing.ooo) and its memory hierarchy
    (emu.timing.memhier) and predictor (emu.timing.predictor) read; see docs/calibration.md."""

    rob: int                  # [window] rob: instructions in flight
    issue_queue: int          # [window] issue_queue: dispatched, not yet issued
    retire_width: int         # [window] retire_width
    ports: tuple[tuple[str, int], ...]  # [ports] class -> pipes (0: shares the alu pipes)
    store_buffer: int         # [store_buffer] entries: stores dispatched, not yet drained
    store_drain: int          # [store_buffer] drain: cycles per store written to L1
    taken_ends_group: bool    # [window] taken_ends_group: no dispatch past a taken branch
    predictor: str            # [predictor] kind: static | bimodal | gshare
    predictor_entries: int
    predictor_history: int
    l2_size: int              # [l2] size, ways, latency (load to use), line_cycles (occupancy)
    l2_ways: int
    l2_latency: int
    l2_line_cycles: int
    dram_latency: int         # [dram] latency, line_cycles
    dram_line_cycles: int
    prefetch: str             # [prefetch] kind: none | next_line | stride
    prefetch_degree: int
    prefetch_buffer: int


LMULS = ("mf8", "mf4", "mf2", "m1", "m2", "m4", "m8")   # the columns of a [vector] table


@dataclass(frozen=True, slots=True)
class VectorConfig:
    """What emu.timing.vcost reads to time vector instructions (docs/vector.md,
    "Vector cost profiles").  Each table has one column per LMUL (`LMULS`)
    and gives the cycles of a unit-stride access of a whole register group."""

    vlen: int                 # VLEN in bits: the machine must run at it
    dlen: int                 # datapath width in bits: one beat moves dlen/8 bytes
    units: str                # "shared": one unit for vector loads and stores; "split": one each
    vset_latency: int         # vsetvli/vsetivli/vsetvl result latency
    load: tuple[int, ...]     # occupancy of the load unit
    load_ff: tuple[int, ...]  # the same for fault-only-first loads
    store: tuple[int, ...]    # occupancy of the store unit
    load_latency: tuple[int, ...]  # cycles until a load's register group can be read
    # stall cycles per element of a vector access not aligned to its width
    # (None: the profile's scalar [misaligned] cost)
    misaligned: int | None = None


_VECTOR_TABLES = ("load", "load_ff", "store", "load_latency")


def _parse_vector(data: dict, where: str, engine: str) -> VectorConfig | None:
    v = data.get("vector")
    if v is None:
        return None
    if engine != "inorder":
        raise ProfileError(f"{where}: [vector] is modelled by the inorder engine only, not {engine!r}")
    unknown = set(v) - {"vlen", "dlen", "units", "vset_latency", "misaligned", *_VECTOR_TABLES}
    if unknown:
        raise ProfileError(f"{where}: [vector] has unknown key {sorted(unknown)[0]}")
    for key in ("vlen", "dlen", "vset_latency") + (("misaligned",) if "misaligned" in v else ()):
        if type(v.get(key)) is not int or v[key] < 0:
            raise ProfileError(f"{where}: [vector] {key} must be a non-negative int, got {v.get(key)!r}")
    vlen, dlen = v["vlen"], v["dlen"]
    if vlen not in (128, 256, 512, 1024):
        raise ProfileError(f"{where}: [vector] vlen must be 128, 256, 512 or 1024 (the VLENs emu models)")
    if dlen < 32 or dlen > vlen or dlen & (dlen - 1):
        raise ProfileError(f"{where}: [vector] dlen must be a power of two in 32..vlen, got {dlen}")
    if v.get("units") not in ("shared", "split"):
        raise ProfileError(f"{where}: [vector] units must be \"shared\" or \"split\", got {v.get('units')!r}")
    tables = {}
    for key in _VECTOR_TABLES:
        row = v.get(key)
        if (type(row) is not list or len(row) != len(LMULS)
                or any(type(c) is not int or c < 1 for c in row)):
            raise ProfileError(f"{where}: [vector] {key} must list {len(LMULS)} positive ints, "
                               f"one per LMUL {', '.join(LMULS)}")
        if any(a > b for a, b in zip(row, row[1:])):
            raise ProfileError(f"{where}: [vector] {key} must not fall as LMUL grows (more bytes, "
                               f"no fewer cycles)")
        tables[key] = tuple(row)
    return VectorConfig(vlen=vlen, dlen=dlen, units=v["units"], vset_latency=v["vset_latency"],
                        misaligned=v.get("misaligned"), **tables)


# (table, key) -> (OooConfig field, default or None when required)
_OOO_KEYS = {
    ("window", "rob"): ("rob", None), ("window", "issue_queue"): ("issue_queue", 0),
    ("window", "retire_width"): ("retire_width", None),
    ("window", "taken_ends_group"): ("taken_ends_group", True),
    ("store_buffer", "entries"): ("store_buffer", None), ("store_buffer", "drain"): ("store_drain", 1),
    ("predictor", "kind"): ("predictor", None), ("predictor", "entries"): ("predictor_entries", 1024),
    ("predictor", "history"): ("predictor_history", 0),
    ("l2", "size"): ("l2_size", None), ("l2", "ways"): ("l2_ways", None),
    ("l2", "latency"): ("l2_latency", None), ("l2", "line_cycles"): ("l2_line_cycles", None),
    ("dram", "latency"): ("dram_latency", None), ("dram", "line_cycles"): ("dram_line_cycles", None),
    ("prefetch", "kind"): ("prefetch", "none"), ("prefetch", "degree"): ("prefetch_degree", 2),
    ("prefetch", "buffer"): ("prefetch_buffer", 16),
}
_PORT_CLASSES = ("alu", "load", "store", "branch", "mul", "div")
_CHOICES = {"predictor": ("static", "bimodal", "gshare"), "prefetch": ("none", "next_line", "stride")}


def _parse_ooo(data: dict, where: str) -> OooConfig:
    values: dict[str, object] = {}
    for (table, key), (field, default) in _OOO_KEYS.items():
        value = data.get(table, {}).get(key, default)
        if value is None:
            raise ProfileError(f"{where}: missing [{table}] {key} (needed by the ooo engine)")
        want = type(default) if default is not None else (str if field in _CHOICES else int)
        if type(value) is not want or (want is int and value < 0):
            raise ProfileError(f"{where}: [{table}] {key} must be a {want.__name__}, got {value!r}")
        if field in _CHOICES and value not in _CHOICES[field]:
            raise ProfileError(f"{where}: [{table}] {key} must be one of {', '.join(_CHOICES[field])}")
        values[field] = value
    ports = data.get("ports", {})
    unknown = set(ports) - set(_PORT_CLASSES)
    if unknown or any(type(ports.get(c, 0)) is not int or ports.get(c, 0) < 0 for c in _PORT_CLASSES):
        raise ProfileError(f"{where}: [ports] takes non-negative ints for {', '.join(_PORT_CLASSES)}")
    if not all(ports.get(c, 0) for c in ("alu", "load", "store")):
        raise ProfileError(f"{where}: [ports] alu, load and store need at least one pipe each")
    values["ports"] = tuple((c, ports.get(c, 0)) for c in _PORT_CLASSES)
    cfg = OooConfig(**values)
    if cfg.rob < 1 or cfg.retire_width < 1 or cfg.store_buffer < 1 or cfg.l2_ways < 1:
        raise ProfileError(f"{where}: [window] rob, retire_width, [store_buffer] entries, [l2] ways must be >= 1")
    entries = cfg.predictor_entries
    if entries < 1 or entries & (entries - 1):
        raise ProfileError(f"{where}: [predictor] entries must be a power of two")
    return cfg


def provenance(cal: dict) -> str:
    """What a table of this profile's cycles says of their source: the
    measurements it was fitted to and its cross-validated error, or that it
    was fitted to none."""
    cv = cal.get("cross_validated_error_pct")
    if not cal.get("data"):
        return f"not fitted to a board's measurements; calibration error {cal['error']}"
    board = f" on {cal['board']}" if isinstance(cal.get("board"), str) else ""
    fitted = f"fitted to {Path(str(cal['data'])).name}{board}"
    if not (isinstance(cv, dict) and cv):
        return f"{fitted}, not cross-validated; {cal['error']}"
    errors = ", ".join(f"{v:g} % {k}" for k, v in cv.items())
    return f"{fitted}, cross-validated error {errors}"


def provenance_of(name: str) -> str:
    """The provenance phrase of a profile by name, or what is known when it
    no longer loads (a report rendered again after a profile went away)."""
    try:
        return load_profile(name).provenance
    except ProfileError:
        return "a profile no longer available; its error is unknown"


def available() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def load_profile(name_or_path: str | Path) -> Profile:
    """Load `u74`, `c910`, ... from emu/profiles, or any path to a .toml file."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = PROFILE_DIR / f"{name_or_path}.toml"
        if not path.exists():
            raise ProfileError(f"unknown cost profile {name_or_path!r}; available: {', '.join(available())}")
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        if key not in _LOADED:
            _LOADED[key] = parse_profile(tomllib.loads(path.read_text()), str(path))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ProfileError(f"{path}: cannot read profile: {e}") from None
    return _LOADED[key]


# (resolved path, mtime, size) -> Profile: a Machine per sweep point must not re-parse TOML
_LOADED: dict[tuple[str, int, int], Profile] = {}


def parse_profile(data: dict, where: str = "<profile>") -> Profile:
    engine = data.get("engine", {}).get("kind", "inorder")
    if engine not in ("inorder", "ooo"):
        raise ProfileError(f"{where}: [engine] kind must be \"inorder\" or \"ooo\", got {engine!r}")
    values: dict[str, object] = {}
    for (table, key), field in _KEYS.items():
        try:
            value = data[table][key]
        except (KeyError, TypeError):
            ooo_default = engine == "ooo" and table == "cache" and key in ("miss_load", "miss_store")
            if ooo_default:  # the ooo engine times misses through [l2] and [dram]
                values[field] = 0
                continue
            if (table, key) not in _OPTIONAL:
                raise ProfileError(f"{where}: missing [{table}] {key}") from None
            values[field] = _OPTIONAL[table, key]
            continue
        want = bool if field == "div_pipelined" else int
        if type(value) is not want or (want is int and value < 0):
            raise ProfileError(f"{where}: [{table}] {key} must be a non-negative {want.__name__}, got {value!r}")
        values[field] = value
    cal = data.get("calibration", {})
    for key in ("against", "error"):
        if not isinstance(cal.get(key), str):
            raise ProfileError(f"{where}: [calibration] {key} must be a string (what it was calibrated "
                               f"against / how far off it is)")
    if values["load_to_store"] == -1:
        values["load_to_store"] = max(values["lat_load"] - values["store_data_late"], 0)
    p = Profile(name=str(data.get("name", Path(where).stem)), description=str(data.get("description", "")),
                calibrated_against=cal["against"], calibration_error=cal["error"], engine=engine,
                provenance=provenance(cal),
                ooo=_parse_ooo(data, where) if engine == "ooo" else None,
                vector=_parse_vector(data, where, engine), **values)
    _check_geometry(p, where)
    return p


def _check_geometry(p: Profile, where: str) -> None:
    if p.issue_width < 1 or p.mem_pipes < 1:
        raise ProfileError(f"{where}: issue_width and mem_pipes must be at least 1")
    line, ways, size = p.cache_line, p.cache_ways, p.cache_size
    if line < 8 or line & (line - 1) or ways < 1 or size % (line * ways):
        raise ProfileError(f"{where}: cache geometry {size}/{line}/{ways} is not size = sets*ways*line "
                           f"with a power-of-two line of at least 8 bytes")
    sets = size // (line * ways)
    if sets & (sets - 1):
        raise ProfileError(f"{where}: cache has {sets} sets; must be a power of two")


PROFILE_FIELDS = [f.name for f in fields(Profile)]
