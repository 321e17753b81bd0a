"""Labels in a kernel .S file, read line by line: where each is defined and
what each line refers to, with GNU as's numeric local labels (`1:`, `1b`,
`10f`) resolved the way the assembler resolves them.

Only the code is read: C comments, `//` comments, preprocessor lines and
macro bodies (their labels are per expansion, like the fixup macro's
`100:`) are skipped.  Role: text analysis for the splice.  May import only
the standard library.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

LABEL = re.compile(r"^\s*([A-Za-z_.$][\w.$]*|\d+):")
NUMERIC_REF = re.compile(r"(?<![\w.$])(\d+)([fb])(?![\w.$])")
NAME = re.compile(r"(?<![\w.$])([A-Za-z_.$][\w.$]*)")
# instructions after which control never falls into the next line
NO_FALL = {"ret", "j", "jr", "tail", "sret", "mret"}


@dataclass(frozen=True)
class Line:
    """One line's code (comments and strings of no interest removed)."""

    label: str | None      # the label it defines, if any
    code: str              # what follows the label


def code_lines(lines: list[str]) -> list[Line]:
    """Each line's label and code, comments and macro bodies blanked."""
    out: list[Line] = []
    in_comment = in_macro = False
    for raw in lines:
        text, in_comment = _strip_comments(raw, in_comment)
        stripped = text.strip()
        if stripped.startswith("#"):
            out.append(Line(None, ""))
            continue
        if stripped.startswith(".macro"):
            in_macro = True
        if in_macro:
            in_macro = not stripped.startswith(".endm")
            out.append(Line(None, ""))
            continue
        m = LABEL.match(text)
        label = m.group(1) if m else None
        out.append(Line(label, text[m.end():] if m else text))
    return out


def _strip_comments(line: str, in_comment: bool) -> tuple[str, bool]:
    """The line without /* */ and // comments; whether a comment stays open."""
    out, i = [], 0
    while i < len(line):
        if in_comment:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i, in_comment = end + 2, False
        elif line.startswith("/*", i):
            in_comment = True
            i += 2
        elif line.startswith("//", i):
            break
        else:
            out.append(line[i])
            i += 1
    return "".join(out), in_comment


def defined(code: list[Line]) -> dict[str, list[int]]:
    """Label -> the lines that define it (numeric labels may repeat)."""
    out: dict[str, list[int]] = {}
    for i, line in enumerate(code):
        if line.label:
            out.setdefault(line.label, []).append(i)
    return out


def named_labels(code: list[Line], keep=lambda i: True) -> set[str]:
    """The non-numeric labels defined on lines `keep` accepts."""
    return {ln.label for i, ln in enumerate(code)
            if ln.label and not ln.label.isdigit() and keep(i)}


def references(code: list[Line], i: int, defs: dict[str, list[int]]) -> list[tuple[str, int | None]]:
    """(label, the line it resolves to) for each label line i refers to:
    `Nf` is the next `N:` after it, `Nb` the last one at or before it, a
    name its (first) definition; None when it resolves nowhere."""
    text = code[i].code
    out: list[tuple[str, int | None]] = []
    for m in NUMERIC_REF.finditer(text):
        where = defs.get(m.group(1), [])
        if m.group(2) == "f":
            out.append((m.group(0), next((d for d in where if d > i), None)))
        else:
            out.append((m.group(0), next((d for d in reversed(where) if d <= i), None)))
    for m in NAME.finditer(NUMERIC_REF.sub(" ", text)):
        name = m.group(1)
        if name in defs and not name.isdigit():
            out.append((name, defs[name][0]))
    return out


def falls_through(code: list[Line], start: int, end: int) -> bool:
    """Whether control can run off the end of lines [start, end)."""
    for line in reversed(code[start:end]):
        words = line.code.split()
        if words:
            return words[0] not in NO_FALL
    return True
