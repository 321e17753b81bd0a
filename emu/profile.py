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
PROFILE_DIR = Path(str(files(__package__))) / "profiles"

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
    values: dict[str, object] = {}
    for (table, key), field in _KEYS.items():
        try:
            value = data[table][key]
        except (KeyError, TypeError):
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
                calibrated_against=cal["against"], calibration_error=cal["error"], **values)
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
