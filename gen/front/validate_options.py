"""Semantic checks of the settings laid over a routine's loops: `ends`,
`inline`, `expect`, `bytes below`, and the tails that shape the code
around them (`tail steps`, `tail ladder`, `tail jump`).

Each needs the loops gen.front.validate_phases has checked already (a
strategy.Phases without these settings) and returns them with the
setting applied, or raises CopygenError at its line with a hint.
May import copygen.errors, gen.front.parse, gen.front.strategy, gen.front.validate_kinds.
"""
from __future__ import annotations

from dataclasses import replace

from copygen.errors import CopygenError, Warning_
from copygen.gen.front.parse import Setting
from copygen.gen.front.strategy import Phases
from copygen.gen.front.validate_kinds import UACCESS_LOWERED, shown


def with_options(s: dict[str, Setting], kind: str, ph: Phases, fast: bool,
                 warnings: list) -> Phases:
    """The loops' phases `ph` with the settings laid over them, each checked."""
    tail = ph.tail
    if tail == "jump":
        _check_jump(s, kind, ph)
    if tail == "steps" and not ph.tested:
        raise CopygenError("`tail steps` needs size classes: a `then words` line",
                           s["tail"].loc, hint="add e.g. `then words unroll 4`, or use "
                                               "`tail words`")
    if "ends" in s:
        _check_ends(s["ends"], kind, ph, fast)
        ph = replace(ph, ends=s["ends"].values[0])
    if "inline" in s:
        _check_inline(s["inline"], kind, ph, fast)
        ph = replace(ph, inline=s["inline"].values[0])
    if "expect" in s:
        _check_expect(s["expect"], kind)
        ph = replace(ph, expect=s["expect"].values[0])
        if ph.expect == "aligned" and ph.align != "dst" and (kind == "memset" or fast):
            warnings.append(Warning_(
                f"`expect aligned` has nothing to hint in this {kind}: without a byte head "
                "it tests no alignment" + ("" if kind == "memset" else
                                           " (a core with fast misaligned access has no "
                                           "shift copy)"), s["expect"].loc,
                hint="remove the line, or use `align dst`"))
    if tail == "ladder":
        _check_ladder(s["tail"], kind, ph)
    if kind == "memcpy_asm":
        ph = replace(ph, form="asm")
    if "bytes" in s:
        ph = _bytes_below(s["bytes"], kind, ph)
    return ph


def _check_ladder(setting: Setting, kind: str, ph: Phases) -> None:
    """`tail ladder` (gen.phases.clear_ladder): a clear whose words after the
    loops, and whose short calls, are stored from both ends of the aligned
    span.  Its first loop lies out of line, its pieces overlap, and its
    end-relative stores return the exact count."""
    if kind != "clear_user":
        raise CopygenError(f"`tail ladder` applies to clear_user, not {shown(kind)}",
                           setting.loc, hint="use `tail words` or `tail steps`")
    if ph.then_unroll < 2:
        raise CopygenError("`tail ladder` needs a second class of at least 2 words "
                           "(`then words unroll 2` or more): its loop stops with up to a "
                           "block left and stores that block from the end", setting.loc,
                           hint="add e.g. `then words unroll 4`")
    if ph.ends != "overlap":
        raise CopygenError("`tail ladder` stores the sub-word ends as overlapping pieces: "
                           "it needs `ends overlap`", setting.loc, hint="add `ends overlap`")
    if ph.inline != "none":
        raise CopygenError(f"`tail ladder` puts both loops out of line; `inline {ph.inline}` "
                           "does not apply", setting.loc, hint="use `inline none`")
    if ph.fault != "exact":
        raise CopygenError(f"`tail ladder` returns the exact count; `fault {ph.fault}` "
                           "does not apply", setting.loc, hint="use `fault exact`")


BYTES_UNROLLS = (2, 4, 8)


def _bytes_below(setting, kind: str, ph: Phases) -> Phases:
    """`bytes below T unroll K`: the misaligned-dst short path of an
    assembly memcpy, entered from its out-of-line alignment head."""
    below, unroll = setting.values
    if kind != "memcpy_asm":
        raise CopygenError(f"`bytes below` applies to an assembly memcpy (`form asm`), not "
                           f"{shown(kind)}", setting.loc,
                           hint="remove the line" if kind != "memcpy"
                           else "add `form asm` to the memcpy block")
    if not ph.tested or ph.align != "dst":
        raise CopygenError("`bytes below` needs size classes and `align dst`: it branches "
                           "from the out-of-line alignment head", setting.loc,
                           hint="add `then words unroll 4` and `align dst`, or remove the line")
    if unroll not in BYTES_UNROLLS:
        raise CopygenError(f"`bytes below ... unroll {unroll}`: the unroll is one of "
                           f"{', '.join(map(str, BYTES_UNROLLS))}", setting.loc,
                           hint="a block of at most 8 bytes keeps its loads in temporaries")
    if not ph.threshold < below <= 64:
        raise CopygenError(f"`bytes below {below}` must lie above `small below "
                           f"{ph.threshold}` and be at most 64", setting.loc,
                           hint="a call below the small threshold takes the byte loop already; "
                                "past 64 bytes the word and shift copies are faster")
    # the block loop copies a block before it tests: the head's threshold
    # (at least SZREG, raised there) covers the largest block
    assert ph.threshold >= max(BYTES_UNROLLS)
    return replace(ph, bytes_below=below, bytes_unroll=unroll)


JUMP_RUNS = (2, 4, 8, 16, 32)


def _check_jump(s: dict, kind: str, ph: Phases) -> None:
    """`tail jump` is an assembly memset: one run of stores entered by a
    computed jump, a head and a tail of aligned pieces, a byte loop for
    small sizes; nothing else is lowered."""
    if kind != "memset":
        raise CopygenError(f"`tail jump` is generated for memset only, not {kind}",
                           s["tail"].loc, hint="use `tail words` or `tail steps`")
    if ph.word_unroll not in JUMP_RUNS:
        raise CopygenError(f"`tail jump` needs a run of {', '.join(map(str, JUMP_RUNS))} "
                           f"stores, not {ph.word_unroll}", s["words"].loc,
                           hint="the jump's offset into the run is the skipped bytes "
                                "masked by the run's length, a power of two")
    if ph.align == "overlap":
        raise CopygenError("`tail jump` has a byte head or none, not `align overlap`",
                           s["align"].loc, hint="use `align dst`")
    for key in ("then words", "ends", "inline", "expect"):
        if key.replace(" ", "_") in s:
            setting = s[key.replace(" ", "_")]
            raise CopygenError(f"`{key}` does not apply to an assembly memset (`tail jump`)",
                               setting.loc, hint="remove the line: the memset has one run "
                                                 "of stores and lays itself out")


def _check_expect(setting: Setting, kind: str) -> None:
    """Branch hints are for GCC's layout of the string functions; a
    user-access routine's layout is the assembly's own (`inline`)."""
    if kind in UACCESS_LOWERED:
        raise CopygenError(f"`expect` applies to the string functions in C, not {shown(kind)}",
                           setting.loc, hint="an assembly routine's layout is "
                                             "chosen by `inline`; remove the line")


def _check_inline(setting: Setting, kind: str, ph: Phases, fast: bool) -> None:
    """`inline` places first-class loops of the class layout: it needs that
    layout, and the loops it names."""
    value = setting.values[0]
    if kind not in UACCESS_LOWERED:
        raise CopygenError(f"`inline` applies to copy_user, clear_user and memcpy with "
                           f"`form asm`, not {kind}", setting.loc,
                           hint="remove the `inline` line")
    if value == "none":
        return
    if not ph.tested:
        raise CopygenError(f"`inline {value}` needs size classes: a `then words` line",
                           setting.loc, hint="without size classes every loop is in line "
                                             "already; add e.g. `then words unroll 4`")
    if value in ("shift", "both") and (fast or not ph.shift_unroll):
        why = ("its target has fast misaligned access, so no shift copy is emitted" if fast
               else "it has no shift copy")
        raise CopygenError(f"`inline {value}` puts the first shift loop of this {kind} in "
                           f"line, but {why}", setting.loc, hint="use `inline words`")


def _check_ends(setting: Setting, kind: str, ph: Phases, fast: bool) -> None:
    """`ends pieces` stores a sub-word head and tail from aligned words: it
    needs the class layout, aligned word loads, and loops that leave less
    than a word.  `ends overlap` stores zero over bytes it or an earlier
    store zeroed already; a copy may store again only bytes of the same
    source, so there it is misaligned words at both ends (a fast target's
    two head words and `tail overlap`).  Both need the class layout and
    loops that leave less than a word too."""
    if kind not in UACCESS_LOWERED:
        raise CopygenError(f"`ends` applies to copy_user, clear_user and memcpy with "
                           f"`form asm`, not {kind}", setting.loc,
                           hint="remove the `ends` line")
    how = setting.values[0]
    if how == "bytes":
        return
    if how == "overlap" and kind != "clear_user" and not (kind == "copy_user" and fast
                                                          and ph.tail == "overlap"):
        raise CopygenError("`ends overlap` in a copy stores misaligned words at both ends: "
                           "it needs a target with fast misaligned access and `tail overlap`"
                           if kind == "copy_user" else
                           f"`ends overlap` applies to clear_user and copy_user, not {kind}",
                           setting.loc, hint="use `ends pieces`, or `ends bytes`")
    if not ph.tested:
        raise CopygenError(f"`ends {how}` needs size classes: a `then words` line",
                           setting.loc, hint="add e.g. `then words unroll 1`")
    if how == "overlap" and ph.align != "dst":
        raise CopygenError("`ends overlap` needs `align dst`: its last pieces end at end "
                           "rounded down to 4 and 2, which cover the bytes left only when "
                           "the loops end on an aligned dst", setting.loc,
                           hint="use `align dst`, or `ends bytes`")
    if fast and how == "pieces":
        raise CopygenError("`ends pieces` loads the aligned words around the ends; on a "
                           "target with fast misaligned access the word loop's source is not "
                           "aligned", setting.loc, hint="use `tail overlap` on this target")
    # a copy's `tail overlap` takes the words left one at a time, then its word
    words_left = (ph.word_tail or ph.then_unroll == 1 or ph.tail == "ladder"
                  or (kind == "copy_user" and ph.tail == "overlap"))
    shift_left = not ph.shift_unroll or ph.word_tail or ph.last_shift_unroll == 1
    if not (words_left and shift_left):
        raise CopygenError(f"`ends {how}` stores less than a word at the end, but the last "
                           "loop leaves up to a whole block", setting.loc,
                           hint="add `tail words` or `tail steps`, or make the last loops "
                                "one word each")
