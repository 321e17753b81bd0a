"""Reading a kernel-style .S file line by line, with the rules GNU as and the
C preprocessor apply to it (the one reader of assembly text: mutate edits
instruction lines with it, patch finds and moves labelled code with it).

The rules, in the order they are applied along a line:
* `"..."` is a string (backslash escapes its quote); nothing inside is a
  comment or a label reference;
* `/* ... */` is a comment and may span lines; `//` comments to the end of
  the line (the preprocessor removes both);
* `#` as the line's first non-blank character starts a preprocessor line
  (`#include`, `#define`, `#ifdef` ...), continued while it ends with `\\`;
  anywhere else `#` comments to the end of the line (RISC-V's comment
  character);
* a label is a name (`[A-Za-z_.$][\\w.$]*`) or a number (`1:`, GNU as's
  numeric local label) followed by `:` at the start of the code;
* a `.macro` ... `.endm` body is no code of the file: its labels and
  instructions exist once per expansion.

GNU as's numeric labels are resolved the way the assembler resolves them:
`Nf` is the next `N:` after the reference, `Nb` the last one at or before.

Role: assembly text -> lines (label, code, comment).  It lives in gen, the
layer that writes this text, because both readers (mutate and patch) may
import gen and neither may import the other.  May import only the standard
library.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

LABEL = re.compile(r"^\s*([A-Za-z_.$][\w.$]*|\d+):")
NUMERIC_REF = re.compile(r"(?<![\w.$])(\d+)([fb])(?![\w.$])")
NAME = re.compile(r"(?<![\w.$])([A-Za-z_.$][\w.$]*)")
STRING = re.compile(r'"(?:[^"\\]|\\.)*"?')
# instructions after which control never falls into the next line
NO_FALL = {"ret", "j", "jr", "tail", "sret", "mret"}


@dataclass(frozen=True)
class Line:
    """One line of the file, split.  A preprocessor line or a macro body line
    has no label and no code (its text is all in `comment`)."""

    label: str | None      # the label it defines, if any
    code: str              # what follows the label, comments removed
    prefix: str = ""       # the text before `code`: indentation and label
    comment: str = ""      # the comments removed, as written (leading blanks kept)
    kind: str = "code"     # "code", "preprocessor" or "macro"


def code_lines(lines: list[str]) -> list[Line]:
    """Each line of a file, split; comment state is carried across lines."""
    out: list[Line] = []
    in_comment = in_macro = continued = False
    for raw in lines:
        if continued and not in_comment:
            continued = raw.rstrip().endswith("\\")
            out.append(Line(None, "", comment=raw, kind="preprocessor"))
            continue
        if not in_comment and raw.lstrip().startswith("#"):
            continued = raw.rstrip().endswith("\\")
            out.append(Line(None, "", comment=raw, kind="preprocessor"))
            continue
        code, comment, in_comment = _split_comments(raw, in_comment)
        stripped = code.strip()
        if stripped.startswith(".macro"):
            in_macro = True
        if in_macro:
            in_macro = not stripped.startswith(".endm")
            out.append(Line(None, "", comment=raw, kind="macro"))
            continue
        m = LABEL.match(code)
        if m:
            rest = code[m.end():]
            body = rest.lstrip()
            out.append(Line(m.group(1), body, code[:len(code) - len(body)], comment))
        else:
            body = code.lstrip()
            out.append(Line(None, body, code[:len(code) - len(body)], comment))
    return out


def split_line(line: str) -> Line:
    """One line read alone (no comment open before it)."""
    return code_lines([line])[0]


def _split_comments(line: str, in_comment: bool) -> tuple[str, str, bool]:
    """(code, comments, whether a /* comment stays open).  When the comments
    end the line, `comments` is the line's tail as written."""
    if not in_comment and "/" not in line and "#" not in line and '"' not in line:
        return line, "", False
    keep = []                  # per character: part of the code?
    i = 0
    while i < len(line):
        if in_comment:
            end = line.find("*/", i)
            stop = len(line) if end < 0 else end + 2
            keep += [False] * (stop - i)
            i, in_comment = stop, end < 0
        elif line.startswith("/*", i):
            keep += [False, False]
            i, in_comment = i + 2, True
        elif line.startswith("//", i) or line[i] == "#":
            keep += [False] * (len(line) - i)
            break
        elif line[i] == '"':
            n = len(STRING.match(line, i).group(0))
            keep += [True] * n
            i += n
        else:
            keep.append(True)
            i += 1
    if all(keep):
        return line, "", in_comment
    first = keep.index(False)
    if not any(keep[first:]):
        code = line[:first].rstrip()
        return code, line[len(code):], in_comment
    return ("".join(c for c, k in zip(line, keep) if k),
            "".join(c for c, k in zip(line, keep) if not k), in_comment)


def without_strings(code: str) -> str:
    """The code with each string literal blanked (quotes kept)."""
    return STRING.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', code)


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
    text = without_strings(code[i].code)
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
