"""The instruction lines of a kernel-style .S, for editing: plain
`op a, b, c` or the `fixup OP, REG, ADDR, LBL` macro, the routine a line
belongs to, address offsets written with SZREG.  Labels, comments and
preprocessor lines are read by gen.emission.asmtext, the reader patch uses too.

Role: the text layer under mutate.edits.  May import gen.emission.asmtext and the
standard library.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from copygen.gen.emission.asmtext import Line, code_lines, split_line

SZREG = 8
WORD_LOADS = {"REG_L", "ld"}
LOADS = WORD_LOADS | {"lw", "lwu", "lh", "lhu", "lb", "lbu"}
STORES = {"REG_S": SZREG, "sd": 8, "sw": 4, "sh": 2, "sb": 1}


@dataclass(frozen=True)
class Insn:
    """One instruction line: `fixup OP, REG, ADDR, LBL` or `op a, b, c`."""
    no: int                        # 0-based index into the line list
    prefix: str                    # indentation (and a numeric label, if any)
    op: str
    args: tuple[str, ...]
    comment: str
    fixup: bool = False

    def render(self, op: str | None = None, args: tuple[str, ...] | None = None,
               fixup: bool | None = None, note: str = "") -> str:
        op, args = op or self.op, self.args if args is None else args
        fixup = self.fixup if fixup is None else fixup
        body = (f"fixup {op}, {', '.join(args)}" if fixup
                else f"{op}\t{', '.join(args)}" if args else op)
        tail = f"\t\t/* mutant: {note} */" if note else self.comment
        return f"{self.prefix}{body}{tail}"


def parse_insn(no: int, line: str) -> Insn | None:
    """The instruction on a line read alone, or None for labels, directives,
    comments and preprocessor lines."""
    return _insn(no, split_line(line))


def _insn(no: int, line: Line) -> Insn | None:
    body = line.code.strip()
    if not body or body.startswith((".", "\\")):
        return None                # a directive, a macro argument line
    op, rest = (re.split(r"\s+", body, maxsplit=1) + [""])[:2]
    if "(" in op:
        return None                # SYM_FUNC_START(...), EXPORT_SYMBOL(...)
    if op == "fixup":
        parts = [p.strip() for p in re.split(r"\s*[,\s]\s*", rest.strip(), maxsplit=1)]
        args = tuple(a.strip() for a in parts[1].split(",")) if len(parts) > 1 else ()
        return Insn(no, line.prefix, parts[0], args, line.comment, fixup=True)
    args = tuple(a.strip() for a in rest.split(",")) if rest else ()
    return Insn(no, line.prefix, op, args, line.comment)


@lru_cache(maxsize=8)
def _split(text: str) -> tuple:
    """The text's lines, split (the mutators ask again and again of one text)."""
    return tuple(code_lines(text.splitlines()))


def insns(text: str) -> list[Insn]:
    """Every instruction line of a .S text, in order (a comment open across
    lines, a preprocessor line or a macro body holds none)."""
    return [i for n, ln in enumerate(_split(text)) if (i := _insn(n, ln))]


@lru_cache(maxsize=8)
def _routines(text: str) -> tuple:
    """Per line of the text, the SYM_FUNC_START name enclosing it, if any."""
    names, name = [], None
    for ln in _split(text):
        m = re.search(r"SYM_FUNC_START\((\w+)\)", ln.code)
        if m:
            name = m.group(1)
        elif re.search(r"SYM_FUNC_END\(", ln.code):
            name = None
        names.append(name)
    return tuple(names)


def routine_at(text: str, no: int) -> str | None:
    """The SYM_FUNC_START name enclosing 0-based line `no`, if any."""
    names = _routines(text)
    return names[min(no, len(names) - 1)] if names and no >= 0 else None


def edit(text: str, no: int, new: list[str]) -> str:
    lines = text.splitlines()
    lines[no:no + 1] = new
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def offset(addr: str) -> tuple[int, str] | None:
    """`2*SZREG(a1)` -> (16, 'a1'); None if the offset is not a plain expression."""
    m = re.fullmatch(r"(.*)\((\w+)\)", addr.strip())
    if not m:
        return None
    expr = m.group(1).replace("SZREG", str(SZREG)).strip() or "0"
    if not re.fullmatch(r"[-+*0-9 ()]+", expr):
        return None
    return eval(expr, {"__builtins__": {}}), m.group(2)   # digits and + - * only


def is_csr_status(ins: Insn) -> bool:
    return bool(ins.args) and ins.args[0] in ("CSR_STATUS", "sstatus")
