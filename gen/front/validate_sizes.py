"""Semantic checks of a routine's block sizes: unroll counts, the second
size class (`then words`, `then shift`), the registers a pipelined loop
keeps live, and the `small below` threshold under which the byte loop runs
(raised, with a warning, when the first block could overrun the buffers:
the 2021 bug of docs/contract.md, B1).

gen.front.validate_phases calls these for every phases block.
May import copygen.errors, gen.front.parse, gen.front.strategy, gen.front.validate_kinds.
"""
from __future__ import annotations

from copygen.errors import CopygenError, Loc, Warning_
from copygen.gen.front.parse import Setting
from copygen.gen.front.strategy import MAX_UNROLL, SZREG
from copygen.gen.front.validate_kinds import FILLS, UACCESS_LOWERED


def check_unroll(value: int, loc: Loc, what: str) -> None:
    if not 1 <= value <= MAX_UNROLL:
        raise CopygenError(f"{what} unroll {value} is outside 1..{MAX_UNROLL}", loc,
                           hint="unroll counts whole registers per block")


def check_live_words(s: dict, word_unroll: int, word_schedule: str, shift_unroll: int,
                      shift_schedule: str, limits: dict) -> None:
    """A pipelined loop keeps a block's words live: they must fit the free registers."""
    if word_schedule == "pipelined" and word_unroll > limits["words"]:
        raise CopygenError(f"words unroll {word_unroll} schedule pipelined keeps "
                           f"{word_unroll} words live, but only {limits['words']} "
                           "caller-saved registers are free", s["words"].loc,
                           hint=f"unroll at most {limits['words']}, or use loads_first")
    if shift_unroll and shift_schedule == "pipelined" and shift_unroll > limits["shift"]:
        raise CopygenError(f"shift unroll {shift_unroll} schedule pipelined needs "
                           f"{shift_unroll} words live besides prev and two temporaries;"
                           f" only {limits['shift']} fit", s["shift"].loc,
                           hint=f"unroll at most {limits['shift']}")


def _min_threshold(kind: str, align: str, block: int, fast: bool, tail: str) -> int:
    """Smallest size for which head + one whole block fit (no loop-entry check)."""
    head = SZREG - 1 if align in ("dst", "src") else 0
    if tail == "jump":
        # the run is entered without a test for "no words": a whole word
        # must remain after the head
        return 2 * SZREG - 1 if align == "dst" else SZREG
    if kind in ("memcpy", "memset"):
        # C loops test their bound first: the head alone must fit, and tiny
        # sizes always have the byte path.
        return max(SZREG, head + (SZREG if tail == "overlap" else 0))
    return head + block


def _then_class(s: dict[str, Setting], key: str, first: int, what: str,
                limit: int) -> tuple[int, str]:
    """(unroll, schedule) of one `then` class; (0, loads_first) when absent
    or `off`."""
    if key not in s or s[key].values[0] == "off":
        return 0, "loads_first"
    v, loc = s[key].values, s[key].loc
    check_unroll(v[0], loc, f"then {what}")
    if v[0] >= first:
        raise CopygenError(f"then {what} unroll {v[0]} is not smaller than the first "
                           f"{what} loop's unroll {first}", loc,
                           hint="the second class takes what the first leaves: "
                                "give it a smaller block")
    schedule = v[1] if len(v) > 1 else "loads_first"
    if schedule == "pipelined" and v[0] > limit:
        raise CopygenError(f"then {what} unroll {v[0]} schedule pipelined keeps too many "
                           f"words live; only {limit} fit", loc,
                           hint=f"unroll at most {limit}, or use loads_first")
    return v[0], schedule


def then_classes(s: dict[str, Setting], kind: str, word_unroll: int, shift_unroll: int,
                  limits: dict[str, int]) -> dict[str, int | str]:
    """The second size class of the word and shift loops (`then words`, `then shift`),
    as the keywords of Phases."""
    for key in ("then_words", "then_shift"):
        if key in s and kind not in UACCESS_LOWERED:
            raise CopygenError(f"`{key.replace('_', ' ')}` applies to copy_user, "
                               f"clear_user and memcpy with `form asm`, not {kind}", s[key].loc,
                               hint="string routines in C test their loops already")
    if "then_shift" in s and s["then_shift"].values[0] != "off":
        if kind in FILLS:
            raise CopygenError(f"{kind} has no source: shift copy does not apply",
                               s["then_shift"].loc, hint="remove the `then shift` line")
        if not shift_unroll:
            raise CopygenError("`then shift` without a shift copy", s["then_shift"].loc,
                               hint="add `shift unroll N`, or remove this line")
        if "then_words" not in s:
            raise CopygenError("`then shift` needs size classes: a `then words` line",
                               s["then_shift"].loc,
                               hint="add e.g. `then words unroll 1` (loops then test their entry)")
    words = _then_class(s, "then_words", word_unroll, "words",
                        limits["words"] if kind not in FILLS else MAX_UNROLL)
    shift = _then_class(s, "then_shift", shift_unroll, "shift", limits["shift"])
    return {"then_unroll": words[0], "then_schedule": words[1],
            "then_shift_unroll": shift[0], "then_shift_schedule": shift[1]}


def small_threshold(s, kind, align, word_unroll, shift_unroll, fast, tail, warnings,
               tested: bool = False, head_word: bool = False) -> int:
    block = max(word_unroll, shift_unroll) * SZREG
    need = _min_threshold(kind, align, block, fast, tail)
    if tested:
        # loops test their entry: only the bottom-tested head must fit (the
        # shift copy's first aligned load needs one byte after it), and an
        # overlapping tail word needs a whole word of buffer behind it
        need, block = (SZREG if align != "none" or tail == "overlap" else 1), 0
    if tested and head_word:
        # `ends overlap`: the head stores the first aligned word too
        need = 2 * SZREG - 1
    value = s["small"].values[0]
    if value == "auto":
        return need
    if value > 1 << 20:
        raise CopygenError(f"threshold {value} is larger than 1 MiB: every copy would take "
                           "the byte loop", s["small"].loc, hint="thresholds are bytes")
    if value < need:
        why = ("the run of stores is entered without a test for a whole word after "
               "the head" if tail == "jump" else
               f"the first {block}-byte block after a head of up to {SZREG - 1} bytes could "
               "run past both buffers (the 2021 uaccess.S bug: docs/contract.md, B1)" if block else
               "the overlapping head's pieces and the word after them could run past the end"
               if head_word and tested else
               f"the alignment head of up to {SZREG - 1} bytes could run past the end"
               if align != "none" else "the overlapping tail word would start before dst")
        warnings.append(Warning_(
            f"threshold raised from {value} to {need}: below it {why}", s["small"].loc,
            hint=f"write `small below {need}` (or `auto`) to silence this"))
        return need
    return value
