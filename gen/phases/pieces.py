"""Sub-word ends in pieces (`ends pieces`): the alignment head and the last
bytes of a size-class routine, built from whole aligned words.

The head loads the aligned source words holding its first and last byte,
shifts them into one value (as the shift copy builds a word) and stores it
as 1-, 2- and 4-byte pieces, each naturally aligned, until dst is aligned.
The tail does the same for the r < SZREG bytes the loops leave: its value
is the aligned source word at a1 (word path) or prev shifted against the
word holding the last byte (shift copy), stored as 4-, 2- and 1-byte
pieces.  A fill stores zero pieces and loads nothing.

Faults.  A naturally aligned piece lies in one page, so a faulting store
stored none of its bytes: N = end - a0 exactly.  Every load happens before
the first store of its end; a faulting load resumes the byte loop at a0
and a1 under the exact policy (gen.phases.fixups), which copies every byte still
reachable.  Each loaded word holds at least one source byte, so no load
reaches a page a byte copy would not touch.

Registers: t0 the value, t1 a pointer bit or the count left, t2 head
length, t3 the second word, t4/t5 shift amounts (head).

`ends overlap` (clear_user) stores the pieces of each end without a test:
a byte, halfword and word at dst rounded up to 1, 2 and 4 (and the first
aligned word, over the bytes past it the word may have stored), and a
word, halfword and byte ending at end rounded down to 4, 2 and 1.  They cover
the end's bytes whatever its alignment, and a piece that lands on bytes
already zeroed zeroes them again.  a0 steps onto each piece (or a fault
exit's offset names it), so a fault returns end minus its address.  With
`tail overlap` as well (a core that stores misaligned words), a clear of
SZREG bytes up to the threshold stores a word at dst and one ending at
end instead of taking the byte loop (`short_words`).

Role: phase builders for `ends pieces` and `ends overlap`, and the fill's
alignment head (`head_stores`) that the assembly memset shares.  May import
gen.emission.ir, gen.phases.fixups, gen.front.strategy, gen.phases.uaccess_phases.
"""
from __future__ import annotations

from copygen.gen.phases.fixups import FaultExits
from copygen.gen.emission.ir import Insn, Label, Phase
from copygen.gen.front.strategy import SZREG, Phases
from copygen.gen.phases.uaccess_phases import ALIGN_MASK, END, LIMIT, done_phase

STORE = {1: "sb", 2: "sh", 4: "sw"}


def _load_exit(exits: FaultExits, ph: Phases) -> str:
    """A load of an end resumes the byte loop (exact, restart) or returns
    (block)."""
    return exits.label(0) if ph.fault == "block" else exits.retry(0, 0)


def _stores(exits: FaultExits, value: str, bits: str, scratch: str, sizes: tuple[int, ...],
            end: str, tag: str, advance_last: bool) -> list:
    """One naturally aligned store per size whose bit is set in `bits`; the
    value shifts right past each piece stored and a0 steps over it."""
    out: list = []
    for k, size in enumerate(sizes):
        last = k + 1 == len(sizes)
        nxt = end if last else f".L{tag}_{size}"
        out += [Insn("andi", (scratch, bits, str(size))), Insn("beqz", (scratch, nxt)),
                Insn(STORE[size], (value, "0(a0)"), exits.label(0))]
        if value != "zero" and not last:
            out.append(Insn("srli", (value, value, str(8 * size))))
        if advance_last or not last:
            out.append(Insn("addi", ("a0", "a0", str(size))))
        if not last:
            out.append(Label(nxt))
    return out


def _head_value(exits: FaultExits, ph: Phases) -> list:
    """t0 = the m head bytes, lowest first; a1 steps over them.  Ordered so
    that no instruction shares an issue pair with the one it depends on: the
    address of the second load is ready when the first load has issued."""
    return [Insn("neg", ("t2", "a0")),
            Insn("addi", ("t3", "a1", "-1")),
            Insn("andi", ("t2", "t2", "SZREG-1"), note="m: bytes up to the aligned dst"),
            Insn("andi", ("t1", "a1", ALIGN_MASK), note="the word holding the first byte"),
            Insn("add", ("t3", "t3", "t2")),
            Insn("REG_L", ("t0", "0(t1)"), _load_exit(exits, ph)),
            Insn("andi", ("t3", "t3", ALIGN_MASK), note="the word holding the last byte"),
            Insn("andi", ("t4", "a1", "SZREG-1")),
            Insn("REG_L", ("t3", "0(t3)"), _load_exit(exits, ph),
                 note="the same word when it holds all m bytes"),
            Insn("slli", ("t4", "t4", "3"), note="shr = 8 * (src & 7)"),
            Insn("add", ("a1", "a1", "t2")),
            Insn("neg", ("t5", "t4"), note="shl = 64 - shr (0 when src is aligned)"),
            Insn("srl", ("t0", "t0", "t4")),
            Insn("sll", ("t3", "t3", "t5")),
            Insn("or", ("t0", "t0", "t3"), note="the m source bytes, lowest first")]


def head_pieces(pfx: str, ph: Phases, exits: FaultExits, copy: bool,
                into_shift: bool = False, words_below: int = 0) -> Phase:
    """The alignment head, out of line: entered with dst misaligned, returns
    to `head_done` with dst aligned.  With `into_shift` (the shift copy laid
    out above it) a source still misaligned branches straight back into the
    shift copy, predicted taken, and only an aligned one jumps back to the
    word path past the source-alignment test.  With `words_below` as well
    (the first word loop, of blocks that many bytes, laid out right below
    the head) the head makes the size-class test itself: a call with less
    than a block left branches back to the second class, predicted taken,
    and a longer one falls into the first loop, instead of both jumping
    back to the test in line."""
    body = _head_value(exits, ph) if copy else []
    body += _stores(exits, "t0" if copy else "zero", "a0", "t1", (1, 2, 4),
                    f".L{pfx}_head_end", f"{pfx}_head", True)
    body.append(Label(f".L{pfx}_head_end"))
    if into_shift:
        body += [Insn("andi", ("t0", "a1", "SZREG-1")),
                 Insn("bnez", ("t0", f".L{pfx}_shift"),
                      note="src still misaligned (backward: taken)")]
        body += _into_words(pfx, words_below)
    else:
        body.append(Insn("j", (f".L{pfx}_head_done",)))
    if copy:
        why = ("dst is misaligned.  Load the aligned words holding the first and the",
               "last of the m = -dst & 7 head bytes, shift them into one value, and",
               "store it as a byte, halfword and word as dst's low bits say, each",
               "naturally aligned, until dst is aligned.")
        pseudo = ("m = -dst & 7; v = src[0..m), from the aligned words holding it;",)
        regs = (("t0", "the head's bytes"), ("t1", "a bit of dst"), ("t2", "m"),
                ("t3", "the word holding the last byte"), ("t4", "shr"), ("t5", "shl"))
    else:
        why = ("dst is misaligned.  Store a zero byte, halfword and word as dst's",
               "low bits say, each naturally aligned, until dst is aligned.")
        pseudo, regs = (), (("t1", "a bit of dst"),)
    pseudo += ("if (dst & 1) store 1 byte;", "if (dst & 2) store 2 bytes;",
               "if (dst & 4) store 4 bytes;")
    if into_shift:
        why += ("A source still misaligned goes straight to the shift copy.",)
        pseudo += ("if (src & 7) goto shift; else goto word copy;",)
        if words_below:
            why += (f"An aligned one with a whole {words_below}-byte block left falls into",
                    "the first word loop below.")
    return Phase(f".L{pfx}_head", "Alignment head, in pieces", why, pseudo, regs, tuple(body))


def _into_words(pfx: str, block: int) -> list:
    """The end of a head whose source is aligned too: to the word path in
    line, or (`block`) the size-class test and a fall into the first loop."""
    if not block:
        return [Insn("j", (f".L{pfx}_src_aligned",), note="src aligned too: the word copy")]
    return [Insn("addi", (LIMIT, END, f"-{block // SZREG}*SZREG")),
            Insn("bgtu", ("a0", LIMIT, f".L{pfx}_words_then"),
                 note="less than a whole block (backward: taken)")]


def tail_pieces(pfx: str, ph: Phases, exits: FaultExits, copy: bool,
                sum_held: bool) -> list[Phase]:
    """The last r < SZREG bytes, out of line, and their own return.  A copy
    enters at `tail_pieces` (aligned source: load the word at a1) or, from
    the shift copy, at `pieces` with the value built and t1 = r."""
    body: list = []
    if copy:
        body += [Insn("REG_L", ("t0", "0(a1)"), _load_exit(exits, ph),
                      note="src is aligned: one word holds the r bytes"),
                 Insn("sub", ("t1", END, "a0"), note="r: bytes left, 1..SZREG-1"),
                 Label(f".L{pfx}_pieces")]
    else:
        body.append(Insn("sub", ("t1", END, "a0"), note="r: bytes left, 1..SZREG-1"))
    body += _stores(exits, "t0" if copy else "zero", "t1", "t2", (4, 2, 1),
                    f".L{pfx}_pieces_done", f"{pfx}_tail", False)
    why = ("Fewer than SZREG bytes are left and dst is aligned: store "
           + ("their value" if copy else "zero"),
           "as a word, halfword and byte as the bits of r say, each naturally aligned.")
    regs = (("t0", "the last bytes"),) if copy else ()
    return [Phase(f".L{pfx}_tail_pieces", "Last bytes, in pieces", why,
                  ("r = end - dst;", "if (r & 4) store 4 bytes;", "if (r & 2) store 2 bytes;",
                   "if (r & 1) store 1 byte;"),
                  regs + (("t1", "r"), ("t2", "a bit of r")), tuple(body)),
            done_phase(pfx, sum_held, f".L{pfx}_pieces_done")]


def head_stores(value: str, cur: str, fixup: str | None = None,
                scratch: str | None = None) -> list[Insn]:
    """The sub-word alignment head of a fill, without a test: the low byte,
    halfword and word of `value` at dst (in `cur`) rounded up to 1, 2 and 4,
    each naturally aligned, then cur = dst rounded up to SZREG.  Together
    the pieces cover every byte up to the aligned dst; a piece may store
    again bytes of the one before it, and for dst & 7 >= 5 the word lies up
    to 4 bytes past the aligned dst, which the caller's threshold keeps
    inside the buffer.

    Without `scratch`, cur steps onto each piece as it stores, so that a
    fault exit (`fixup`, taken with cur at the piece) returns end minus the
    piece's address.  With `scratch` (a memset, which cannot fault), each
    piece's address is computed from dst into it, no address waiting for
    the one before, and cur moves once."""
    out: list[Insn] = []
    at = cur
    for size in (1, 2, 4):
        up = 2 * size
        out.append(Insn(STORE[size], (value, f"0({at})"), fixup))
        if scratch is None:
            out += [Insn("addi", (cur, cur, str(size))),
                    Insn("andi", (cur, cur, str(-up)),
                         note=f"dst rounded up to {'SZREG' if up == SZREG else up}")]
            continue
        at = cur if up == SZREG else scratch
        out += [Insn("addi", (at, cur, "SZREG-1" if up == SZREG else str(up - 1))),
                Insn("andi", (at, at, "-SZREG" if up == SZREG else str(-up)))]
    return out


def head_overlap(pfx: str, exits: FaultExits) -> Phase:
    """A clear's alignment head without a test (`ends overlap`), out of
    line: entered with dst misaligned and n >= 2 * SZREG - 1, returns to
    `head_done` with dst rounded up to SZREG, plus one word.  A byte at
    dst, a halfword at dst rounded up to 2 and a word at dst rounded up to
    4 cover every byte up to the aligned dst; when dst is already aligned
    to 2 or 4, a piece stores again bytes the one before it stored, and
    for dst & 7 >= 5 the word (at 7 the halfword too) lies past the
    aligned dst, up to 4 bytes.  The word at the aligned dst covers those, so that when the head is done
    exactly the bytes below a0 are stored; it ends by dst + 15, inside the
    buffer.

    Faults: a0 is each piece's address when it stores, and every byte below
    it is zeroed.  A piece that overlaps the one before it lies in the same
    naturally aligned word, so in a page already written: it cannot fault."""
    body = [*head_stores("zero", "a0", exits.label(0)),
            Insn("REG_S", ("zero", "0(a0)"), exits.label(0),
                 note="again over bytes the pieces stored"),
            Insn("addi", ("a0", "a0", "SZREG")),
            Insn("j", (f".L{pfx}_head_done",))]
    return Phase(f".L{pfx}_head", "Alignment head, overlapping pieces",
                 ("dst is misaligned.  Store a zero byte, halfword and word, each",
                  "naturally aligned, at dst rounded up to 1, 2 and 4: together they",
                  "cover every byte up to the aligned dst, a piece that lands on",
                  "bytes stored already stores zero again, and the halfword and word",
                  "may run up to 4 bytes past the aligned dst.  Then the word at the",
                  "aligned dst, so that exactly the bytes below the new dst are stored.",
                  "No test, so no branch to mispredict; the threshold guarantees",
                  "n >= 15."),
                 ("*(u8 *)dst = 0; dst = round_up(dst, 2);",
                  "*(u16 *)dst = 0; dst = round_up(dst, 4);",
                  "*(u32 *)dst = 0; dst = round_up(dst, 8);",
                  "*(u64 *)dst = 0; dst += 8;"),
                 (), tuple(body))


def head_word(pfx: str, exits: FaultExits) -> Phase:
    """A copy's alignment head as two words (`ends overlap` on a
    target with fast misaligned access), out of line: entered with dst
    misaligned and n >= 2 * SZREG - 1, returns to `head_done` with dst
    rounded up to SZREG plus one word, src moved as far.  The word at dst
    covers every byte up to the aligned dst, the word at the aligned dst
    (from the source byte that belongs there) the rest of the first one
    and more, so that exactly the bytes below the new dst are copied; the
    loops go on from there.

    Faults: both loads come before either store and move no cursor, and
    the first store faults before anything is stored: each resumes the
    byte loop at the first byte (retry exit 0, 0).  The second store lies
    in the aligned word that holds dst + SZREG - 1, a byte the first store
    wrote, so in a page already written: it cannot fault (its exit is the
    same)."""
    retry = exits.retry(0, 0)
    body = [Insn("REG_L", ("t0", "0(a1)"), retry),
            Insn("addi", ("t1", "a0", "SZREG")),
            Insn("andi", ("t1", "t1", ALIGN_MASK), note="dst rounded up to SZREG, past dst"),
            Insn("sub", ("t2", "t1", "a0")),
            Insn("add", ("t2", "a1", "t2"), note="the source byte of the aligned dst"),
            Insn("REG_L", ("t3", "0(t2)"), retry),
            Insn("REG_S", ("t0", "0(a0)"), retry),
            Insn("REG_S", ("t3", "0(t1)"), retry, note="again over bytes the first word stored"),
            Insn("addi", ("a0", "t1", "SZREG")),
            Insn("addi", ("a1", "t2", "SZREG")),
            Insn("j", (f".L{pfx}_head_done",))]
    return Phase(f".L{pfx}_head", "Alignment head, two words",
                 ("dst is misaligned.  Copy the first SZREG bytes as one word (this",
                  "core loads and stores it misaligned), then the word at dst rounded",
                  "up to SZREG, from the source byte that belongs there: it stores",
                  "again some bytes of the first, the same values, so that exactly",
                  "the bytes below the new dst are copied.  No loop, so no branch",
                  "to mispredict; the threshold guarantees n >= 15."),
                 ("w0 = *(u64 *)src; w1 = *(u64 *)(src + round_up(dst + 1, 8) - dst);",
                  "*(u64 *)dst = w0; *(u64 *)round_up(dst + 1, 8) = w1;",
                  "src += round_up(dst + 1, 8) + 8 - dst; dst = round_up(dst + 1, 8) + 8;"),
                 (("t0", "the word at dst"), ("t1", "dst rounded up to SZREG"),
                  ("t2", "its source"), ("t3", "the word at the aligned dst")), tuple(body))


def tail_overlap(pfx: str, exits: FaultExits) -> list[Phase]:
    """A clear's last r < SZREG bytes without a test (`ends overlap`), out
    of line, and their own return: a word ending at end rounded down to 4,
    a halfword ending at end rounded down to 2 and a byte ending at end.
    Together they cover [end - r, end); each lies in [end - 7, end), so
    inside the buffer (n >= SZREG), and they store in rising order.

    Faults: a0 plus the exit's offset is each piece's address, and every
    byte below it is zeroed.  A piece below the first byte left, or over
    the piece before it, lies in a naturally aligned word already written:
    it cannot fault."""
    body = [Insn("andi", ("a0", END, "-4"), note="end rounded down to 4"),
            Insn("sw", ("zero", "-4(a0)"), exits.label(-4)),
            Insn("andi", ("a0", END, "-2"), note="end rounded down to 2"),
            Insn("sh", ("zero", "-2(a0)"), exits.label(-2)),
            Insn("addi", ("a0", END, "-1")),
            Insn("sb", ("zero", "0(a0)"), exits.label(0))]
    return [Phase(f".L{pfx}_tail_pieces", "Last bytes, overlapping pieces",
                  ("Fewer than SZREG bytes are left and dst is aligned: store a zero",
                   "word, halfword and byte, each naturally aligned, ending at end",
                   "rounded down to 4, to 2, and at end.  Together they cover the r",
                   "bytes left; a piece that lands on bytes stored already stores",
                   "zero again.  No test, so no branch to mispredict."),
                  ("*(u32 *)(round_down(end, 4) - 4) = 0;",
                   "*(u16 *)(round_down(end, 2) - 2) = 0;",
                   "*(u8 *)(end - 1) = 0;"),
                  (), tuple(body)),
            done_phase(pfx, False, f".L{pfx}_pieces_done")]


def short_words(pfx: str) -> list[Phase]:
    """A clear of SZREG bytes up to the threshold (`ends overlap` with
    `tail overlap`, a core that stores misaligned words): a word at dst
    and a word ending at end, which overlap, and their own return; fewer
    than SZREG bytes take the byte loop.  The caller keeps it to
    thresholds of at most 2 * SZREG: SZREG <= n < 2 * SZREG, so the two
    words cover the buffer and lie inside it.

    Faults: either store resumes the byte loop at a0, its own address (a0
    moves past the first word once it is stored), which zeroes what is
    accessible and returns exactly what is not: a misaligned word may
    cross into a page that faults, and the bytes before that page must
    still be zeroed."""
    retry = f".L{pfx}_bytes"
    body = [Insn("li", ("t0", "SZREG")),
            Insn("bltu", ("a1", "t0", retry), note="fewer than SZREG bytes: one at a time"),
            Insn("REG_S", ("zero", "0(a0)"), retry),
            Insn("addi", ("a0", "a0", "SZREG")),
            Insn("REG_S", ("zero", "-SZREG(a3)"), retry, note="over bytes the first word stored")]
    return [Phase(f".L{pfx}_short", "Short clear, two overlapping words",
                  ("Fewer bytes than the threshold: from SZREG bytes on, a zero word at",
                   "dst and one ending at end cover them (this core stores misaligned",
                   "words); the second stores zero again over bytes the first stored.",
                   "A fault in either resumes the byte loop at a0."),
                  ("if (n < SZREG) goto bytes;",
                   "*(u64 *)dst = 0; dst += SZREG;",
                   "*(u64 *)(end - SZREG) = 0;"),
                  (("t0", "SZREG"),), tuple(body)),
            done_phase(pfx, False, f".L{pfx}_short_done")]


def shift_pieces(pfx: str, ph: Phases, exits: FaultExits) -> list:
    """After the shift copy (a1 the aligned address of prev, a6 prev): put
    a1 back on the first source byte not copied, build the last r bytes'
    value from prev and the word holding the last byte, and store it in
    pieces.  Ordered so that no instruction shares an issue pair with the
    one it depends on."""
    return [Insn("srli", ("t0", "a4", "3")),
            Insn("sub", ("t1", END, "a0"), note="r: bytes left, 0..SZREG-1"),
            Insn("add", ("a1", "a1", "t0"), note="back to the first source byte not copied"),
            Insn("addi", ("t3", "t1", "-1")),
            Insn("beq", ("a0", END, f".L{pfx}_pieces_done"),
                 note="nothing left (forward: predicted not taken)"),
            Insn("add", ("t3", "t3", "a1")),
            Insn("andi", ("t3", "t3", ALIGN_MASK), note="the word holding the last byte"),
            Insn("REG_L", ("t3", "0(t3)"), _load_exit(exits, ph), note="prev again, or the next"),
            Insn("srl", ("t0", "a6", "a4")),
            Insn("sll", ("t3", "t3", "a5")),
            Insn("or", ("t0", "t0", "t3"), note="the r source bytes, lowest first"),
            Insn("j", (f".L{pfx}_pieces",))]


assert SZREG == 8, "pieces are 4, 2 and 1 bytes: an RV64 word"
