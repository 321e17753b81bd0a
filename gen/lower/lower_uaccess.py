"""Lowering of user-access routines: CopyUser/ClearUser -> ir.Function.

Layout of __asm_copy_to_user (and its alias __asm_copy_from_user):

  entry        SUM on, end = dst + n, small sizes -> byte copy
  head         bytes until dst is SZREG-aligned
  dispatch     co-aligned -> word copy; else shift copy (or bytes)
  word copy    unrolled, scheduled blocks of whole words
  shift copy   misaligned source from aligned loads, shifted together
  tail         remaining words / overlapping word, then bytes
  byte copy    shared by the small path and the tail
  done         SUM off, return 0
  fault exits  a0 += c; return end - a0, or (exact copies) resume the
               byte loop at the first byte not stored (gen.phases.fixups)

Registers: a0 dst cursor, a1 src cursor, a3 dst end, a2 loop limit (n is
dead once the threshold is checked), t6 carries SR_SUM at entry and exit.

`sum_held`: the body of an entry point whose caller holds SUM (mainline's
fallback_scalar_usercopy_sum_enabled): no csrs/csrc of SUM on entry, on the
return or on any fault exit, since the caller clears it after the call.
`prefix` names every local label (`.L<prefix>_bytes`, ...), so a body placed
in a kernel file can avoid the labels the file already has.

Layouts.  Without size classes the phases follow each other as listed
above, the layout of the kernel's own routines.  With size classes
(`then words`), `_class_layout` arranges them for static branch prediction
(forward branches not taken): the path of a short aligned copy falls
through from entry to return, and the head and the first loops sit out of
line after it.

Role: lay out the phases (gen.phases.uaccess_phases, gen.phases.shift_phases) of each
function.  May import gen.emission.ir, gen.phases.schedule, gen.phases.fixups, gen.front.strategy,
gen.phases.uaccess_phases, gen.phases.shift_phases, gen.phases.pieces, gen.phases.clear_ladder,
gen.lower.registers, copygen.errors.
"""
from __future__ import annotations

import re
from dataclasses import replace

from copygen.errors import CopygenError
from copygen.gen.phases.schedule import pipelined_limits, shift_pool, units, word_pool
from copygen.gen.phases.clear_ladder import clear_ladder_function
from copygen.gen.phases.fixups import FaultExits
from copygen.gen.emission.ir import Function, Insn, Label, Phase, without_jumps_to_next
from copygen.gen.phases.pieces import (head_overlap, head_pieces, head_word, shift_pieces, short_words,
                                tail_overlap, tail_pieces)
from copygen.gen.front.strategy import SZREG, ClearUser, CopyUser, Phases
from copygen.gen.phases.shift_phases import shift_blocks_phase, shift_phase
from copygen.gen.lower.registers import honour
from copygen.gen.phases.uaccess_phases import (END, LIMIT, byte_phase, done_phase, entry_phase,
                                        fault_phase, fill_phase, half_block_phase, head_phase,
                                        last_word_phase, tail_phase, word_phase)


REG_WORD = re.compile(r"\b(?:[at]\d|s\d{1,2}|ra|sp|gp|tp)\b")


def _dispatch(pfx: str, ph: Phases) -> Phase:
    miss = f".L{pfx}_shift" if ph.shift_unroll else f".L{pfx}_bytes"
    return Phase(None, "Dispatch on source alignment",
                 ("dst is aligned now; a misaligned source takes the "
                  + ("shift copy." if ph.shift_unroll else "byte loop."),),
                 (), (("t0", "src & (SZREG - 1)"),),
                 (Insn("andi", ("t0", "a1", "SZREG-1")), Insn("bnez", ("t0", miss))))


def copy_user_function(cu: CopyUser, sum_held: bool = False, prefix: str = "copy",
                       keep: tuple[str, ...] = ()) -> Function:
    """The copy; `keep`: registers the code around it keeps live across it
    (a kernel tree's wrapper), which no instruction of it may touch.  The
    target's register rules hold for it (gen.lower.registers): the block
    pools leave reserved registers out, as they leave kept ones."""
    t = cu.target
    ph = replace(cu.phases, keep=tuple(dict.fromkeys((*keep, *t.reserve))))
    _check_pools(cu, ph)
    fn = honour(_copy_user(ph, t.fast_misaligned, sum_held, prefix), t.reserve, t.jump,
                tuple(keep), t.loc)
    _check_keep(cu, fn, tuple(keep))
    return fn


def _check_pools(cu: CopyUser, ph: Phases) -> None:
    """A pipelined block holds its words in registers: it must still fit
    in the pool once the kept registers are taken out of it; and any block
    takes two registers of its pool at the least (the shift copy's paired
    blocks, and its steps, four)."""
    limits = pipelined_limits(ph.keep)
    shift = not cu.target.fast_misaligned
    for kind, unroll, schedule in (("words", ph.word_unroll, ph.word_schedule),
                                   ("words", ph.then_unroll, ph.then_schedule),
                                   ("shift", ph.shift_unroll * shift, ph.shift_schedule),
                                   ("shift", ph.then_shift_unroll * shift, ph.then_shift_schedule)):
        if schedule == "pipelined" and unroll > limits[kind]:
            raise CopygenError(
                f"{cu.name}: a pipelined {kind} block of {unroll} words needs {unroll} free "
                f"registers; with {', '.join(ph.keep)} kept live by the code around it "
                f"or reserved, {limits[kind]} are left", cu.loc,
                hint=f"use `{kind} unroll {limits[kind]}` or another schedule for this tree")
        left = len((word_pool if kind == "words" else shift_pool)(ph.keep))
        paired = kind == "shift" and (schedule == "paired" or ph.tail == "steps")
        need = 4 if paired else 2
        if unroll and left < need:
            raise CopygenError(
                f"{cu.name}: the {'word' if kind == 'words' else 'shift'} copy's blocks need "
                f"{need} free registers; with {', '.join(ph.keep)} kept live by the "
                f"code around it or reserved, {left} are left", cu.loc,
                hint="reserve fewer registers")


def _check_keep(cu: CopyUser, fn: Function, keep: tuple[str, ...]) -> None:
    """No instruction of the routine names a register the caller keeps."""
    for phase in fn.phases + fn.fault_exits:
        for insn in phase.body:
            if not isinstance(insn, Insn):
                continue
            used = {w for a in insn.operands for w in REG_WORD.findall(a)} & set(keep)
            if used:
                raise CopygenError(
                    f"{cu.name}: `{insn.text()}` in {phase.title.lower()} uses "
                    f"{', '.join(sorted(used))}, which the code around the routine keeps live",
                    cu.loc, hint="this strategy needs that register; choose one with fewer "
                    "words in flight")


def _copy_user(ph: Phases, fast: bool, sum_held: bool, prefix: str) -> Function:
    pfx = prefix
    exits = FaultExits(pfx, f".L{pfx}_bytes")
    if ph.tested:
        phases = _class_layout(pfx, ph, fast, exits, sum_held)
        return _copy_function(tuple(phases), exits, sum_held, ph.fault == "restart")
    phases = [entry_phase(pfx, ph, "a2", f".L{pfx}_bytes", sum_held)]
    if ph.align != "none":
        phases.append(head_phase(pfx, exits, True))
    if not fast:
        phases.append(_dispatch(pfx, ph))
    phases.append(word_phase(pfx, ph, exits, fast))
    tail = tail_phase(pfx, ph, exits, True)
    if tail:
        phases.append(tail)
    if ph.shift_unroll and not fast:
        phases[-1] = _with_jump(phases[-1], f".L{pfx}_bytes")
        phases.append(shift_phase(pfx, ph, exits))
    phases += [byte_phase(pfx, exits, True), done_phase(pfx, sum_held)]
    return _copy_function(tuple(phases), exits, sum_held, ph.fault == "restart")


def _copy_function(phases: tuple[Phase, ...], exits: FaultExits, sum_held: bool,
                   restart: bool) -> Function:
    summary = ("Copy n bytes between kernel and user memory.  Either side may be user",
               "memory: every load and store carries an exception-table entry.")
    if sum_held:
        summary += ("The caller has set sstatus.SUM and clears it after the call.",)
    return Function(
        "__asm_copy_to_user", ("__asm_copy_from_user",), summary,
        (("a0", "dst"), ("a1", "src"), ("a2", "n")),
        "a0: the number of bytes not copied (0 on success)",
        without_jumps_to_next(phases), (fault_phase(exits, sum_held, restart),),
        ("__asm_copy_to_user", "__asm_copy_from_user"))


def _with_body(phase: Phase, more) -> Phase:
    """The phase with `more` instructions at the end of its body."""
    return replace(phase, body=phase.body + tuple(more))


def _with_jump(phase: Phase, target: str, note: str = "tail bytes") -> Phase:
    body = phase.body
    if body and isinstance(body[-1], Insn) and body[-1].op == "j":
        return phase
    return _with_body(phase, [Insn("j", (target,), note=note)])


def _then_bytes(pfx: str, phase: Phase, target: str | None = None,
                note: str = "bytes left") -> Phase:
    """End a phase placed after the return: return when nothing is left (a
    backward branch, so predicted taken), else go on at `target`."""
    return _with_body(phase, [Insn("beq", ("a0", END, f".L{pfx}_done"), note="nothing left"),
                              Insn("j", (target or f".L{pfx}_bytes",), note=note)])


def _class_layout(pfx: str, ph: Phases, fast: bool, exits: FaultExits,
                  sum_held: bool, copy: bool = True) -> list[Phase]:
    """Size classes, laid out for static branch prediction (forward branches
    not taken): the path of a short aligned copy falls through from entry to
    return; the alignment head and the first word and shift loops sit out of
    line, so only calls that need them take a forward branch."""
    return (_straight_path(pfx, ph, fast, exits, sum_held, copy)
            + _out_of_line(pfx, ph, fast, exits, sum_held, copy))


def _words(pfx: str, ph: Phases, exits: FaultExits, fast: bool, copy: bool, **kw) -> Phase:
    """A word loop of the class layout: copy, or fill for clear_user."""
    if copy:
        return word_phase(pfx, ph, exits, fast, **kw)
    return fill_phase(pfx, ph, exits, **kw)


def _into_shift(ph: Phases, fast: bool, copy: bool) -> tuple[bool, bool]:
    """(shift copy present, the head in pieces branches straight into it)."""
    shift = bool(copy and ph.shift_unroll and not fast)
    return shift, shift and ph.ends == "pieces" and ph.align != "none"


def _entered_then(ph: Phases, copy: bool) -> bool:
    """A clear whose second class is entered in line without a test: the
    first loop lies out of line and the threshold leaves an aligned dst at
    least one of the second class's blocks.  The head and the first loop
    then test for that block themselves (_class_reentry)."""
    return (not copy and ph.tested and ph.align != "none"
            and ph.inline not in ("words", "both")
            and ph.threshold >= ph.then_unroll * SZREG)


def _short_words(ph: Phases, copy: bool) -> bool:
    """A clear whose calls of SZREG bytes up to the threshold store two
    overlapping words (pieces.short_words): both ends overlap, on a core
    that stores misaligned words (`tail overlap` needs one), and the two
    words cover every such call (a threshold of at most 2 * SZREG)."""
    return (not copy and ph.tested and ph.ends == "overlap" and ph.tail == "overlap"
            and SZREG < ph.threshold <= 2 * SZREG)


def _last_pieces(ph: Phases, copy: bool) -> bool:
    """A copy whose first word loop lies in line and whose last bytes are
    pieces: when the loop leaves less than a word, one forward branch takes
    it to the last test (`_last`: anything left?) past two skipped ones
    (the second class, the tail words), each a mispredicted branch."""
    return copy and ph.inline in ("words", "both") and ph.ends == "pieces" and ph.tail != "overlap"


def _last_word_out(ph: Phases, copy: bool) -> bool:
    """A copy whose first word loop lies in line and whose last bytes are one
    overlapping word: that word lies out of line, behind a test taken when
    bytes are left, so that a copy of whole words runs from entry to return
    without a taken branch (in line, the test in front of the word is taken
    when nothing is left: a mispredicted forward branch on an in-order core)."""
    return copy and ph.inline in ("words", "both") and ph.tail == "overlap"


def _half_block(ph: Phases, fast: bool, copy: bool) -> bool:
    """A user copy on a core with fast misaligned access whose first word
    loop lies in line, whose ends overlap and whose second class takes fewer
    than half its words a turn (examples/x60fast.copy: 8 words, then 1):
    half a block, tested, between the first loop and the second class
    (half_block_phase).  A mutually misaligned copy of whole blocks leaves
    the loop 6 words and some bytes; the second class's loop took them a
    word a turn, each turn waiting on its load, and its exit (a mispredicted
    branch on an in-order core) after six.  Under `fault restart` only,
    the policy of the copy it was measured and proved on, so
    that no other strategy's code changes (memcpy takes no `ends overlap`)."""
    return (copy and fast and ph.inline in ("words", "both") and ph.tail == "overlap"
            and ph.ends == "overlap" and ph.align != "none" and ph.fault == "restart"
            and ph.then_unroll < ph.word_unroll // 2)


def _straight_path(pfx: str, ph: Phases, fast: bool, exits: FaultExits,
                   sum_held: bool, copy: bool) -> list[Phase]:
    """From entry to the first return: the tests, the word loops in line and the tail."""
    big = ph.word_block
    pieces = ph.ends in ("pieces", "overlap")
    entered = _entered_then(ph, copy)
    small = f".L{pfx}_short" if _short_words(ph, copy) else f".L{pfx}_bytes"
    phases = [entry_phase(pfx, ph, "a2" if copy else "a1", small, sum_held, copy)]
    if ph.align != "none":
        back = () if entered else (Label(f".L{pfx}_head_done"),)
        phases.append(Phase(None, "Alignment check",
                            ("A misaligned dst takes the alignment head, out of line.",),
                            ("if (dst & (SZREG - 1)) goto head;",), (("t1", "dst & (SZREG - 1)"),),
                            (Insn("andi", ("t1", "a0", "SZREG-1")),
                             Insn("bnez", ("t1", f".L{pfx}_head")), *back)))
    inline_words = ph.inline in ("words", "both")
    if copy and not fast:
        back = _into_shift(ph, fast, copy)[1] and inline_words
        phases.append(_with_body(_dispatch(pfx, ph), [Label(f".L{pfx}_src_aligned")])
                      if back else _dispatch(pfx, ph))
    phases.append(_size_class(pfx, big, inline_words))
    if inline_words:
        after = ([Insn("addi", ("t0", "a0", "SZREG")),
                  Insn("bltu", (END, "t0", f".L{pfx}_last"),
                       note="less than a word left (forward)")]
                 if _last_pieces(ph, copy) else
                 [Insn("beq", ("a0", END, f".L{pfx}_done"),
                       note="nothing left (forward: predicted not taken)")])
        phases.append(_with_body(_words(pfx, ph, exits, fast, copy, tested=False, ready=big),
                                 after))
        if _half_block(ph, fast, copy):
            phases.append(half_block_phase(pfx, ph, exits))
    phases.append(fill_phase(pfx, ph, exits, then=True, tested=False, entered=True) if entered
                  else _words(pfx, ph, exits, fast, copy, then=True))
    tail = tail_phase(pfx, ph, exits, copy, _last_word_out(ph, copy))
    if tail:
        phases.append(tail)
    if ph.tail != "overlap":             # an overlapping word ends the copy itself
        left, why = (("tail_pieces", "are stored in pieces") if pieces
                     else ("bytes", "take the byte loop"))
        label = f".L{pfx}_last" if _last_pieces(ph, copy) else None
        phases.append(Phase(label, "Anything left", (f"Bytes left over {why}.",),
                            (f"if (dst != end) goto {left.replace('_', ' ')};",), (),
                            (Insn("bne", ("a0", END, f".L{pfx}_{left}")),)))
    phases.append(done_phase(pfx, sum_held))
    return phases


def _out_of_line(pfx: str, ph: Phases, fast: bool, exits: FaultExits,
                 sum_held: bool, copy: bool) -> list[Phase]:
    """After the first return: the shift copy, the pieces, the byte loop,
    the head and the first loops that do not lie in line."""
    pieces = ph.ends in ("pieces", "overlap")
    overlap = ph.ends == "overlap"
    shift, head_into_shift = _into_shift(ph, fast, copy)
    inline_shift = ph.inline in ("shift", "both")
    phases = [last_word_phase(pfx, ph, exits)] if _last_word_out(ph, copy) else []
    if shift:
        done = f".L{pfx}_pieces_done" if pieces else f".L{pfx}_bytes_done"
        body = shift_phase(pfx, ph, exits, out_of_line=True, restore=not pieces,
                           inline_done=done if inline_shift else None)
        phases.append(_with_body(body, shift_pieces(pfx, ph, exits)) if pieces
                      else _then_bytes(pfx, body))
    if overlap and not copy:
        phases += tail_overlap(pfx, exits)
    elif pieces and not overlap:
        phases += tail_pieces(pfx, ph, exits, copy, sum_held)
    if _short_words(ph, copy):
        phases += short_words(pfx)
    # the byte loop returns on its own: no jump back to the return above
    phases += [byte_phase(pfx, exits, copy, f".L{pfx}_bytes_done"),
               done_phase(pfx, sum_held, f".L{pfx}_bytes_done")]
    words_below = ph.inline not in ("words", "both")
    if ph.align != "none" and overlap:
        phases.append(head_word(pfx, exits) if copy else head_overlap(pfx, exits))
    elif ph.align != "none":
        phases.append(head_pieces(pfx, ph, exits, copy, into_shift=head_into_shift,
                                  words_below=ph.word_block if words_below else 0) if pieces
                      else head_phase(pfx, exits, copy, out_of_line=True))
    if _entered_then(ph, copy):
        phases += _class_reentry(pfx, ph, exits)
    elif words_below:
        phases.append(_then_bytes(pfx, _words(pfx, ph, exits, fast, copy, tested=False,
                                              ready=ph.word_block),
                                  f".L{pfx}_words_then", "what is left: the second class"))
    if shift and not inline_shift:
        phases.append(shift_blocks_phase(pfx, ph, exits))
    return phases


def _class_reentry(pfx: str, ph: Phases, exits: FaultExits) -> list[Phase]:
    """Out of line, after the head (_entered_then): the size class test the
    head returns to, the first loop, and the test for a block of the
    second class, branching into its loop in line or past it."""
    big, then = ph.word_block, ph.then_unroll * SZREG
    first = fill_phase(pfx, ph, exits, tested=False, ready=big)
    return [
        Phase(f".L{pfx}_head_done", "Size class, after the head",
              (f"dst is aligned now.  Calls with a whole {big}-byte block left go on",
               "into the first word loop; shorter ones test for the second class."),
              (f"if (end - dst < {big}) goto then_test;",), (("a2", f"end - {big}"),),
              (Insn("addi", (LIMIT, END, units(-big))),
               Insn("bgtu", ("a0", LIMIT, f".L{pfx}_then_test"),
                    note="less than a whole block"))),
        _with_body(first, [Insn("beq", ("a0", END, f".L{pfx}_done"), note="nothing left")]),
        Phase(f".L{pfx}_then_test", "Second class, tested",
              (f"What is left here may be less than one {then}-byte block: the",
               "second class's loop in line is entered only with one, else the tail."),
              (f"if (end - dst >= {then}) goto words_then_loop;", "goto words_then_skip;"),
              (("a2", f"loop limit: end - {then}"),),
              (Insn("addi", (LIMIT, END, units(-then))),
               Insn("bleu", ("a0", LIMIT, f".L{pfx}_words_then_loop")),
               Insn("j", (f".L{pfx}_words_then_skip",), note="less than one block left"))),
    ]


def _size_class(pfx: str, big: int, inline: bool) -> Phase:
    """The test in front of the word loops: out of line, a call with a whole
    block left branches to the first loop; in line, a shorter one branches
    to the second class."""
    if inline:
        return Phase(None, "Size class",
                     (f"Calls with a whole {big}-byte block left go on into the first word",
                      "loop; shorter ones branch to the second class."),
                     (f"if (end - dst < {big}) goto words_then;",), (("a2", f"end - {big}"),),
                     (Insn("addi", (LIMIT, END, units(-big))),
                      Insn("bgtu", ("a0", LIMIT, f".L{pfx}_words_then"),
                           note="less than a whole block: the second class")))
    return Phase(None, "Size class",
                 (f"Calls with a whole {big}-byte block left take the first word loop,",
                  "out of line; shorter ones go straight to the second class."),
                 (f"if (end - dst >= {big}) goto words;",), (("a2", f"end - {big}"),),
                 (Insn("addi", (LIMIT, END, units(-big))),
                  Insn("bleu", ("a0", LIMIT, f".L{pfx}_words"))))


def clear_user_function(cl: ClearUser, prefix: str = "clear") -> Function:
    """__clear_user, under the target's register rules (gen.lower.registers)."""
    return honour(_clear_user(cl, prefix), cl.target.reserve, cl.target.jump, (), cl.target.loc)


def _clear_user(cl: ClearUser, prefix: str) -> Function:
    ph = cl.phases
    pfx = prefix
    if ph.tail == "ladder":
        return clear_ladder_function(cl, prefix)
    exits = FaultExits(pfx, done="zeroed")
    if ph.tested:
        return _clear_function(tuple(_class_layout(pfx, ph, False, exits, False, copy=False)),
                               exits)
    phases = [entry_phase(pfx, ph, "a1", f".L{pfx}_bytes", False, copy=False)]
    if ph.align != "none":
        phases.append(head_phase(pfx, exits, False))
    phases.append(fill_phase(pfx, ph, exits))
    tail = tail_phase(pfx, ph, exits, False)
    if tail:
        phases.append(tail)
    phases += [byte_phase(pfx, exits, False), done_phase(pfx, False)]
    return _clear_function(tuple(phases), exits)


def _clear_function(phases: tuple[Phase, ...], exits: FaultExits) -> Function:
    phases = without_jumps_to_next(phases)
    return Function(
        "__clear_user", (),
        ("Zero n bytes of user memory; any store may fault.",),
        (("a0", "dst (user)"), ("a1", "n")),
        "a0: the number of bytes not zeroed (0 on success)",
        phases, (fault_phase(exits, False),), ("__clear_user",))
