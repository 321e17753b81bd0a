"""A kernel tree's arch/riscv/lib/uaccess.S, read as lines: its functions,
its layout, and the places a strategy's routines go.

Functions are spans between SYM_FUNC_START(name) (or ENTRY(name)) and the
SYM_FUNC_END/END/ENDPROC(name) that closes them; start markers that follow
one another (the 2021 layout's ENTRY(__asm_copy_to_user) and
ENTRY(__asm_copy_from_user)) open one span.  The body is what lies between
the last start marker and the end marker.

Layouts (docs/patching.md, "Three layouts"), each recognised by its functions:
  2021      __asm_copy_to_user holds the whole copy, SUM handling included
            (2021 and vendor trees)
  6.8       __asm_copy_to_user holds the vector dispatch, then opens
            fallback_scalar_usercopy inside itself: the scalar copy with its
            own SUM handling, ending where __asm_copy_to_user ends (Linux 6.8
            to about 6.15, e.g. the 6.12 LTS)
  mainline  fallback_scalar_usercopy_sum_enabled is the scalar copy, run
            with SUM held by its callers; fallback_scalar_usercopy wraps it
            (2025 and later)
A file that matches none is refused.  In all, __clear_user sets and clears
SUM itself.  A function's body ends at the first end marker below its last
start marker, so the 6.8 layout's nested fallback_scalar_usercopy ends at
SYM_FUNC_END(__asm_copy_to_user).

Registers kept live: where the file calls the function a body goes into
(mainline's wrapper calls the scalar copy), every register the caller reads
after the call before writing it, other than the result a0 and those the
calling convention already keeps (ra, sp, gp, tp, s0-s11), must survive
the body: the lowering leaves them out of its register pools.

Role: find things in the text; change nothing.  May import copygen.errors,
gen.emission.asmtext and the standard library.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from copygen.errors import CopygenError, Loc
from copygen.gen.emission import asmtext

UACCESS = "arch/riscv/lib/uaccess.S"
START = re.compile(r"^\s*(?:SYM_FUNC_START(?:_LOCAL|_WEAK)?|ENTRY)\((\w+)\)")
END = re.compile(r"^\s*(?:SYM_FUNC_END|END|ENDPROC)\((\w+)\)")
FIXUP_MACRO = re.compile(r"^\s*\.macro\s+fixup\s+op[\s,]+reg[\s,]+addr[\s,]+lbl\s*$")
MAINLINE_COPY = "fallback_scalar_usercopy_sum_enabled"
FALLBACK = "fallback_scalar_usercopy"
COPY_2021 = "__asm_copy_to_user"
LAYOUTS = {"2021": "the copy is the body of __asm_copy_to_user (2021 and vendor trees)",
           "6.8": "fallback_scalar_usercopy opens inside __asm_copy_to_user (Linux 6.8-6.15)",
           "mainline": "fallback_scalar_usercopy_sum_enabled holds the copy (2025 and later)"}
CALL = re.compile(r"^\s*(?:call|jal)\s+(?:ra\s*,\s*)?(\w+)\s*$")
REG = re.compile(r"(?<![\w.$])(ra|sp|gp|tp|zero|[ast]\d{1,2}|fp)(?![\w.$])")
# registers the psABI already makes a callee keep (clause A1 checks them)
CALLEE_KEPT = {"ra", "sp", "gp", "tp", "fp", "zero"} | {f"s{i}" for i in range(12)}
# first operand is read, not written
READS_FIRST = re.compile(r"^(?:s[bhwd]|REG_S|b\w*|csr[sc]|csrw|jr|sc\.\w+|amo\w+)$")
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
    whether that body runs with SUM held by its caller, and the registers
    the code around it keeps live across it."""

    kind: str            # copy_user | clear_user
    function: Function
    sum_held: bool
    keep: tuple[str, ...] = ()


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
        own = next((j for j in range(body_start, len(lines))
                    if (e := END.match(lines[j])) and e.group(1) == name), None)
        if own is None:
            raise CopygenError(f"{name} has no end marker", Loc(path, start + 1, 1),
                               hint=f"expected SYM_FUNC_END({name}) or END({name}) below it")
        first = next(j for j in range(body_start, own + 1) if END.match(lines[j]))
        out[name] = Function(name, start, body_start, first)
        i = body_start
    return out


def _nested(fns: dict[str, Function], inner: str, outer: str) -> bool:
    a, b = fns.get(inner), fns.get(outer)
    return a is not None and b is not None and b.start < a.start < b.body_end


def layout(fns: dict[str, Function], path: str = "uaccess.S") -> str:
    """`2021`, `6.8` or `mainline` (see the module's docstring), or a
    CopygenError when the functions match none of them."""
    if COPY_2021 not in fns:
        raise CopygenError(f"{path} has no {COPY_2021}", Loc(path),
                           hint="copygen patch knows the layouts: " + "; ".join(LAYOUTS.values()))
    if MAINLINE_COPY in fns and FALLBACK in fns:
        return "mainline"
    if _nested(fns, FALLBACK, COPY_2021) and MAINLINE_COPY not in fns:
        return "6.8"
    if FALLBACK not in fns and MAINLINE_COPY not in fns:
        return "2021"
    odd = fns.get(FALLBACK) or fns[MAINLINE_COPY]
    raise CopygenError(f"{path}: {odd.name} is there, but not as any kernel lays it out",
                       Loc(path, odd.start + 1, 1),
                       hint="copygen patch knows the layouts: " + "; ".join(LAYOUTS.values()))


def _registers(code: str) -> tuple[set[str], set[str]]:
    """(read, written) registers of one line of code."""
    words = code.replace(",", " ").split(None, 1)
    if not words:
        return set(), set()
    op, rest = words[0], (words[1] if len(words) > 1 else "")
    regs = REG.findall(rest)
    if op in ("ret",):
        return {"ra"}, set()
    if not regs or READS_FIRST.match(op):
        return set(regs), set()
    return set(regs[1:]), {regs[0]}


def kept_live(lines: list[str], fns: dict[str, Function], callee: str) -> tuple[str, ...]:
    """Registers some caller in the file reads after `call callee` before
    writing them, less a0 and the ones the calling convention keeps."""
    code = asmtext.code_lines(lines)
    out: set[str] = set()
    for fn in fns.values():
        for i in range(fn.body_start, fn.body_end):
            m = CALL.match(code[i].code)
            if not m or m.group(1) != callee:
                continue
            written: set[str] = set()
            for j in range(i + 1, fn.body_end):
                read, wrote = _registers(code[j].code)
                out |= read - written
                written |= wrote
                words = code[j].code.split()
                if words and words[0] in asmtext.NO_FALL:
                    break
    return tuple(sorted(out - CALLEE_KEPT - {"a0"}))


def places(lines: list[str], path: str, kinds: tuple[str, ...]) -> tuple[str, list[Place]]:
    """(layout, the places of `kinds`), or a CopygenError naming what is
    missing: a routine the file does not have, or the fixup macro every
    generated user access is written with."""
    fns = functions(lines, path)
    lay = layout(fns, path)
    if not any(FIXUP_MACRO.match(line) for line in lines):
        raise CopygenError(f"{path} defines no `fixup op reg addr lbl` macro",
                           Loc(path), hint="the generated code marks every user access with the "
                           "tree's own fixup macro, as uaccess.S has since 2021")
    copy = {"mainline": MAINLINE_COPY, "6.8": FALLBACK, "2021": COPY_2021}[lay]
    want = {"copy_user": (copy, lay == "mainline"), "clear_user": (CLEAR, False)}
    out = []
    for kind in kinds:
        name, held = want[kind]
        fn = fns.get(name)
        if fn is None or fn.body_end == fn.body_start:
            have = ", ".join(fns) or "none"
            raise CopygenError(f"no function {name} in {path} ({lay} layout) to hold the {kind} routine",
                               Loc(path), hint=f"functions there: {have}")
        out.append(Place(kind, fn, held, kept_live(lines, fns, name)))
    return lay, out
