"""Semantic checks of one routine's phases: a copy_user, clear_user, memcpy
or memset block -> a validated strategy.Phases.

Every rejected setting raises CopygenError at its line with a reason and a
hint; a threshold too small for the first block (the 2021 bug of docs/contract.md, B1) is
raised, with a warning.  gen.front.validate checks whole files (targets, string
blocks, sweeps) with these.
May import copygen.errors, gen.front.parse, gen.phases.schedule, gen.front.strategy.
"""
from __future__ import annotations

from dataclasses import replace

from copygen.errors import CopygenError, Loc, Warning_
from copygen.gen.front.parse import Item, Setting
from copygen.gen.phases.schedule import pipelined_limits
from copygen.gen.front.strategy import MAX_UNROLL, SZREG, Phases, Target

REQUIRED = {
    "copy_user": ("small", "words", "tail", "fault"),
    "clear_user": ("small", "words", "tail", "fault"),
    "memcpy": ("small", "words", "tail"),
    "memcpy_asm": ("small", "words", "tail"),
    "memset": ("small", "words", "tail"),
}
USER_ROUTINES = ("copy_user", "clear_user")
# routines lowered by gen.lower.lower_uaccess: size classes, ends and inline apply
# (`memcpy_asm` is a memcpy with `form asm`)
UACCESS_LOWERED = USER_ROUTINES + ("memcpy_asm",)
FILLS = ("clear_user", "memset")
SHOWN = {"memcpy_asm": "memcpy in assembly (`form asm`)"}


def shown(kind: str) -> str:
    """The routine kind as an error message names it."""
    return SHOWN.get(kind, kind)


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


def check_unroll(value: int, loc: Loc, what: str) -> None:
    if not 1 <= value <= MAX_UNROLL:
        raise CopygenError(f"{what} unroll {value} is outside 1..{MAX_UNROLL}", loc,
                           hint="unroll counts whole registers per block")


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


def routine_phases(item: Item, kind: str, target: Target, warnings: list) -> Phases:
    s = settings_by_key(item)
    kind = _form(s, kind)
    _check_required(item, s, kind)
    fast = target.fast_misaligned
    align = s["align"].values[0] if "align" in s else "dst"
    wv = s["words"].values
    word_unroll = wv[0]
    check_unroll(word_unroll, s["words"].loc, "words")
    word_schedule = wv[1] if len(wv) > 1 else "loads_first"
    shift_unroll, shift_schedule = _shift_setting(s, kind, fast, warnings)
    tail = s["tail"].values[0]
    _check_misaligned_policy(s, align, tail, fast)
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
    limits = pipelined_limits(target.reserve)     # reserved registers are no one's
    if kind not in FILLS:
        _check_live_words(s, word_unroll, word_schedule, shift_unroll, shift_schedule, limits)
    then = _then_classes(s, kind, word_unroll, shift_unroll, limits)
    threshold = _threshold(s, kind, align, word_unroll, shift_unroll, fast, tail, warnings,
                           tested=then["then_unroll"] > 0, head_word="ends" in s
                           and align == "dst" and s["ends"].values[0] == "overlap"
                           and tail != "ladder")
    ph = Phases(threshold=threshold, align=align, word_unroll=word_unroll,
                word_schedule=word_schedule, shift_unroll=shift_unroll,
                shift_schedule=shift_schedule, tail=tail, fault=_fault(s), **then)
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


def _form(s: dict, kind: str) -> str:
    """The kind to validate as: a memcpy with `form asm` is lowered as a
    copy_user is; `form` itself applies to memcpy only."""
    if "form" not in s:
        return kind
    if kind != "memcpy":
        hint = ("`tail jump` makes memset an assembly function" if kind == "memset"
                else "remove the line")
        raise CopygenError(f"`form` applies to memcpy, not {kind}", s["form"].loc, hint=hint)
    return "memcpy_asm" if s["form"].values[0] == "asm" else kind


def _check_required(item: Item, s: dict, kind: str) -> None:
    """Every phase the routine needs is there, and `fault` only where memory can fault."""
    for key in REQUIRED[kind]:
        if key not in s:
            what = f"{kind} `{item.name}`" if item.name else shown(kind)
            raise CopygenError(f"{what} has no `{key}` phase", item.loc,
                               hint=f"every {shown(kind)} needs: " + ", ".join(REQUIRED[kind]))
    if "vector" in s and kind not in ("copy_user", "clear_user"):
        raise CopygenError(f"`vector` applies to copy_user and clear_user, not {shown(kind)}",
                           s["vector"].loc,
                           hint="the kernel runs vector code for user accesses only; "
                                "remove the line")
    if "fault" in s and kind not in USER_ROUTINES:
        raise CopygenError(f"`fault` does not apply to {shown(kind)}: kernel memory never faults",
                           s["fault"].loc, hint="remove the `fault` line")


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


def _check_live_words(s: dict, word_unroll: int, word_schedule: str, shift_unroll: int,
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


def _check_align_overlap(setting: Setting, kind: str) -> None:
    """The overlapping head is a C phase of memcpy and memset; the
    user-access routines' heads are the assembly's (bytes or pieces)."""
    if kind in UACCESS_LOWERED:
        raise CopygenError(f"`align overlap` applies to the string functions in C, not "
                           f"{shown(kind)}",
                           setting.loc, hint="use `align dst`, or `align none` with "
                                             "`tail overlap` on this core")


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


def _then_classes(s: dict[str, Setting], kind: str, word_unroll: int, shift_unroll: int,
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


def _threshold(s, kind, align, word_unroll, shift_unroll, fast, tail, warnings,
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


def _fault(s: dict) -> str:
    return s["fault"].values[0] if "fault" in s else "exact"
