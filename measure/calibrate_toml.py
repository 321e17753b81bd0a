"""A fitted profile's TOML text: the original file with fitted values put in place.

Role: edit a profile's text rather than re-serialise its data, so that every
comment (each value's source) survives.  A fitted key keeps its line, gets
its new value and a comment starting "fitted:" that keeps the old value and
its old comment; a key the file left to its default is added to its table.
The `[calibration]` table (and any `[calibration.*]` sub-table of an
earlier fit) is replaced by the new record: `against` and `error` strings
first, as emu.timing.profile reads them, then the record's figures; the
per-cell residuals go in a `[calibration.residuals]` sub-table at the end.
May import the standard library.
"""
from __future__ import annotations

import math
import re

_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.-]+)\s*\]\]?\s*(#.*)?$")
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_value(v) -> str:
    """A TOML value (one line) for str, bool, int, float, list, dict."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"TOML has no value for {v}")
        return repr(v)
    if isinstance(v, str):
        out = v.replace("\\", "\\\\").replace('"', '\\"')
        out = "".join(c if c >= " " or c == "\t" else f"\\u{ord(c):04x}" for c in out)
        return f'"{out}"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items() if x is not None) + " }"
    if v is None:
        raise ValueError("TOML has no null")
    raise TypeError(f"no TOML value for {type(v).__name__}")


def toml_key(k: str) -> str:
    return k if _BARE.match(k) else toml_value(k)


def _sections(lines: list[str]) -> list[tuple[str, int, int]]:
    """(table name, first line, end line) of each section; '' is the top."""
    heads = [(i, _HEADER.match(ln).group(1)) for i, ln in enumerate(lines) if _HEADER.match(ln)]
    out, prev, name = [], 0, ""
    for i, nm in heads:
        out.append((name, prev, i))
        prev, name = i, nm
    out.append((name, prev, len(lines)))
    return out


def _own_end(lines: list[str], start: int, end: int) -> int:
    """A section's end without the comments and blank lines just before the
    next header (they introduce that one)."""
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return end


def set_value(lines: list[str], table: str, key: str, value: int, note: str) -> list[str]:
    """The lines with `table.key = value  # fitted: note`."""
    key_re = re.compile(rf"^(\s*){re.escape(key)}(\s*=\s*)([^#]*?)(\s*)(#\s?(.*))?$")
    for name, a, b in _sections(lines):
        if name != table:
            continue
        for i in range(a + 1, b):
            m = key_re.match(lines[i])
            if m:
                old = m.group(3).strip()
                start = f" (start {old}" + (f": {m.group(6).strip()}" if m.group(6) else "") + ")"
                head = f"{m.group(1)}{key}{m.group(2)}{value}"
                column = m.start(5) if m.group(5) else 0       # keep the comments' column
                lines = list(lines)
                lines[i] = f"{head.ljust(column - 1)} # fitted: {note}{start}"
                return lines
        end = _own_end(lines, a, b)
        return lines[:end] + [f"{key} = {value}  # fitted: {note} (start: the engine's default)"] + lines[end:]
    return lines + ["", f"[{table}]", f"{key} = {value}  # fitted: {note} (start: the engine's default)"]


def set_name(lines: list[str], name: str) -> list[str]:
    for i, ln in enumerate(lines):
        if _HEADER.match(ln):
            break
        if re.match(r"^\s*name\s*=", ln):
            return lines[:i] + [f"name = {toml_value(name)}"] + lines[i + 1:]
    return [f"name = {toml_value(name)}"] + lines


def replace_calibration(lines: list[str], table: dict, residuals: list[dict], comment: str) -> list[str]:
    """Drop [calibration] and its sub-tables; put the new [calibration] where
    the old one was (at the end when there was none) and the residuals last."""
    body = ["[calibration]"] + [f"{toml_key(k)} = {_long(v)}" for k, v in table.items() if v is not None]
    out, placed = [], False
    for name, a, b in _sections(lines):
        if name == "calibration" or name.startswith("calibration."):
            end = _own_end(lines, a, b)
            if name == "calibration" and not placed:
                out += body
                placed = True
            out += lines[end:b]
            continue
        out += lines[a:b]
    while out and not out[-1].strip():
        out.pop()
    if not placed:
        out += [""] + body
    out += ["", f"# {comment}", "[calibration.residuals]", "cells = ["]
    out += [f"    {toml_value(r)}," for r in residuals]
    out += ["]"]
    return out


def _long(v) -> str:
    """A value; a list of tables one per line, for a reader."""
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        return "[\n" + "".join(f"    {toml_value(x)},\n" for x in v) + "]"
    return toml_value(v)


def fitted_text(original: str, values: list[tuple[str, str, int]], note: str,
                calibration: dict, residuals: list[dict], residual_comment: str,
                name: str | None = None) -> str:
    """The profile text with `values` ((table, key, value) each) fitted and
    the [calibration] table replaced."""
    lines = original.splitlines()
    for table, key, value in values:
        lines = set_value(lines, table, key, value, note)
    if name:
        lines = set_name(lines, name)
    lines = replace_calibration(lines, calibration, residuals, residual_comment)
    return "\n".join(lines) + "\n"
