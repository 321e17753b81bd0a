"""Semantic checks of one routine's phases: a copy_user, clear_user, memcpy
or memset block -> a validated strategy.Phases.

Every rejected setting raises CopygenError at its line with a reason and a
hint; a threshold too small for the first block (the 2021 bug of docs/contract.md, B1) is
raised, with a warning.  gen.front.validate checks whole files (targets, string
blocks, sweeps) with these.  This module checks the loops (alignment, word
and shift copies, faults) and hands the rest to gen.front.validate_kinds
(what each kind needs), gen.front.validate_sizes (unrolls, size classes,
thresholds) and gen.front.validate_options (the settings laid over the
loops).
May import copygen.errors, gen.front.parse, gen.phases.schedule, gen.front.strategy,
gen.front.validate_kinds, gen.front.validate_options, gen.front.validate_sizes.
"""
from __future__ import annotations

from copygen.errors import CopygenError, Warning_
from copygen.gen.front.parse import Item, Setting
from copygen.gen.phases.schedule import pipelined_limits
from copygen.gen.front.strategy import Phases, Target
from copygen.gen.front.validate_kinds import (FILLS, UACCESS_LOWERED, check_required, form_kind,
                                              shown)
from copygen.gen.front.validate_options import with_options
from copygen.gen.front.validate_sizes import (check_live_words, check_unroll, small_threshold,
                                              then_classes)


def settings_by_key(item: Item) -> dict[str, Setting]:
    seen: dict[str, Setting] = {}
    for s in item.settings:
        if not isinstance(s, Setting):
            continue
        if s.key in seen:
            first = seen[s.key].loc
            raise CopygenError(f"`{s.key}` given twice in this block", s.loc,
                               hint=f"the first one is at line {first.line}; keep one")
        seen[s.key] = s
    return seen


def routine_phases(item: Item, kind: str, target: Target, warnings: list) -> Phases:
    s = settings_by_key(item)
    kind = form_kind(s, kind)
    check_required(item, s, kind)
    return with_options(s, kind, _loops(s, kind, target, warnings), target.fast_misaligned,
                        warnings)


def _loops(s: dict[str, Setting], kind: str, target: Target, warnings: list) -> Phases:
    """The phases of the loops: alignment, word and shift copies, size
    classes, threshold and faults; none of the settings laid over them."""
    fast = target.fast_misaligned
    align = s["align"].values[0] if "align" in s else "dst"
    wv = s["words"].values
    word_unroll = wv[0]
    check_unroll(word_unroll, s["words"].loc, "words")
    word_schedule = wv[1] if len(wv) > 1 else "loads_first"
    shift_unroll, shift_schedule = _shift_setting(s, kind, fast, warnings)
    tail = s["tail"].values[0]
    _check_misaligned_policy(s, align, tail, fast)
    _check_fault_and_align(s, kind, align)
    limits = pipelined_limits(target.reserve)     # reserved registers are no one's
    if kind not in FILLS:
        check_live_words(s, word_unroll, word_schedule, shift_unroll, shift_schedule, limits)
    then = then_classes(s, kind, word_unroll, shift_unroll, limits)
    threshold = small_threshold(s, kind, align, word_unroll, shift_unroll, fast, tail, warnings,
                                tested=then["then_unroll"] > 0, head_word="ends" in s
                                and align == "dst" and s["ends"].values[0] == "overlap"
                                and tail != "ladder")
    return Phases(threshold=threshold, align=align, word_unroll=word_unroll,
                  word_schedule=word_schedule, shift_unroll=shift_unroll,
                  shift_schedule=shift_schedule, tail=tail, fault=_fault(s), **then)


def _check_fault_and_align(s: dict[str, Setting], kind: str, align: str) -> None:
    """The fault policy and the head each kind can have."""
    if kind in FILLS and _fault(s) == "restart":
        raise CopygenError(
            f"`fault restart` applies to copies: {shown(kind)} has no byte loop to resume, "
            "its fault exits return the exact count already",
            s["fault"].loc, hint="use `fault exact`")
    if kind == "clear_user" and align == "none" and _fault(s) == "exact":
        raise CopygenError(
            "`align none` in clear_user cannot return the exact count: a misaligned word "
            "store that crosses into an inaccessible page faults before it clears the "
            "bytes in front of the page, and a fill's fault exit returns at once",
            s["align"].loc, hint="use `align dst` (a word then never crosses a page)")
    if align == "src":
        raise CopygenError("`align src` is not implemented: every head aligns dst",
                           s["align"].loc, hint="use `align dst`, `align none`, or in a "
                                                "string function `align overlap`")
    if align == "overlap":
        _check_align_overlap(s["align"], kind)


def _shift_setting(s: dict, kind: str, fast: bool, warnings: list) -> tuple[int, str]:
    """(unroll, schedule) of the shift copy; (0, loads_first) when there is none."""
    if "shift" not in s or s["shift"].values[0] == "off":
        return 0, "loads_first"
    sv = s["shift"].values
    if kind in FILLS:
        raise CopygenError(f"{kind} has no source: shift copy does not apply",
                           s["shift"].loc, hint="remove the `shift` line")
    check_unroll(sv[0], s["shift"].loc, "shift")
    if fast:
        warnings.append(Warning_(
            "shift copy on a target with fast misaligned access is pointless; "
            "the word loop already takes misaligned sources", s["shift"].loc,
            hint="write `shift off`"))
    return sv[0], sv[1] if len(sv) > 1 else "loads_first"


def _check_misaligned_policy(s: dict, align: str, tail: str, fast: bool) -> None:
    """On a target that traps misaligned accesses, no choice may make one."""
    if fast:
        return
    if align == "src":
        raise CopygenError("`align src` leaves the destination misaligned, and this target "
                           "traps misaligned stores", s["align"].loc,
                           hint="use `align dst` (shift copy handles the source)")
    if align == "none":
        raise CopygenError("without an alignment head the word loop makes misaligned "
                           "accesses, which this target traps (misaligned slow)", s["align"].loc,
                           hint="use `align dst`")
    if align == "overlap":
        raise CopygenError("the overlapping head stores a misaligned word, which this "
                           "target traps (misaligned slow)", s["align"].loc,
                           hint="use `align dst`")
    if tail == "overlap":
        raise CopygenError("an overlapping word tail is a misaligned access; this target "
                           "traps them (misaligned slow)", s["tail"].loc,
                           hint="use `tail bytes` or `tail words`")


def _check_align_overlap(setting: Setting, kind: str) -> None:
    """The overlapping head is a C phase of memcpy and memset; the
    user-access routines' heads are the assembly's (bytes or pieces)."""
    if kind in UACCESS_LOWERED:
        raise CopygenError(f"`align overlap` applies to the string functions in C, not "
                           f"{shown(kind)}",
                           setting.loc, hint="use `align dst`, or `align none` with "
                                             "`tail overlap` on this core")


def _fault(s: dict) -> str:
    return s["fault"].values[0] if "fault" in s else "exact"
