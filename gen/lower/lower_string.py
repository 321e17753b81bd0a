"""Lowering of the string routines: StringLib -> cir.CUnit (string.c in C).

Layout of each function, by phase title (a phase the strategy does not
call for is left out):

  memcpy   entry         locals; sizes below the threshold -> bytes
           head          bytes until dst is word-aligned (align dst), or one
                         word at dst, then dst rounded up (align overlap)
           words         blocks of whole words: the source as it is on a
                         fast core, else only when it is co-aligned with dst
           word tail     whole words one at a time (tail words | overlap)
           overlap tail  one word ending at the end (fast cores only)
           shift copy    misaligned source from aligned loads (slow cores)
           bytes         the byte loop shared by small sizes and the tail
  memmove  entry; forward (memcpy, or bytes; behind a memcpy with an
           overlapping head or tail, words then bytes when the buffers overlap;
           behind a memcpy in assembly, bytes to align dst, words when src is
           co-aligned, then bytes, when they overlap);
           ends (both cursors to the end); backward words; backward bytes
  memset   entry; replicate (the byte into every byte of a word); head (as memcpy's);
           words; word tail; overlap tail; bytes

Every number the C carries (threshold, unroll, replication shifts) and the
comment above each function come from the same Python values, so the
comment cannot drift from the code.  The word and shift blocks are unrolled
here; a C block has two statement orders (`C_ORDER`).  The statements
themselves are built by gen.lower.string_stmts.
Role: decisions only, the text layout is templates/string.c.j2's.
May import gen.emission.cir, gen.front.strategy, gen.lower.string_stmts and the standard library.
"""
from __future__ import annotations

from copygen.gen.emission.cir import BLANK, Comment, CFunction, CPhase, CUnit, Stmt
from copygen.gen.front.strategy import SZREG, Phases, StringLib, Target
from copygen.gen.lower.string_stmts import (C_ORDER, UWORD_HELPERS, WORD_T, advance, byte_head,
                                            byte_loop, close_block, expect, load_u,
                                            one_word_loop, overlap_head, shift_block, stmts,
                                            store_as, store_u, word_at, word_loop)


BYTE_BITS = 8
COPY_PARAMS = "void *dest, const void *src, size_t count"
SET_PARAMS = "void *s, int c, size_t count"


def _has_shift(p: Phases, target: Target) -> bool:
    """A fast core's word loop takes a misaligned source as it is: no shift copy."""
    return bool(p.shift_unroll) and not target.fast_misaligned


def _words(n: int) -> str:
    return f"{n} word{'' if n == 1 else 's'}"


def _memcpy_doc(p: Phases, shift: bool) -> Comment:
    head = {"dst": "align dst with single\nbytes, then ",
            "overlap": "store one word at dst and round dst\nup to a word boundary, then "
            }.get(p.align, "")
    text = (f"memcpy: bytes below {p.threshold}; otherwise {head}copy {_words(p.word_unroll)}"
            f" per iteration ({p.word_schedule})")
    if shift:
        text += (",\nor, when the source is misaligned against dst, build each word from two\n"
                 f"aligned source words ({p.shift_unroll} per iteration, {p.shift_schedule})")
    text += f";\nthen the tail ({p.tail})."
    if p.expect == "aligned":
        text += "\nThe branch hints make aligned pointers the fall-through path."
    return Comment(0, tuple(text.split("\n")))


def _dst_any(p: Phases) -> bool:
    """Whether a fast core's word loops store through the accessor: dst is
    a word_t only after a head has aligned it (a misaligned word_t access
    is undefined in C, and UBSAN's alignment check reports it)."""
    return p.align not in ("dst", "overlap")


def _memcpy_fast(p: Phases) -> list[CPhase]:
    """Words at any source alignment, then the tail in words or one overlapping word."""
    dst = _dst_any(p)
    why = ("Words: the source may be misaligned; this core does that in hardware."
           if p.align != "none" else
           "Words: either pointer may be misaligned; this core does that in hardware.")
    out = [CPhase("words", (BLANK, Comment(1, (why,)),
                            *word_loop(p.word_unroll, p.word_schedule, 1, True, dst)))]
    if p.tail != "bytes":
        out.append(CPhase("word tail", tuple(one_word_loop(
            1, store_as(dst, "d", load_u("s")), "d", "s"))))
    if p.tail == "overlap":
        out.append(CPhase("overlap tail", (
            Comment(1, ("One word ending at the end; it rewrites copied bytes with equal ones.",)),
            *stmts(1, "if (count) {"),
            *stmts(2, store_u("d + count - SZREG", load_u("s + count - SZREG")),
                    "return dest;"),
            *stmts(1, "}"))))
    return out


def _shift_copy(p: Phases) -> CPhase:
    k, order = p.shift_unroll, C_ORDER[p.shift_schedule]
    why = ("Shift copy: aligned loads only.  Each destination word takes the",
           "upper bytes of prev and the lower bytes of the next source word.",
           "Every word loaded holds at least one source byte.")
    tail = p.tail == "words" and k > 1
    if tail:
        why += ("Whole words the block loop leaves go one at a time.",)
    setup = stmts(2, "unsigned int off = (uintptr_t)s & WORD_MASK;",
                   f"unsigned int shr = {BYTE_BITS} * off;",
                   f"unsigned int shl = {BYTE_BITS} * SZREG - shr;",
                   "const word_t *sw = (const word_t *)(s - off);", "word_t prev = sw[0];")
    if order == "interleave":
        setup += stmts(2, "word_t next;")
    loop = (stmts(2, f"while (count >= {k} * SZREG) {{") + stmts(3, "word_t *dw = (word_t *)d;")
            + [BLANK] + shift_block(k, p.shift_schedule, 3) + [BLANK]
            + stmts(3, f"sw += {k};", f"d += {k} * SZREG;", f"count -= {k} * SZREG;")
            + stmts(2, "}"))
    if tail:
        loop += (stmts(2, "while (count >= SZREG) {")
                 + stmts(3, "word_t next = sw[1];",
                          "*(word_t *)d = (prev >> shr) | (next << shl);", "prev = next;",
                          "sw++;", "d += SZREG;", "count -= SZREG;")
                 + stmts(2, "}"))
    loop += stmts(2, "s = (const u8 *)sw + off;")
    return CPhase("shift copy", (*stmts(1, "} else {"), Comment(2, why), *setup, BLANK, *loop,
                                 *stmts(1, "}"), BLANK))


def _memcpy_slow(p: Phases, shift: bool) -> list[CPhase]:
    """Whole words when src is co-aligned with dst, else the shift copy (if any).

    With `tail words` both branches take the whole words their block loop
    leaves one at a time (the shift copy building each from two source
    words); the byte loop takes what is left."""
    assert p.tail != "overlap", "an overlapping tail is a misaligned access"
    aligned = expect(p, "!((uintptr_t)s & WORD_MASK)", likely=True)
    out = [CPhase("words", (BLANK, *stmts(1, f"if ({aligned}) {{"),
                            Comment(2, ("Co-aligned: whole words.",)),
                            *word_loop(p.word_unroll, p.word_schedule, 2)))]
    if p.tail == "words":
        out.append(CPhase("word tail", tuple(one_word_loop(
            2, "*(word_t *)d = *(const word_t *)s;", "d", "s"))))
    return out + [_shift_copy(p)] if shift else close_block(out, 1)


def memcpy_function(lib: StringLib) -> CFunction:
    p, target = lib.memcpy, lib.target
    shift = _has_shift(p, target)
    phases = [CPhase("entry", (*stmts(1, "u8 *d = dest;", "const u8 *s = src;"), BLANK,
                               *stmts(1, f"if (count < {p.threshold})"),
                               *stmts(2, "goto copy_bytes;")))]
    if p.align == "dst":
        phases.append(CPhase("head", (BLANK, Comment(1, (
            "Head: single bytes until dst is word-aligned (count covers it).",)),
            *byte_head(1, "*d++ = *s++;", p))))
    elif p.align == "overlap":
        phases.append(overlap_head(1, store_u("d", load_u("s")), "s", "d"))
    phases += _memcpy_fast(p) if target.fast_misaligned else _memcpy_slow(p, shift)
    phases.append(CPhase("bytes", (Stmt(0, "copy_bytes:"),
                                   *byte_loop(1, "*d++ = *s++;", "return dest;"))))
    return CFunction("__memcpy", "memcpy", "void *", COPY_PARAMS, _memcpy_doc(p, shift),
                     tuple(phases))


def _memmove_doc(lib: StringLib) -> Comment:
    fwd = ", so memcpy\ndoes it" if lib.memmove.forward == "memcpy" else ""
    if lib.memmove.forward == "memcpy" and lib.memcpy_asm:
        fwd = (", so memcpy\ndoes it where the buffers are disjoint, and a word copy"
               " here where\nthey overlap")
    back = (": bytes until the end of dst is\naligned, then whole words when the source end"
            " is aligned too, then bytes" if lib.memmove.backward == "words"
            else ", one byte at a time")
    text = ("memmove: when dst does not start inside [src, src + count), copying\nforwards"
            f" never overwrites a source byte before it is read{fwd}.  Otherwise copy"
            f" backwards{back}.")
    return Comment(0, tuple(text.split("\n")))


def _forward_overlap_safe(p: Phases) -> list[Stmt | Comment]:
    """memcpy for disjoint buffers; else words then bytes, never memcpy's
    overlapping head or tail word."""
    if p.align == p.tail == "overlap":
        why = ("dst starts below src and overlaps it: memcpy's overlapping head",
               "and tail words would re-read source bytes already overwritten.",
               "Whole words forwards are safe (each is loaded before it is",
               "stored).")
    else:
        which = "head" if p.align == "overlap" else "tail"
        why = (f"dst starts below src and overlaps it: memcpy's overlapping {which}",
               "word would re-read source bytes already overwritten.  Whole",
               "words forwards are safe (each is loaded before it is stored).")
    return [*stmts(2, "if ((uintptr_t)s - (uintptr_t)d >= count)\t/* disjoint */"),
            *stmts(3, "return __memcpy(dest, src, count);"), Comment(2, why),
            *one_word_loop(2, store_u("d", load_u("s")), "d", "s"),
            *byte_loop(2, "*d++ = *s++;", "return dest;")]


def _forward_disjoint_only() -> list[Stmt | Comment]:
    """memcpy in assembly for disjoint buffers only; else bytes until dst
    is aligned, whole words when src is aligned too, then bytes."""
    why = ("dst starts below src and overlaps it: memcpy's contract is",
           "disjoint buffers (memcpy.S is proved for those), so copy",
           "forwards here, each word loaded before it is stored.")
    test = [*stmts(2, "if (likely((uintptr_t)s - (uintptr_t)d >= count))\t/* disjoint */"),
            *stmts(3, "return __memcpy(dest, src, count);"), Comment(2, why)]
    return [*test, *stmts(2, "if (count >= SZREG) {"), *byte_head(3, "*d++ = *s++;"),
            *stmts(3, "if (!((uintptr_t)s & WORD_MASK)) {"),
            *one_word_loop(4, "*(word_t *)d = *(const word_t *)s;", "d", "s"),
            *stmts(3, "}"), *stmts(2, "}"),
            *byte_loop(2, "*d++ = *s++;", "return dest;")]


def _memmove_forward(lib: StringLib) -> CPhase:
    """dst does not start inside the source: copying forwards reads each byte first."""
    if lib.memmove.forward == "bytes":
        body: list[Stmt | Comment] = byte_loop(2, "*d++ = *s++;", "return dest;")
    elif lib.memcpy_asm:
        body = _forward_disjoint_only()
    elif "overlap" in (lib.memcpy.align, lib.memcpy.tail):
        body = _forward_overlap_safe(lib.memcpy)
    else:
        body = stmts(2, "return __memcpy(dest, src, count);")
    test = "(uintptr_t)d - (uintptr_t)s >= count"
    if lib.memcpy_asm:
        # forwards into the tuned memcpy.S is the call's common path: as
        # the fall-through it costs no taken branch (the disjoint test
        # inside is hinted the same way)
        test = f"likely({test})"
    if len(body) == 1:      # one statement: no braces (kernel style)
        return CPhase("forward", (*stmts(1, f"if ({test})"), *body, BLANK))
    return CPhase("forward", (*stmts(1, f"if ({test}) {{"),
                              *body, *stmts(1, "}"), BLANK))


def _backward_words() -> CPhase:
    """From the end: bytes until the end of dst is aligned, then whole words
    while the source end is aligned too."""
    return CPhase("backward words", (
        *stmts(1, "if (count >= SZREG) {"), *byte_head(2, "*--d = *--s;"),
        *stmts(2, "if (!((uintptr_t)s & WORD_MASK)) {"), *stmts(3, "while (count >= SZREG) {"),
        *stmts(4, "d -= SZREG;", "s -= SZREG;", "*(word_t *)d = *(const word_t *)s;",
                "count -= SZREG;"),
        *stmts(3, "}"), *stmts(2, "}"), *stmts(1, "}")))


def memmove_function(lib: StringLib) -> CFunction:
    phases = [CPhase("entry", (*stmts(1, "u8 *d = dest;", "const u8 *s = src;"), BLANK)),
              _memmove_forward(lib)]
    phases.append(CPhase("ends", tuple(stmts(1, "d += count;", "s += count;"))))
    if lib.memmove.backward == "words":
        phases.append(_backward_words())
    phases.append(CPhase("backward bytes", tuple(byte_loop(1, "*--d = *--s;", "return dest;"))))
    return CFunction("__memmove", "memmove", "void *", COPY_PARAMS, _memmove_doc(lib),
                     tuple(phases))


def replicate_shifts() -> tuple[int, ...]:
    """Shifts that copy the low byte into every byte of a word: 8, 16, 32 on RV64."""
    out, s = [], BYTE_BITS
    while s < BYTE_BITS * SZREG:
        out.append(s)
        s *= 2
    return tuple(out)


def _memset_doc(p: Phases) -> Comment:
    head = {"dst": "align with single bytes, then store\n",
            "overlap": "store one word at dst and round dst\nup to a word boundary, then store "
            }.get(p.align, "store\n")
    wrap = "\n" if p.align == "overlap" else " "
    text = (f"memset: bytes below {p.threshold}; otherwise {head}{_words(p.word_unroll)}"
            f" of the replicated byte{wrap}per iteration; then the tail ({p.tail}).")
    if p.expect == "aligned" and p.align == "dst":
        text += "\nThe branch hint makes an aligned dst the fall-through path."
    return Comment(0, tuple(text.split("\n")))


def _memset_words(p: Phases, fast: bool) -> list[CPhase]:
    k = p.word_unroll
    step = f"{k} * SZREG"
    dst = _dst_any(p)
    if dst:
        stores = stmts(3, *(store_u(word_at("d", i), "w") for i in range(k)))
    else:
        stores = [*stmts(3, "word_t *dw = (word_t *)d;"), BLANK,
                  *stmts(3, *(f"dw[{i}] = w;" for i in range(k)))]
    out = [CPhase("words", (*stmts(2, f"while (count >= {step}) {{"), *stores,
                            *advance(3, step, "d"), *stmts(2, "}")))]
    if p.tail != "bytes":
        out.append(CPhase("word tail", tuple(one_word_loop(2, store_as(dst, "d", "w"), "d"))))
    if p.tail == "overlap":
        assert fast, "an overlapping tail is a misaligned access"
        out.append(CPhase("overlap tail", (
            *stmts(2, "if (count) {"),
            *stmts(3, store_u("d + count - SZREG", "w"), "return s;"), *stmts(2, "}"))))
    return out


def memset_function(lib: StringLib) -> CFunction:
    p = lib.memset
    phases = [CPhase("entry", (*stmts(1, "u8 *d = s;"), BLANK,
                               *stmts(1, f"if (count >= {p.threshold}) {{"))),
              CPhase("replicate", (*stmts(2, "word_t w = (u8)c;"), BLANK,
                                   *stmts(2, *(f"w |= w << {s};" for s in replicate_shifts()))))]
    if p.align == "dst":
        phases.append(CPhase("head", tuple(byte_head(2, "*d++ = c;", p))))
    elif p.align == "overlap":
        phases.append(overlap_head(2, store_u("d", "w"), "d"))
    phases = close_block(phases + _memset_words(p, lib.target.fast_misaligned), 1)
    phases.append(CPhase("bytes", tuple(byte_loop(1, "*d++ = c;", "return s;"))))
    return CFunction("__memset", "memset", "void *", SET_PARAMS, _memset_doc(p), tuple(phases))


def string_unit(lib: StringLib) -> CUnit:
    """string.c: the word types the target needs, then memcpy, memmove and
    memset, but for those emitted in assembly (gen.lower.lower_memcpy,
    gen.lower.lower_memset); memmove calls __memcpy wherever it is."""
    fns = ((() if lib.memcpy_asm else (memcpy_function(lib),))
           + (() if lib.memmove_asm else (memmove_function(lib),))
           + (() if lib.memset_asm else (memset_function(lib),)))
    # a fast core's word loop reads the source through the accessors; a
    # slow core never makes a misaligned access, so it has no use for them
    fast = lib.target.fast_misaligned and any("_uword(" in line for fn in fns
                                              for ph in fn.phases for line in ph.stmts)
    return CUnit((WORD_T,), fns, (UWORD_HELPERS,) if fast else ())
