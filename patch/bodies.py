"""The generated code for each place of a kernel file, in the form it needs.

A copy placed in mainline's fallback_scalar_usercopy_sum_enabled runs with
SUM held by its callers: it is lowered with `sum_held` (no csrs/csrc of SUM
anywhere, fault exits included).  A copy placed in a 2021 layout's
__asm_copy_to_user, and every __clear_user, keep their own SUM handling.
A copy that the file calls (mainline's wrapper) leaves alone every register
the caller keeps live across the call (kernelfile.kept_live).
Local labels take the first prefix whose labels the file does not already
define outside the replaced bodies.

Role: strategy + place -> body text.  May import gen (lowering, emission,
strategy), gen.emission.asmtext, patch.kernelfile, copygen.errors and the
standard library.
"""
from __future__ import annotations

import dataclasses
import textwrap

from copygen.gen.emission.emit import describe, render_body
from copygen.errors import CopygenError
from copygen.gen.lower.lower_uaccess import clear_user_function, copy_user_function
from copygen.gen.front.strategy import Strategy
from copygen.gen.emission import asmtext
from copygen.patch.kernelfile import Place

PREFIXES = {"copy_user": ("copy", "copy_user", "ucopy", "copygen_copy"),
            "clear_user": ("clear", "clear_user", "uclear", "copygen_clear")}


def strategy_lines(st: Strategy, kind: str) -> list[str]:
    """The strategy block, as the body's comment names it (72 columns)."""
    r = st.copy_user if kind == "copy_user" else st.clear_user
    t = r.target
    head = f"{kind} {r.name} for {t.name} (xlen {t.xlen}, misaligned {t.misaligned})"
    rest = textwrap.wrap(f"{describe(r.phases, fill=kind == 'clear_user')}; "
                         f"fault {r.phases.fault}", 56)
    return [head, *rest]


def _function(st: Strategy, place: Place, prefix: str):
    if place.kind == "copy_user":
        fn = copy_user_function(st.copy_user, sum_held=place.sum_held, prefix=prefix,
                                keep=place.keep)
    else:
        fn = clear_user_function(st.clear_user, prefix=prefix)
    return dataclasses.replace(fn, symbol=place.function.name)


def body(st: Strategy, place: Place, taken: set[str]) -> str:
    """The body text for `place`, its labels clear of `taken`."""
    for prefix in PREFIXES[place.kind]:
        text = render_body(_function(st, place, prefix), strategy_lines(st, place.kind))
        mine = asmtext.named_labels(asmtext.code_lines(text.splitlines()))
        if not mine & taken:
            return text
    raise CopygenError(f"every label prefix copygen tries for {place.kind} is taken in the file",
                       hint=f"labels .L{PREFIXES[place.kind][-1]}_* are already defined")


def bodies(st: Strategy, lines: list[str], places: list[Place]) -> list[tuple[Place, str]]:
    """(place, body text) for every place; labels avoid those the file keeps."""
    code = asmtext.code_lines(lines)
    replaced = {i for p in places for i in range(p.function.body_start, p.function.body_end)}
    taken = asmtext.named_labels(code, lambda i: i not in replaced)
    out = []
    for p in places:
        text = body(st, p, taken)
        taken |= asmtext.named_labels(asmtext.code_lines(text.splitlines()))
        out.append((p, text))
    return out
