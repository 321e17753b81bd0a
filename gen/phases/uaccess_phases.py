"""The phases of a user-access routine, each built from scheduled Steps.

Each function returns one ir.Phase (or, for `block_loop`, the Insns of one
loop): the entry with its threshold, the alignment head, the word loops, the
shift copy, the tail, the byte loop, the return and the fault exits.  They
keep the register contract of gen.lower.lower_uaccess (a0 dst cursor, a1 src
cursor, a3 dst end, a2 loop limit, t6 SR_SUM at entry and exit) and attach
a fault exit to every user access (gen.phases.fixups).  How the phases are laid
out in a function is gen.lower.lower_uaccess's business.

Role: phase builders.  May import gen.emission.ir, gen.phases.schedule, gen.phases.fixups,
gen.front.strategy.
"""
from __future__ import annotations

from copygen.gen.phases import schedule as S
from copygen.gen.phases.schedule import units
from copygen.gen.phases.fixups import FaultExits, attach, exit_code, lead
from copygen.gen.emission.ir import Insn, Label, Phase
from copygen.gen.front.strategy import SZREG, Phases

END, LIMIT = "a3", "a2"
ALIGN_MASK = "-SZREG"


def sum_on() -> list[Insn]:
    return [Insn("li", ("t6", "SR_SUM")), Insn("csrs", ("CSR_STATUS", "t6"),
            note="let S-mode touch user pages")]


def sum_off() -> list[Insn]:
    return [Insn("li", ("t6", "SR_SUM")), Insn("csrc", ("CSR_STATUS", "t6"),
            note="and never again after we return")]


def block_loop(pfx: str, name: str, block: S.Block, exits: FaultExits, policy: str,
          user: bool = True, retry: bool = False, shift: bool = False,
          tested: bool = False, once: bool = False, ready: int = 0,
          entered: bool = False) -> list:
    """A bottom-tested loop over whole blocks with an exact bound.

    It runs while a0 + (1 + lookahead) * size <= end, i.e. a0 <= LIMIT.
    Untested, it is entered only when the threshold guarantees one whole
    block; `tested` (size classes) skips it when less than a block remains.
    `once` (a tail step, tested, no lookahead): the block at most once.
    `ready`: the caller's own test left LIMIT = end - ready.
    `entered` (untested): the loop's first block is also labelled `_loop`
    and its end `_skip`, for code elsewhere that tests for a block itself.
    """
    assert not once or (tested and not block.lookahead)
    size = sum(s.offset for s in block.body if s.kind == "adv_dst")
    span = size * (1 + block.lookahead)
    skip = f".L{pfx}_{name}_skip"
    out: list = []
    if tested:
        out += [Insn("addi", (LIMIT, END, units(-size)),
                     note=f"last a0 from which {size} bytes remain"),
                Insn("bgtu", ("a0", LIMIT, skip), note="less than one block left")]
    if (not tested or block.lookahead) and ready != span:
        out.append(Insn("addi", (LIMIT, END, units(-span)),
                        note=f"last a0 from which {span} bytes remain"))
    out += attach(block.prologue, exits, policy, user, retry, 0, shift)
    ahead = lead(block.prologue)
    if block.lookahead:
        out.append(Insn("bgtu", ("a0", LIMIT, f".L{pfx}_{name}_last")))
    if entered:
        out.append(Label(f".L{pfx}_{name}_loop"))
    if not once:
        out.append(Label("1"))
    out += attach(block.body, exits, policy, user, retry, ahead, shift)
    if not once:
        out.append(Insn("bleu", ("a0", LIMIT, "1b")))
    if block.lookahead:
        out.append(Label(f".L{pfx}_{name}_last", "the block already in registers"))
        out += attach(block.epilogue, exits, policy, user, retry, ahead, shift)
    if tested or entered:
        out.append(Label(skip))
    return out


def _byte_loop(pfx: str, exits: FaultExits, op_load: bool, done: str) -> list:
    fix = exits.label(0)
    out: list = [Insn("bgeu", ("a0", END, done)), Label("1")]
    if op_load:
        out += [Insn("lbu", ("t0", "0(a1)"), fix), Insn("sb", ("t0", "0(a0)"), fix),
                Insn("addi", ("a1", "a1", "1"))]
    else:
        out.append(Insn("sb", ("zero", "0(a0)"), fix))
    out += [Insn("addi", ("a0", "a0", "1")), Insn("bltu", ("a0", END, "1b"))]
    return out


def words(n: int, word: str = "word") -> str:
    """`n` words as a comment says it: 1 word, 8 words."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def head_phase(pfx: str, exits: FaultExits, copy: bool, out_of_line: bool = False) -> Phase:
    """Bytes until dst is aligned.  Out of line (size classes), the caller
    has tested dst and branches here only when it is misaligned."""
    fix = exits.label(0)
    body: list = [Insn("addi", ("t1", "a0", "SZREG-1")),
                  Insn("andi", ("t1", "t1", ALIGN_MASK), note="t1 = dst rounded up to SZREG")]
    if not out_of_line:
        body.append(Insn("beq", ("a0", "t1", f".L{pfx}_head_done")))
    body.append(Label("1"))
    if copy:
        body += [Insn("lbu", ("t0", "0(a1)"), fix), Insn("sb", ("t0", "0(a0)"), fix),
                 Insn("addi", ("a1", "a1", "1"))]
    else:
        body.append(Insn("sb", ("zero", "0(a0)"), fix))
    body += [Insn("addi", ("a0", "a0", "1")), Insn("bltu", ("a0", "t1", "1b"))]
    body.append(Insn("j", (f".L{pfx}_head_done",)) if out_of_line
                else Label(f".L{pfx}_head_done"))
    regs = (("t1", "dst rounded up to SZREG"),) + ((("t0", "byte in flight"),) if copy else ())
    return Phase(f".L{pfx}_head", "Alignment head",
                 (f"{'Copy' if copy else 'Zero'} single bytes until dst is SZREG-aligned, so that every word",
                  "store below is aligned.  The threshold guarantees n > SZREG - 1."),
                 ("while (dst & (SZREG - 1))", "\t*dst++ = " + ("*src++;" if copy else "0;")),
                 regs, tuple(body))


def block_regs(block: S.Block, kinds=("load",)) -> list[str]:
    """Registers a block loads into (or, for fills, stores from)."""
    seen: list[str] = []
    for st in block.prologue + block.body:
        if st.kind in kinds and st.operands[0] not in seen + ["zero"]:
            seen.append(st.operands[0])
    return seen


def block_temps(block: S.Block) -> list[str]:
    """Registers written by ALU steps that are not loaded words (shift temps)."""
    loaded = set(block_regs(block))
    seen: list[str] = []
    for st in block.body:
        if st.kind == "alu" and st.op != "mv" and st.operands[0] not in loaded | set(seen):
            seen.append(st.operands[0])
    return seen


def retries(ph: Phases) -> bool:
    """Copies under the exact and restart policies resume the byte loop
    after a word fault."""
    return ph.fault in ("exact", "restart")


def words_pseudo(unroll: int, size: int, lookahead: int) -> tuple[str, ...]:
    """The C sketch of a word loop, with the bound block_loop gives it."""
    if not lookahead:
        return (f"while (end - dst >= {size}) {{",
                f"\tcopy {words(unroll)}; dst += {size}; src += {size};", "}")
    span = size * (1 + lookahead)
    them = "the word" if unroll == 1 else f"the {unroll} words"
    return (f"load {words(unroll)}; src += {size};",
            f"while (end - dst >= {span}) {{",
            f"\tstore {them} loaded, load the next {'one' if unroll == 1 else unroll};",
            f"\tdst += {size}; src += {size};", "}",
            f"store {them} loaded; dst += {size};")


def word_phase(pfx: str, ph: Phases, exits: FaultExits, fast: bool,
                then: bool = False, tested: bool | None = None, ready: int = 0) -> Phase:
    unroll, schedule = ((ph.then_unroll, ph.then_schedule) if then
                        else (ph.word_unroll, ph.word_schedule))
    block = S.word_copy(unroll, schedule, S.word_pool(ph.keep))
    size = unroll * S.SZREG
    regs = [("a2", f"loop limit: end - {size * (1 + block.lookahead)}")]
    regs += [(r, "word in flight") for r in block_regs(block)]
    why = [f"Copy {words(unroll)} per iteration, schedule {schedule}."]
    if schedule == "paired":
        why += ["dst moves on after the first load, src after the last, so that both",
                "increments issue beside loads; the stores address back from the new dst."]
    if then:
        why.append("The second size class: what the first loop left, or all of a short call.")
    why += (["The source may be misaligned: this core handles that in hardware."] if fast
            else ["Both pointers are SZREG-aligned here."])
    name = "words_then" if then else "words"
    return Phase(f".L{pfx}_{name}", "Word copy" + (", second class" if then else ""),
                 tuple(why),
                 words_pseudo(unroll, size, block.lookahead),
                 tuple(regs), tuple(block_loop(pfx, name, block, exits, ph.fault, True, retries(ph),
                                          tested=ph.tested if tested is None else tested,
                                          ready=ready)))


def fill_phase(pfx: str, ph: Phases, exits: FaultExits, then: bool = False,
               tested: bool | None = None, ready: int = 0, entered: bool = False) -> Phase:
    """clear_user's word loop (or its second class): zero words, no source.
    `entered`: reached in line only with a whole block left (see block_loop)."""
    unroll = ph.then_unroll if then else ph.word_unroll
    name = "words_then" if then else "words"
    size = unroll * S.SZREG
    loop = block_loop(pfx, name, S.fill_words(unroll), exits, ph.fault,
                      tested=ph.tested if tested is None else tested, ready=ready,
                      entered=entered)
    why = (f"Store {words(unroll, 'zero word')} per iteration.",)
    pseudo = f"while (end - dst >= {size}) store {unroll} zero words;"
    if entered:
        why += (f"In line, dst is aligned and n >= {ph.threshold}: at least one block is",
                "left, so the loop needs no test in front; the head and the first",
                "loop test for a block themselves and branch into it.")
        pseudo = f"do store {unroll} zero words; while (end - dst >= {size});"
    # entered: nothing branches to the phase's start, only to its loop
    label = None if entered else f".L{pfx}_{name}"
    return Phase(label, "Word fill" + (", second class" if then else ""),
                 why, (pseudo,), (("a2", f"loop limit: end - {size}"),), tuple(loop))


def shift_tail(ph: Phases) -> bool:
    """`tail words` or `tail steps` under size classes: whole words the shift
    loops left go as after the word loops, not through the byte loop."""
    return ph.tested and ph.word_tail and ph.last_shift_unroll > 1


def _steps_guard(pfx: str, name: str) -> list:
    """One test in front of the steps: with no whole word left, a single
    taken branch skips them all instead of one per step."""
    return [Insn("addi", (LIMIT, END, "-SZREG")),
            Insn("bgtu", ("a0", LIMIT, f".L{pfx}_{name}_done"), note="no whole word left")]


def steps(unroll: int) -> list[int]:
    """`tail steps` below a last loop of `unroll` words: the powers of two
    below it, largest first; their sum covers any count of words left."""
    out, k = [], 1
    while k < unroll:
        out.insert(0, k)
        k *= 2
    return out


def _tail_words(pfx: str, exits: FaultExits, copy: bool, retry: bool) -> list:
    """One word a turn.  A copy moves both cursors between its load and its
    store, so that the increments fill the load-to-store latency instead of
    the store waiting for the load with nothing beside it; the store then
    addresses back from the new dst, and its exit steps both cursors back."""
    fix = exits.retry(0, 0) if retry else exits.label(0)
    body: list = [Insn("addi", (LIMIT, END, "-SZREG")),
                  Insn("bgtu", ("a0", LIMIT, f".L{pfx}_tail_words_done")), Label("1")]
    if copy:
        back = exits.retry(-SZREG, -SZREG) if retry else exits.label(-SZREG)
        body += [Insn("REG_L", ("t0", "0(a1)"), fix), Insn("addi", ("a1", "a1", "SZREG")),
                 Insn("addi", ("a0", "a0", "SZREG")),
                 Insn("REG_S", ("t0", "-SZREG(a0)"), back,
                      note="stored 3 cycles after its load")]
    else:
        body += [Insn("REG_S", ("zero", "0(a0)"), fix), Insn("addi", ("a0", "a0", "SZREG"))]
    body += [Insn("bleu", ("a0", LIMIT, "1b")), Label(f".L{pfx}_tail_words_done")]
    return body


def _tail_overlap(pfx: str, exits: FaultExits, copy: bool, done: str, retry: bool) -> list:
    """One misaligned word ending exactly at the end (fast cores only).

    a1 stays on the first byte not copied, so a fault can resume the byte loop.
    """
    fix = exits.retry(0, 0) if retry else exits.label(0)
    body: list = [Insn("beq", ("a0", END, done))]
    if copy:
        body += [Insn("sub", ("t1", END, "a0"), note="bytes left, < SZREG"),
                 Insn("add", ("t1", "a1", "t1"), note="src end"),
                 Insn("REG_L", ("t0", "-SZREG(t1)"), fix),
                 Insn("REG_S", ("t0", f"-SZREG({END})"), fix,
                      note="some bytes again, equal")]
    else:
        body.append(Insn("REG_S", ("zero", f"-SZREG({END})"), fix))
    body.append(Insn("j", (done,)))
    return body


def tail_phase(pfx: str, ph: Phases, exits: FaultExits, copy: bool,
               last_out: bool = False) -> Phase | None:
    """What the loops leave.  `last_out` (a copy's `tail overlap`, see
    last_word_phase): the overlapping word lies out of line, and the tail
    ends in the test that branches to it when bytes are left."""
    done = f".L{pfx}_done"
    if ph.tail == "bytes":
        return None
    retry = copy and retries(ph)
    if ph.tail == "steps":
        return _tail_steps(pfx, ph, exits, copy)
    words, verb = _words_left(ph, copy), "copy" if copy else "zero"
    body: list = _tail_words(pfx, exits, copy, retry) if words else []
    why = ["Whole words that did not fill a block, one at a time." if words else
           "The last word loop takes a word at a time: less than one is left."]
    pseudo: tuple = (f"while (end - dst >= 8) {verb} one word;",) if words else ()
    if ph.tail == "overlap" and last_out:
        body.append(Insn("bne", ("a0", END, f".L{pfx}_last_word"),
                         note="bytes left: the last word, out of line"))
        why.append("Then, when bytes are left, one word that ends at the end of the buffer,")
        why.append("out of line: a copy of whole words falls through to the return.")
        pseudo += ("if (dst != end) goto last_word;",)
    elif ph.tail == "overlap":
        body += _tail_overlap(pfx, exits, copy, done, retry)
        why.append("Then one word that ends at the end of the buffer; it overlaps bytes")
        why.append("already copied, which this core may load and store misaligned." if copy else
                   "already zeroed, which this core may store misaligned.")
        pseudo += (f"if (dst != end) {verb} the word ending at end;",)
    if not body:
        return None
    regs = ((("a2", "loop limit: end - 8"),) if words else ()) + \
        ((("t0", "word in flight"),) if copy and (words or not last_out) else ())
    return Phase(f".L{pfx}_tail", "Tail", tuple(why), pseudo, regs, tuple(body))


def last_word_phase(pfx: str, ph: Phases, exits: FaultExits) -> Phase:
    """A copy's overlapping last word out of line (tail_phase's `last_out`),
    reached only when the loops leave bytes: a1 stays on the first byte not
    copied, so a fault can resume the byte loop, as in line."""
    body = _tail_overlap(pfx, exits, True, f".L{pfx}_done", retries(ph))[1:]
    return Phase(f".L{pfx}_last_word", "Last word",
                 ("One word that ends at the end of the buffer; it overlaps bytes already",
                  "copied, which this core may load and store misaligned."),
                 ("copy the word ending at end;",), (("t0", "word in flight"),), tuple(body))


def half_block_phase(pfx: str, ph: Phases, exits: FaultExits) -> Phase:
    """Half a block of the first word loop, once, when that many words are
    left (gen.lower.lower_uaccess's `_half_block`): what the first loop
    leaves then goes to the second class with fewer than half a block of
    words, so fewer of its turns run.  Straight-line, loads first; tested as
    a tail step is (a forward branch past it when fewer words are left), so
    a copy that needs it falls through it."""
    k = ph.word_unroll // 2
    block = S.word_copy(k, "loads_first", S.word_pool(ph.keep))
    body = block_loop(pfx, "half", block, exits, ph.fault, True, retries(ph),
                      tested=True, once=True)
    return Phase(f".L{pfx}_half", "Half a block",
                 (f"The first loop leaves fewer than {ph.word_unroll} words: copy {words(k)} in one",
                  "block when that many are left, so that the second class's loop, a word",
                  f"a turn, takes fewer than {k} turns before its exit."),
                 (f"if (end - dst >= {k * S.SZREG}) copy {words(k)};",),
                 (("a2", f"end - {k * S.SZREG}"),) + tuple((r, "word in flight")
                                                            for r in block_regs(block)),
                 tuple(body))


def _words_left(ph: Phases, copy: bool) -> bool:
    """Whether the loops before the tail can leave a whole word: not when
    the last word loop (the second class, tested at its entry) takes one
    word a turn and no shift copy (whose blocks may leave words) leads
    to the tail too."""
    shifted = copy and ph.last_shift_unroll > 0
    return shifted or not (ph.tested and ph.then_unroll == 1)


def _tail_steps(pfx: str, ph: Phases, exits: FaultExits, copy: bool) -> Phase | None:
    """Straight-line blocks of half, a quarter, ... one word of the last
    word loop's block, each taken when that many words are left."""
    sizes = steps(ph.then_unroll)
    if not sizes:
        return None
    body: list = _steps_guard(pfx, "steps")
    for k in sizes:
        block = S.word_copy(k, "loads_first", S.word_pool(ph.keep)) if copy else S.fill_words(k)
        body += block_loop(pfx, f"step{k}", block, exits, ph.fault, True,
                           copy and retries(ph), tested=True, once=True)
    body.append(Label(f".L{pfx}_steps_done"))
    return Phase(f".L{pfx}_tail", "Tail, in steps",
                 (f"Fewer than {ph.then_unroll} words are left: one block each of "
                  + ", ".join(map(words, sizes)) + ",",
                  "taken as the bits of the count left say; no loop to leave."),
                 ("if (end - dst >= 8) {",) +
                 tuple(f"\tif (end - dst >= {8 * k}) {'copy' if copy else 'zero'} {words(k)};"
                       for k in sizes) + ("}",),
                 (("a2", "end - the step's size"),), tuple(body))


def entry_phase(pfx: str, ph: Phases, n_reg: str, small_to: str, sum_held: bool,
                copy: bool = True) -> Phase:
    """SUM on, the end of dst, the threshold (of a copy, else of a clear).  With size classes the end is
    computed beside `li t6` (the layout of the kernel's routines keeps their
    order): csrs waits for t6 a cycle whatever else is in flight, so the add
    issues in the cycle that would pair `li` with nothing."""
    end = [Insn("add", (END, "a0", n_reg), note="a3 = dst + n: end of dst")]
    if sum_held:
        body = end
    elif ph.tested:
        li, csrs = sum_on()
        body = [li] + end + [csrs]
    else:
        body = sum_on() + end
    if ph.threshold > 0:
        body += [Insn("li", ("t0", str(ph.threshold)),
                      note="threshold from the strategy (`small below`)"),
                 Insn("bltu", (n_reg, "t0", small_to))]
    first = ("The caller holds sstatus.SUM.  Remember where dst ends," if sum_held
             else "Enable user memory access (sstatus.SUM), remember where dst ends,")
    regs = ((END, "end of dst"), ("t0", "threshold"))
    short = small_to.endswith("_short")
    return Phase(None, "Entry",
                 (first,
                  f"and send {'copies' if copy else 'clears'} shorter than {ph.threshold} bytes to the "
                  + ("short path," if short else "byte loop,"),
                  "where the set-up below would cost more than it saves."),
                 (f"if (n < {ph.threshold}) goto {'short' if short else 'bytes'};",),
                 regs if sum_held else (("t6", "SR_SUM"),) + regs, tuple(body))


def byte_phase(pfx: str, exits: FaultExits, copy: bool, done: str | None = None) -> Phase:
    return Phase(f".L{pfx}_bytes", "Byte copy" if copy else "Byte fill",
                 ("Small sizes, and what is left after the word loops.",),
                 ("while (dst < end) *dst++ = " + ("*src++;" if copy else "0;"),),
                 (("t0", "byte in flight"),) if copy else (),
                 tuple(_byte_loop(pfx, exits, copy, done or f".L{pfx}_done")))


def done_phase(pfx: str, sum_held: bool, label: str | None = None) -> Phase:
    label = label or f".L{pfx}_done"
    if sum_held:
        return Phase(label, "Done",
                     ("Every byte was stored: return 0 (SUM stays the caller's).",), (), (),
                     (Insn("li", ("a0", "0")), Insn("ret")))
    return Phase(label, "Done",
                 ("Every byte was stored: disable user access, return 0.",), (), (),
                 tuple(sum_off() + [Insn("li", ("a0", "0")), Insn("ret")]))


def fault_phase(exits: FaultExits, sum_held: bool, restart: bool = False) -> Phase:
    # with sum_held the caller set SUM and clears it after the call: the
    # exits leave it alone; `restart`: a word fault resumes the byte loop
    # at the start of its block (gen.phases.fixups)
    still_set = ("as it was, so SUM is still set, as the caller wants it." if sum_held else
                 "as it was, so SUM is still set and must be cleared on this path too.")
    why = ("A user access faulted; the trap handler resumed here with sstatus", still_set,
           "An exit's name says where the first byte not stored is (a0_plus_8:",
           "a0 + 8); it moves a0 there and returns end - a0, exactly the bytes",
           f"not {exits.done}.")
    pseudo: tuple[str, ...] = ("return end - (dst + stored);",)
    if exits.retries or exits.bytes_used:
        why = ("A user access faulted; the trap handler resumed here with sstatus",
               "as it was, so SUM is still set.  A word access that faulted may",
               "have bytes before the fault that are still reachable: move a0",
               "and a1 to the first byte not stored and let the byte loop copy",
               "up to the exact fault.  The exits of one unrolled block form a",
               "ladder: each steps a0 and a1 one word and falls into the next.",
               "A byte access that faulted returns end - a0, exactly the bytes",
               f"not {exits.done}" + ("; SUM is the caller's to clear." if sum_held
                                      else ", and clears SUM."))
        pseudo = ("word fault: dst += stored; src += stored; goto bytes;",
                  "byte fault: return end - dst;")
    if restart and exits.retries:
        why = ("A user access faulted; the trap handler resumed here with sstatus",
               "as it was, so SUM is still set.  A word access that faulted",
               "restarts its block in the byte loop: a0 and a1 go back to the",
               "block's first byte, the byte loop stores again what the block",
               "stored (the same bytes) and faults exactly at the first byte",
               "that cannot be copied.  A byte access that faulted returns",
               f"end - a0, exactly the bytes not {exits.done}"
               + ("; SUM is the caller's to clear." if sum_held else ", and clears SUM."))
        pseudo = ("word fault: dst = block start; src = its source; goto bytes;",
                  "byte fault: return end - dst;")
    return Phase(None, "Fault exits", why, pseudo, (("a0", f"bytes not {exits.done}"),),
                 tuple(exit_code(exits, END, [] if sum_held else sum_off())))
