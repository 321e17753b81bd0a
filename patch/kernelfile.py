"""A kernel tree's arch/riscv/lib/uaccess.S, read as lines: its functions,
its layout, and the places a strategy's routines go.

Functions are spans between SYM_FUNC_START(name) (or ENTRY(name)) and the
SYM_FUNC_END/END/ENDPROC(name) that closes them; start markers that follow
one another (the 2021 layout's ENTRY(__asm_copy_to_user) and
ENTRY(__asm_copy_from_user)) open one span.  The body is what lies between
the last start marker and the end marker.

Layouts (DOMAIN.md section 7):
  mainline  has fallback_scalar_usercopy_sum_enabled: the scalar copy, run
            with SUM held by its callers; __asm_copy_to_user only dispatches
  2021      __asm_copy_to_user holds the whole copy, SUM handling included
In both, __clear_user sets and clears SUM itself.

Role: find things in the text; change nothing.  May import gen.errors and
the standard library.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from copygen.gen.errors import CopygenError, Loc

UACCESS = "arch/riscv/lib/uaccess.S"
START = re.compile(r"^\s*(?:SYM_FUNC_START(?:_LOCAL|_WEAK)?|ENTRY)\((\w+)\)")
END = re.compile(r"^\s*(?:SYM_FUNC_END|END|ENDPROC)\((\w+)\)")
FIXUP_MACRO = re.compile(r"^\s*\.macro\s+fixup\s+op[\s,]+reg[\s,]+addr[\s,]+lbl\s*$")
MAINLINE_COPY = "fallback_scalar_usercopy_sum_enabled"
COPY_2021 = "__asm_copy_to_user"
CLEAR = "__clear_user"
# what a strategy block replaces, by the block's name in the .copy language
KINDS = ("copy_user", "clear_user")


@dataclass(frozen=True)
class Function:
    """Line indices (from 0) of one function: the start marker(s), the body
    [body_start, body_end) and the end marker at body_end."""

    name: str
    start: int
    body_start: int
    body_end: int


@dataclass(frozen=True)
class Place:
    """Where a strategy block goes: the function whose body it replaces,
    and whether that body runs with SUM held by its caller."""

    kind: str            # copy_user | clear_user
    function: Function
    sum_held: bool


def functions(lines: list[str], path: str) -> dict[str, Function]:
    """Every function span of the file, by name."""
    out: dict[str, Function] = {}
    i = 0
    while i < len(lines):
        m = START.match(lines[i])
        if not m:
            i += 1
            continue
        name, start = m.group(1), i
        while i + 1 < len(lines) and START.match(lines[i + 1]):
            i += 1
        body_start = i + 1
        end = next((j for j in range(body_start, len(lines))
                    if (e := END.match(lines[j])) and e.group(1) == name), None)
        if end is None:
            raise CopygenError(f"{name} has no end marker", Loc(path, start + 1, 1),
                               hint=f"expected SYM_FUNC_END({name}) or END({name}) below it")
        out[name] = Function(name, start, body_start, end)
        i = body_start
    return out


def layout(fns: dict[str, Function]) -> str:
    """`mainline` or `2021` (see the module's docstring)."""
    if MAINLINE_COPY in fns:
        return "mainline"
    return "2021"


def places(lines: list[str], path: str, kinds: tuple[str, ...]) -> tuple[str, list[Place]]:
    """(layout, the places of `kinds`), or a CopygenError naming what is
    missing: a routine the file does not have, or the fixup macro every
    generated user access is written with."""
    fns = functions(lines, path)
    lay = layout(fns)
    if not any(FIXUP_MACRO.match(line) for line in lines):
        raise CopygenError(f"{path} defines no `fixup op reg addr lbl` macro",
                           Loc(path), hint="the generated code marks every user access with the "
                           "tree's own fixup macro, as uaccess.S has since 2021")
    want = {"copy_user": (MAINLINE_COPY if lay == "mainline" else COPY_2021, lay == "mainline"),
            "clear_user": (CLEAR, False)}
    out = []
    for kind in kinds:
        name, held = want[kind]
        fn = fns.get(name)
        if fn is None or fn.body_end == fn.body_start:
            have = ", ".join(fns) or "none"
            raise CopygenError(f"no function {name} in {path} ({lay} layout) to hold the {kind} routine",
                               Loc(path), hint=f"functions there: {have}")
        out.append(Place(kind, fn, held))
    return lay, out
