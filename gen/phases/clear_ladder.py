"""clear_user with `tail ladder`: whole words stored from both ends of the
aligned span, so that short calls and the words after the loops take no
loop and at most one mispredicted branch.

The span is [a0, a2), a2 = end rounded down to SZREG, once dst is aligned
(a misaligned dst first takes the overlapping pieces of `ends overlap`,
which stop at dst rounded up to SZREG).  With w words in it:

* w >= the first class's block: that loop, out of line, then what is left
  as below (the second loop, or its last block from the end);
* w > the second class's block T: the second loop, out of line, which
  stops with 1..T words left and stores the last T words of the span
  (`last`): words it or the loop stored already are zeroed again;
* otherwise a ladder of classes 2, 4, ... T: class k holds the calls of
  k/2 < w <= k words and stores ceil(k/2) words at the span's start and
  floor(k/2) ending at its end, which overlap when w < k.  Class 2 lies in
  line, the others out of line, each with its own return;
* the r < SZREG bytes after the span: `ends overlap`'s three pieces.

So a call of 8 to 23 bytes on an aligned dst stores two words and returns
without a taken branch; the kernel's clear of 6.12 runs its one-word loop
and mispredicts its exit.

Faults.  Every store is an aligned word or a naturally aligned piece, so
it lies in one page and a faulting store stored nothing.  The stores of
each path reach new bytes in rising order, and a store that lands on
bytes zeroed already lies in a word already written, so it cannot fault:
the first store that faults is at the first byte not zeroed, and each
store's exit returns end minus its own address (exits.label from a0,
exits.at from a2).

Registers: a0 cursor, a3 end, a2 end of the span, a4 loop limit, t0/t1
tests.  The threshold (`small below`, at least SZREG) sends shorter calls
to the byte loop; from SZREG bytes on the head's pieces end by dst + 7 and
the tail's start at end - 7, inside the buffer.

Role: lower a ClearUser whose tail is `ladder` into an ir.Function.
May import gen.emission.ir, gen.phases.fixups, gen.phases.pieces, gen.phases.schedule, gen.front.strategy,
gen.phases.uaccess_phases.
"""
from __future__ import annotations

from copygen.gen.phases.fixups import FaultExits
from copygen.gen.emission.ir import Function, Insn, Label, Phase, without_jumps_to_next
from copygen.gen.phases.pieces import head_stores, tail_overlap
from copygen.gen.phases.schedule import units
from copygen.gen.front.strategy import SZREG, ClearUser, Phases
from copygen.gen.phases.uaccess_phases import (END, byte_phase, done_phase, fault_phase, sum_on)

SPAN, LIMIT = "a2", "a4"


def ladder(then_unroll: int) -> list[int]:
    """The short classes, in words: 2, 4, ... doubling below the second
    class's block, and that block."""
    ks = [2]
    while ks[-1] * 2 < then_unroll:
        ks.append(ks[-1] * 2)
    if ks[-1] != then_unroll:
        ks.append(then_unroll)
    return ks


def _both_ends(k: int, exits: FaultExits) -> list[Insn]:
    """Class k: ceil(k/2) words at the span's start, floor(k/2) ending at its end."""
    head, tail = (k + 1) // 2, k // 2
    out = [Insn("REG_S", ("zero", f"{units(j * SZREG)}(a0)"), exits.label(j * SZREG))
           for j in range(head)]
    out += [Insn("REG_S", ("zero", f"{units((j - tail) * SZREG)}({SPAN})"),
                 exits.at(SPAN, (j - tail) * SZREG))
            for j in range(tail)]
    return out


def _last(t: int, exits: FaultExits) -> list[Insn]:
    """The last t words of the span, ending at its end."""
    return [Insn("REG_S", ("zero", f"{units(c)}({SPAN})"), exits.at(SPAN, c))
            for c in range(-t * SZREG, 0, SZREG)]


def _block(unroll: int, exits: FaultExits) -> list[Insn]:
    """One block of a loop: half its stores, a0 past the block, the rest
    from the new a0 (the address of a store never waits for the add)."""
    half = unroll // 2
    size = unroll * SZREG
    out = [Insn("REG_S", ("zero", f"{units(j * SZREG)}(a0)"), exits.label(j * SZREG))
           for j in range(half)]
    out.append(Insn("addi", ("a0", "a0", f"{unroll}*SZREG" if unroll > 1 else "SZREG")))
    out += [Insn("REG_S", ("zero", f"{units(c)}(a0)"), exits.label(c))
            for c in range(half * SZREG - size, 0, SZREG)]
    return out


def _finish(pfx: str) -> list:
    return [Insn("bne", (SPAN, END, f".L{pfx}_tail_pieces"), note="bytes after the last word")]


def _entry(pfx: str, ph: Phases) -> Phase:
    body = [sum_on()[0],
            Insn("add", (END, "a0", "a1"), note="a3 = dst + n: end of dst"),
            sum_on()[1],
            Insn("li", ("t0", str(ph.threshold)),
                 note="threshold from the strategy (`small below`)"),
            Insn("andi", ("t1", "a0", "SZREG-1")),
            Insn("bltu", ("a1", "t0", f".L{pfx}_bytes")),
            Insn("andi", (SPAN, END, "-SZREG"), note="end of the whole words"),
            Insn("bnez", ("t1", f".L{pfx}_head"), note="dst misaligned: the head, out of line")]
    return Phase(None, "Entry",
                 ("Enable user memory access (sstatus.SUM), remember where dst ends",
                  "and where its last whole word ends.  Calls shorter than "
                  f"{ph.threshold} bytes take",
                  "the byte loop; a misaligned dst takes the head, out of line."),
                 (f"if (n < {ph.threshold}) goto bytes;", "span = round_down(end, SZREG);",
                  "if (dst & (SZREG - 1)) goto head;"),
                 (("t6", "SR_SUM"), (END, "end of dst"), (SPAN, "end of the whole words")),
                 tuple(body))


def _classes(pfx: str, ph: Phases, ks: list[int], exits: FaultExits) -> Phase:
    """From the aligned dst: which class (`ks`, the ladder), and class 2 in line."""
    w, t = ph.word_unroll, ph.then_unroll
    body = [Insn("addi", (LIMIT, SPAN, f"-{w}*SZREG"), note=f"last a0 from which {w} words remain"),
            Insn("addi", ("t0", "a0", f"{t}*SZREG")),
            Insn("bgeu", (LIMIT, "a0", f".L{pfx}_words"), note=f"{w} words or more: out of line"),
            Insn("bltu", ("t0", SPAN, f".L{pfx}_words_then"), note=f"more than {t} words")]
    for lo, k in reversed(list(zip(ks, ks[1:]))):
        body += [Insn("addi", ("t0", "a0", f"{lo}*SZREG")),
                 Insn("bltu", ("t0", SPAN, f".L{pfx}_class_{k}"), note=f"{lo + 1} to {k} words")]
    body += _both_ends(2, exits) + _finish(pfx)
    pseudo = [f"if (span - dst >= {w} * SZREG) goto words;",
              f"if (span - dst > {t} * SZREG) goto words_then;"]
    pseudo += [f"if (span - dst > {lo} * SZREG) goto class_{k};"
               for lo, k in reversed(list(zip(ks, ks[1:])))]
    pseudo += ["*(u64 *)dst = 0; *(u64 *)(span - 8) = 0;",
               "if (span != end) goto tail_pieces;"]
    return Phase(f".L{pfx}_head_done", "Size classes",
                 ("dst is aligned and at least one whole word is left.  Calls of",
                  f"{w} words or more, or of more than {t}, branch out of line to the",
                  "first or the second loop; so do the classes of "
                  + ", ".join(f"up to {k}" for k in ks[1:]) + " words." if ks[1:] else
                  "first or the second loop.",
                  "Up to 2 words: one at each end of the span, the same word when",
                  "there is one; no branch is taken unless bytes follow the last word."),
                 tuple(pseudo), ((LIMIT, f"span - {w} words"), ("t0", "a test")), tuple(body))


def _class_phase(pfx: str, k: int, lo: int, exits: FaultExits) -> list[Phase]:
    head, tail = (k + 1) // 2, k // 2
    return [Phase(f".L{pfx}_class_{k}", f"{lo + 1} to {k} words",
                  (f"{head} words at the start of the span and {tail} ending at its end;",
                   "they overlap when fewer than "
                   f"{k} are left, zeroing some words twice."),
                  (f"store {head} words from dst and {tail} ending at span;",
                   "if (span != end) goto tail_pieces;"), (),
                  tuple(_both_ends(k, exits) + _finish(pfx))),
            done_phase(pfx, False, f".L{pfx}_class_{k}_done")]


def _head(pfx: str, exits: FaultExits) -> Phase:
    body = [*head_stores("zero", "a0", exits.label(0)),
            Insn("beq", ("a0", SPAN, f".L{pfx}_tail_pieces"), note="no whole word: the last bytes"),
            Insn("REG_S", ("zero", "0(a0)"), exits.label(0),
                 note="again over bytes the pieces stored"),
            Insn("addi", ("a0", "a0", "SZREG")),
            Insn("bne", ("a0", SPAN, f".L{pfx}_head_done"), note="whole words left"),
            Insn("j", (f".L{pfx}_tail_pieces",))]
    return Phase(f".L{pfx}_head", "Alignment head, overlapping pieces",
                 ("dst is misaligned.  Store a zero byte, halfword and word, each",
                  "naturally aligned, at dst rounded up to 1, 2 and 4: together they",
                  "cover every byte up to the aligned dst (a piece may store zero again",
                  "over the one before it, and at dst & 7 >= 5 the word lies past the",
                  "aligned dst, within dst + 7, so inside the buffer).  Then dst is",
                  "rounded up to SZREG.  If a whole word follows, it is stored too, so",
                  "that exactly the bytes below dst are zeroed when a loop begins."),
                 ("*(u8 *)p = 0; p = round_down(p + 1, 2);",
                  "*(u16 *)p = 0; p = round_down(p + 2, 4);",
                  "*(u32 *)p = 0; dst = round_down(p + 4, SZREG);",
                  "if (dst == span) goto tail_pieces;",
                  "*(u64 *)dst = 0; dst += SZREG;",
                  "if (dst != span) goto head_done; goto tail_pieces;"),
                 (), tuple(body))


def _second_class(pfx: str, ph: Phases, exits: FaultExits) -> list[Phase]:
    t = ph.then_unroll
    loop = [Insn("addi", (LIMIT, SPAN, f"-{t}*SZREG"), note=f"while more than {t} words remain"),
            Label(f".L{pfx}_words_then_loop"),
            *_block(t, exits),
            Insn("bltu", ("a0", LIMIT, f".L{pfx}_words_then_loop")),
            *_last(t, exits), *_finish(pfx)]
    return [Phase(f".L{pfx}_words_then", "Second class",
                  (f"More than {t} words: blocks of {t} while more than {t} are left, then",
                   f"the last {t} words of the span, over words the loop may have stored."),
                  (f"do store {t} words; while (span - dst > {t} * SZREG);",
                   f"store the {t} words ending at span;", "if (span != end) goto tail_pieces;"),
                  ((LIMIT, f"span - {t} words"),), tuple(loop)),
            done_phase(pfx, False, f".L{pfx}_words_then_done")]


def _first_class(pfx: str, ph: Phases, exits: FaultExits) -> list[Phase]:
    w, t = ph.word_unroll, ph.then_unroll
    body = [Label("1"), *_block(w, exits),
            Insn("bleu", ("a0", LIMIT, "1b")),
            Insn("addi", (LIMIT, SPAN, f"-{t}*SZREG")),
            Insn("bltu", ("a0", LIMIT, f".L{pfx}_words_more"), note=f"more than {t} words left"),
            *_last(t, exits), *_finish(pfx)]
    return [Phase(f".L{pfx}_words", "First class",
                  (f"{w} words or more: blocks of {w}.  What is left goes to the second",
                   f"class's loop when it is more than {t} words; otherwise the last",
                   f"{t} words of the span are stored here (the call had {w} words or",
                   "more, so they lie inside it)."),
                  (f"do store {w} words; while (span - dst >= {w} * SZREG);",
                   f"if (span - dst > {t} * SZREG) goto words_then_loop;",
                   f"store the {t} words ending at span;"),
                  ((LIMIT, f"span - {w} words, then span - {t}"),), tuple(body)),
            done_phase(pfx, False, f".L{pfx}_words_done"),
            Phase(f".L{pfx}_words_more", "Into the second class's loop",
                  ("A forward branch here and a jump back cost less than a backward",
                   "branch that the short remainders would mispredict."), (), (),
                  (Insn("j", (f".L{pfx}_words_then_loop",)),))]


def clear_ladder_function(cl: ClearUser, prefix: str = "clear") -> Function:
    ph, pfx = cl.phases, prefix
    exits = FaultExits(pfx, done="zeroed")
    ks = ladder(ph.then_unroll)
    phases = [_entry(pfx, ph), _classes(pfx, ph, ks, exits), done_phase(pfx, False)]
    for lo, k in zip(ks, ks[1:]):
        phases += _class_phase(pfx, k, lo, exits)
    # every branch to the last pieces is forward (predicted not taken)
    phases += [_head(pfx, exits), *_second_class(pfx, ph, exits), *_first_class(pfx, ph, exits),
               *tail_overlap(pfx, exits),
               byte_phase(pfx, exits, False, f".L{pfx}_bytes_done"),
               done_phase(pfx, False, f".L{pfx}_bytes_done")]
    return Function(
        "__clear_user", (),
        ("Zero n bytes of user memory; any store may fault.",),
        (("a0", "dst (user)"), ("a1", "n")),
        "a0: the number of bytes not zeroed (0 on success)",
        without_jumps_to_next(tuple(phases)), (fault_phase(exits, False),), ("__clear_user",))


assert SZREG == 8, "the head's pieces are 1, 2 and 4 bytes: an RV64 word"
