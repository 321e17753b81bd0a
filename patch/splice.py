"""Put generated bodies into a kernel file; leave every other line as it was.

splice() replaces the body of each placed function (kernelfile.Place) with
its new text.  Fault code kept outside the functions, in a section of its
own (the 2021 layout's `.section .fixup`), is cut into pieces at its labels;
a piece that only the replaced bodies reached (directly, or by falling
into it from such a piece) is dead once they are gone and is removed with
them, and so is the whole section, with the comment just above it, when
nothing in it is reached any more.  Nothing else changes.

Before returning it checks that the result still means what the old file
meant everywhere else: every label a kept line refers to resolves to the
same kept line as before (a generated `1:` must not capture a kept `1f`,
and no kept line may refer to a label only a replaced body defined).

Role: text in, text out.  May import gen.emission.asmtext, patch.kernelfile,
copygen.errors and the standard library.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from copygen.errors import CopygenError, Loc
from copygen.gen.emission import asmtext
from copygen.patch.kernelfile import Place

SECTION = re.compile(r"^\s*\.section\s+\.fixup\b")
SECTION_END = re.compile(r"^\s*(\.previous|\.text|\.section|\.data)\b")


@dataclass(frozen=True)
class Region:
    """Old lines [start, end) that the splice replaced or removed."""

    start: int
    end: int
    what: str


@dataclass
class Spliced:
    text: str
    regions: list[Region] = field(default_factory=list)
    inserted: list[tuple[int, int]] = field(default_factory=list)   # new lines [start, end)


def _fault_sections(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line of each `.section .fixup` ... `.previous` block."""
    out = []
    i = 0
    while i < len(lines):
        if SECTION.match(lines[i]):
            end = next((j for j in range(i + 1, len(lines)) if SECTION_END.match(lines[j])),
                       len(lines) - 1)
            out.append((i, end))
            i = end
        i += 1
    return out


def _pieces(code: list[asmtext.Line], sections) -> list[tuple[int, int, int]]:
    """(section index, start, end) of each labelled piece of fault code."""
    out = []
    for k, (first, last) in enumerate(sections):
        starts = [i for i in range(first + 1, last) if code[i].label]
        for a, b in zip(starts, starts[1:] + [last]):
            out.append((k, a, b))
    return out


def _dead_pieces(code, replaced: set[int], sections) -> list[tuple[int, int, int]]:
    """The pieces of fault code nothing but the replaced bodies reaches."""
    defs = asmtext.defined(code)
    pieces = _pieces(code, sections)
    owner = {i: p for p in pieces for i in range(p[1], p[2])}
    live: set = set()
    todo = [i for i in range(len(code)) if i not in replaced and i not in owner]
    while todo:
        i = todo.pop()
        for _, target in asmtext.references(code, i, defs):
            p = owner.get(target)
            if p is not None and p not in live:
                live.add(p)
                todo += range(p[1], p[2])
        p = owner.get(i)
        if p is not None and p in live:
            nxt = next((q for q in pieces if q[0] == p[0] and q[1] == p[2]), None)
            if nxt is not None and nxt not in live and asmtext.falls_through(code, p[1], p[2]):
                live.add(nxt)
                todo += range(nxt[1], nxt[2])
    return [p for p in pieces if p not in live]


def _comment_above(lines: list[str], i: int) -> int:
    """The first line of the comment block that ends just above line i (or i)."""
    j = i
    if j > 0 and lines[j - 1].strip().endswith("*/"):
        j -= 1
        while j > 0 and not lines[j].strip().startswith("/*"):
            j -= 1
    return j


def _removals(lines, code, replaced: set[int]) -> list[Region]:
    sections = _fault_sections(lines)
    dead = _dead_pieces(code, replaced, sections)
    out = []
    for k, (first, last) in enumerate(sections):
        mine = [p for p in dead if p[0] == k]
        if mine and len(mine) == len(_pieces(code, [(first, last)])):
            start = _comment_above(lines, first)
            end = last + 1
            if all(not s.strip() for s in lines[end:]):
                while start > 0 and not lines[start - 1].strip():
                    start -= 1
            out.append(Region(start, end, "fault code only the replaced bodies used"))
        else:
            for _, a, b in mine:
                if out and out[-1].end == a:
                    a = out.pop().start
                out.append(Region(a, b, "fault code only the replaced bodies used"))
    return out


def splice(text: str, bodies: list[tuple[Place, str]], path: str) -> Spliced:
    """The file with each place's body replaced by its text (see the module)."""
    lines = text.splitlines(keepends=True)
    code = asmtext.code_lines(lines)
    regions = [Region(p.function.body_start, p.function.body_end, f"body of {p.function.name}")
               for p, _ in bodies]
    replaced = {i for r in regions for i in range(r.start, r.end)}
    regions += _removals(lines, code, replaced)
    regions.sort(key=lambda r: r.start)
    new_body = {p.function.body_start: body for p, body in bodies}
    out: list[str] = []
    inserted = []
    old_to_new: dict[int, int] = {}
    i = 0
    while i < len(lines):
        region = next((r for r in regions if r.start == i), None)
        if region is None:
            old_to_new[i] = len(out)
            out.append(lines[i])
            i += 1
            continue
        if i in new_body:
            body = new_body[i].splitlines(keepends=True)
            inserted.append((len(out), len(out) + len(body)))
            out += body
        i = region.end
    result = Spliced("".join(out), regions, inserted)
    _check_references(lines, code, out, old_to_new, path)
    return result


def _check_references(old_lines, old_code, new_lines, old_to_new, path: str) -> None:
    """Every reference of a kept line resolves to the same kept line as before."""
    new_code = asmtext.code_lines(new_lines)
    old_defs, new_defs = asmtext.defined(old_code), asmtext.defined(new_code)
    for i, j in old_to_new.items():
        before = asmtext.references(old_code, i, old_defs)
        after = dict(asmtext.references(new_code, j, new_defs))
        for label, target in before:
            if target is None:
                continue
            want = old_to_new.get(target)
            if want is None:
                raise CopygenError(f"line {i + 1} refers to `{label}`, which only the replaced code "
                                   "defines", Loc(path, i + 1, 1), line_text=old_lines[i].rstrip("\n"),
                                   hint="this file's layout is not one copygen patch knows")
            if after.get(label) != want:
                raise CopygenError(f"line {i + 1}: `{label}` would resolve elsewhere in the "
                                   "patched file", Loc(path, i + 1, 1),
                                   line_text=old_lines[i].rstrip("\n"),
                                   hint="a generated label clashes with the file's own")
