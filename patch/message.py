"""The commit message of a patch, and the cover letter of a series.

A message has: a subject `riscv: lib: uaccess: ...` under 75 columns; what
changed and why (clauses the old code breaks, with the counterexample the
verifier replayed; the modelled speed change); the table of modelled cycles
and bytes/cycle before and after, per cost profile, routine, size and
alignment class, marked as a model with what the profile was fitted to;
the proof summary of both versions; with --test kunit, one line per KUnit
suite before and after and, when copygen's fault suite fails on the
unpatched tree, its first failing call quoted as evidence beside the
verifier's; how to reproduce (copygen version, the command, the strategy
source); Signed-off-by from the tree's git config.  Every line fits
checkpatch's 75 columns.  The speed, proof and KUnit sections are
patch.evidence_text's (re-exported here: speed, table, proofs,
kunit_lines, kunit_parts, fault_evidence).

Role: text only.  May import patch.evidence, patch.evidence_text, verify.contract.clauses,
verify.counterexamples.early (NOT_CHECKED), gen (parse, unparse) and the standard library.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from copygen.gen.front.parse import parse_text
from copygen.gen.front.unparse import item_text
from copygen.patch.evidence import Proof, Row
from copygen.patch.evidence_text import (WIDTH, board_speed, faster, kunit_parts, not_proved,
                                         proofs, speed, table, wrap)
# re-exported: patch.run, patch.speeds and the tests take them from here
from copygen.patch.evidence_text import fault_evidence, kunit_lines  # noqa: F401
from copygen.verify.contract.clauses import CLAUSES
from copygen.verify.counterexamples.early import NOT_CHECKED


SUBJECT_MAX = 74
PREFIX = "riscv: lib: uaccess: "
STRING_PREFIX = "riscv: lib: "
# what a violated clause means for a maintainer, for the subject line
TOPIC = {"C4": "fault return", "C5": "fault return", "C6": "fault return", "C2": "fault return",
         "C3": "fault return", "S1": "SUM handling", "S2": "SUM handling", "B1": "bounds",
         "B2": "bounds", "C1": "copy", "A1": "calling convention", "X1": "exception table",
         "T1": "termination"}


@dataclass(frozen=True)
class Change:
    """What one patch changes: the strategy blocks, where, and the evidence."""

    kinds: tuple[str, ...]                   # copy_user, clear_user
    layout: str                              # mainline | 2021 | string_layout(...)
    before: dict[str, list[Proof]]
    after: dict[str, list[Proof]]
    rows: list[Row]
    calibration: dict[str, str]              # profile -> where its figures come from
    skipped: tuple[str, ...] = ()            # entry points reaching the code, not proved
    draft: bool = False
    kunit: tuple[str, ...] = ()              # KUnit results (kunit_lines): a line per suite,
                                             # then the fault suite's evidence after a blank line
    memmove_in_memcpy: bool = False              # memmove in memcpy.S, after memcpy
    board: tuple[Row, ...] = ()              # cells a board measured, before and after
    board_on: str = ""                       # "measured on BOARD (CPU, kernel, date)"
    rules: tuple[str, ...] = ()              # the register rules followed (patch.rules.Rules.lines)


def _what(kinds, layout: str, short: bool = False) -> str:
    copy = "the user copy" if short or layout not in ("mainline", "6.8") else "the scalar user copy"
    names = {"copy_user": copy, "clear_user": "__clear_user",
             "string": "memcpy, memmove and memset" if not short else "mem*"}
    return " and ".join(names[k] for k in kinds)


def _not_checked(proofs: dict[str, list[Proof]], kinds) -> list[str]:
    """Clauses the verifier left unchecked (a violation decided first)."""
    return sorted(not_proved(proofs, kinds, (NOT_CHECKED,)), key=list(CLAUSES).index)


def subject(ch: Change) -> str:
    """The first line: what the patch does to which routines, shortened
    until it fits SUBJECT_MAX."""
    before = not_proved(ch.before, ch.kinds, ("violated",))
    after = not_proved(ch.after, ch.kinds)
    fixed = [c for c in before if c not in after]
    if fixed:
        topics = [TOPIC.get(c, "contract") for c in sorted(fixed, key=list(CLAUSES).index)]
        topic = max(dict.fromkeys(topics), key=topics.count)
        kinds = tuple(k for k in ch.kinds if any(p.kind == k for c in fixed for p in before[c]))
        verb = f"fix the {topic} of "
    elif faster(ch.rows):
        kinds, verb = ch.kinds, "speed up "
    else:
        kinds, verb = ch.kinds, "rework "
    draft = "unproven draft: " if ch.draft else ""
    if "string" in ch.kinds:
        return STRING_PREFIX + draft + _string_subject(ch)
    tries = [PREFIX + draft + verb + _what(kinds, ch.layout, short) for short in (False, True)]
    tries.append(PREFIX + draft + (verb.removesuffix(" of ") if fixed else verb + "uaccess"))
    return next((t for t in tries if len(t) <= SUBJECT_MAX), tries[-1][:SUBJECT_MAX])


def string_layout(asm: tuple[str, ...]) -> str:
    """Change.layout of a string change whose functions `asm` are in assembly."""
    return "string" + "".join(f", {n}.S" for n in asm)


def _asm_functions(ch: Change) -> list[str]:
    return [part.removesuffix(".S") for part in ch.layout.split(", ")[1:]]


def _string_subject(ch: Change) -> str:
    asm = _asm_functions(ch) + (["memmove"] if ch.memmove_in_memcpy else [])
    asm = [n for n in ("memcpy", "memmove", "memset") if n in asm]
    c = [n for n in ("memcpy", "memmove", "memset") if n not in asm]
    what = "generated " + ", ".join(
        ([_listed(c) + " in C"] if c else []) + ([_listed(asm) + " in asm"] if asm else []))
    return what + (", faster" if faster(ch.rows) else "")


def _listed(names: list[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def _string_asm_changed(ch: Change) -> str:
    """What a string change with functions in assembly does to the tree."""
    asm = _asm_functions(ch)
    c = [n for n in ("memcpy", "memmove", "memset")
         if n not in asm and not (n == "memmove" and ch.memmove_in_memcpy)]
    text = ("Replace the text of " + " and ".join(f"{n}.S" for n in asm)
            + " by assembly generated by copygen from the strategy below (kexec's purgatory "
            "builds memcpy.S and memset.S too).")
    if ch.memmove_in_memcpy:
        text += ("  memmove goes into memcpy.S, after memcpy: it branches into memcpy for "
                 "buffers that do not overlap (no call, so no frame where the kernel keeps "
                 "frame pointers) and copies overlapping ones itself, so that memcpy.S "
                 "still links alone into the purgatory.  memmove.S is removed and the "
                 "Makefile no longer builds memmove.o.")
    if c:
        gone = " and ".join(f"{n}.S" for n in c)
        text += (f"  Build string.c ({', '.join(c)}), generated from the same strategy, in "
                 f"place of {gone} (those that no other Makefile builds are removed): the "
                 "Makefile builds string.o instead of " + " and ".join(f"{n}.o" for n in c)
                 + ", freestanding (so that the compiler does not turn its loops into calls "
                 "of the functions themselves), untraced and uninstrumented as the assembly "
                 "was.")
    return text + ("  Every symbol stays: __memcpy with memcpy as its weak alias, the same "
                   "for memmove and memset, and the __pi_ aliases of the early "
                   "position-independent code.  The functions are proved and benched as "
                   "Kbuild built them, from the objects of the kernel build.")


def _changed(ch: Change) -> list[str]:
    if "string" in ch.kinds and _asm_functions(ch):
        return wrap(_string_asm_changed(ch))
    if "string" in ch.kinds:
        return wrap("Build string.c, generated by copygen from the strategy below, in "
                     "place of memcpy.S, memmove.S and memset.S (those that no other Makefile "
                     "builds are removed); the Makefile builds string.o instead, "
                     "freestanding (so that the compiler does not turn its loops into calls "
                     "of the functions themselves), untraced and uninstrumented as the "
                     "assembly was.  Every symbol stays: __memcpy with memcpy as its weak "
                     "alias, the same for memmove and memset, and the __pi_ aliases of the "
                     "early position-independent code.  The functions are proved and benched "
                     "as Kbuild compiled them, from the objects of the kernel build.")
    where = {"copy_user": ("fallback_scalar_usercopy_sum_enabled, the scalar copy behind "
                           "__asm_copy_{to,from}_user and their _sum_enabled variants (it "
                           "runs with SUM held by its callers, so it neither sets nor "
                           "clears SUM, not even on a fault)")
             if ch.layout == "mainline" else
             "__asm_copy_to_user (and so __asm_copy_from_user), SUM handling included",
             "clear_user": "__clear_user, SUM handling included"}
    parts = [where[k] for k in ch.kinds]
    if ch.layout != "mainline" and len(parts) == 2:
        parts = ["__asm_copy_to_user (and so __asm_copy_from_user) and of __clear_user, "
                 "SUM handling included"]
    text = ("Replace the body of " + "; and the body of ".join(parts) +
            ", with code generated by copygen from the strategy below.  The rest of "
            "the file is unchanged")
    text += (", except the fault code in .fixup that only the old bodies reached."
             if ch.layout == "2021" else ".")
    return wrap(text)


def _why(ch: Change) -> list[str]:
    out: list[str] = []
    broken = not_proved(ch.before, ch.kinds, ("violated", "unknown"))
    if broken:
        order = sorted(broken, key=list(CLAUSES).index)
        syms = sorted({p.symbol for c in order for p in broken[c]})
        named = "; ".join(f"{c} {broken[c][0].status[c]} ({CLAUSES[c]})" for c in order)
        text = f"Before this patch the old code has {named}, at {', '.join(syms)}."
        unchecked = _not_checked(ch.before, ch.kinds)
        if unchecked:
            text += (" The verifier stopped at the first violation: "
                     + ", ".join(unchecked) + " were not checked.")
        out += wrap(text)
        shown = next(((c, p) for c in order for p in broken[c]
                      if p.detail.get(c) and not p.detail[c][2:].startswith(" is violated")), None)
        if shown:
            c, p = shown
            detail = p.detail[c].removeprefix("found among small calls before the proof: ")
            out += [""] + wrap(f"{c} at {p.symbol}, replayed in the emulator: "
                                f"{detail}".rstrip(": .") + ".")
        out.append("")
    evidence = kunit_parts(ch.kunit)[1]
    if evidence:
        out += [*evidence, ""]
    after = not_proved(ch.after, ch.kinds)
    if not after:
        where = ("at the entry points named below (--routine left others out)" if ch.skipped
                 else "at every entry point that reaches the new code (below)")
        what = "the string contract" if "string" in ch.kinds else "the user-copy contract"
        out += wrap(f"After it, every clause of {what} is proved for every n {where}.")
    else:
        out += wrap("UNPROVEN DRAFT: after it, " + ", ".join(sorted(after)) +
                     " are not proved (below).  Do not apply.")
    return out


def evidence_lines(ch: Change) -> list[str]:
    """The speed paragraphs and tables: measured first when a board gave
    figures, then the model's for every case."""
    out: list[str] = []
    if ch.board:
        out += ["", *board_speed(ch.board, ch.board_on), "", *table(list(ch.board))]
    if ch.rows:
        out += ["", *speed(ch.rows, ch.calibration), "", *table(ch.rows)]
    return out


def _source(text: str, path: str, kinds: tuple[str, ...]) -> list[str]:
    """The strategy's target and the blocks this patch uses, one block a
    paragraph, settings run together (the file itself says more)."""
    out = []
    # the parser names the string block `string_block`; a patch's kinds say `string`
    wanted = set(kinds) | ({"string_block"} if "string" in kinds else set())
    for it in parse_text(text, path):
        if it.kind != "target" and it.kind not in wanted:
            continue
        head = item_text(it).splitlines()[0].rstrip(" {")
        body = "; ".join(ln.strip() for ln in item_text(it).splitlines()[1:-1])
        out += textwrap.wrap(f"{head} {{ {body} }}", WIDTH - 4, initial_indent="    ",
                             subsequent_indent="        ")
    return out


def _shell(command: str) -> list[str]:
    """A command line, broken with backslashes to fit WIDTH."""
    words, groups = command.split(), []
    for w in words:          # an option stays on the line of its value
        if groups and groups[-1].startswith("--") and " " not in groups[-1] and not w.startswith("-"):
            groups[-1] += " " + w
        else:
            groups.append(w)
    pieces: list[str] = []
    for g in groups:
        if pieces and len(pieces[-1]) + 1 + len(g) <= WIDTH - 10:
            pieces[-1] += " " + g
        else:
            pieces.append(g)
    return [("    " if i == 0 else "        ") + p + (" \\" if i + 1 < len(pieces) else "")
            for i, p in enumerate(pieces)]


def reproduce(version: str, command: str, source: str, name: str,
              kinds: tuple[str, ...] = ("copy_user", "clear_user")) -> list[str]:
    return (["Generated by copygen " + version + " from " + name + " (below) with:",
             *_shell(command), "", *_source(source, name, kinds)])


def commit_message(ch: Change, version: str, command: str, source: str, name: str,
                   signoff: str) -> str:
    body = [subject(ch), "", *_changed(ch), "", *_why(ch), *evidence_lines(ch)]
    body += ["", *ch.rules] if ch.rules else []
    body += ["", *proofs(ch.before, ch.after, ch.kinds, ch.skipped)]
    if ch.kunit:
        body += ["", "KUnit (Kbuild, qemu-system-riscv64), tests passed before -> after:",
                 *kunit_parts(ch.kunit)[0]]
    body += ["", *reproduce(version, command, source, name, ch.kinds), "",
             f"Signed-off-by: {signoff}"]
    return "\n".join(line.rstrip() for line in body) + "\n"


def cover_letter(ch: Change) -> tuple[str, str]:
    """(subject, blurb) of a series' cover letter: the combined evidence."""
    subj = subject(ch)
    blurb = [*_changed(ch), "", *_why(ch), *evidence_lines(ch)]
    blurb += ["", *ch.rules] if ch.rules else []
    blurb += ["", *proofs(ch.before, ch.after, ch.kinds, ch.skipped)]
    return subj, "\n".join(line.rstrip() for line in blurb)
