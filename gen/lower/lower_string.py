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
here; a C block has two statement orders (`_C_ORDER`).
Role: decisions only, the text layout is templates/string.c.j2's.
May import gen.emission.cir, gen.front.strategy and the standard library.
"""
from __future__ import annotations

from copygen.gen.emission.cir import BLANK, CHelper, Comment, CFunction, CPhase, CTypedef, CUnit, Stmt
from copygen.gen.front.strategy import SZREG, Phases, StringLib, Target

BYTE_BITS = 8
COPY_PARAMS = "void *dest, const void *src, size_t count"
SET_PARAMS = "void *s, int c, size_t count"

# Statement order of a C block per schedule.  C names no registers, so a
# software-pipelined loop (loads carried over to the next iteration) is left
# to the compiler: `pipelined` is written loads first, like the 2021 code;
# `paired` (where increments and shifts issue beside memory ops) is the
# compiler's business too: a word block is written loads first, a shift
# block word by word.
_C_ORDER = {"loads_first": "loads_first", "interleave": "interleave",
            "pipelined": "loads_first", "paired": "interleave"}
_C_WORD_ORDER = {**_C_ORDER, "paired": "loads_first"}

WORD_T = CTypedef("word_t", "A machine word that may alias any object, as the copies below need.",
                  "unsigned long __attribute__((__may_alias__))")
# The memory operand tells the compiler which bytes the instruction reads
# or writes, so it may still keep values in registers across it and
# schedule around it; GCC 12's default tuning would split an access through
# an __aligned__(1) type into bytes even without -mstrict-align.
UWORD_HELPERS = CHelper(
    "load_uword, store_uword",
    ("A word at any alignment, which this core loads and stores in hardware.  A",
     "kernel compiles C with -mstrict-align unless it is built for such cores",
     "only (CONFIG_RISCV_EFFICIENT_UNALIGNED_ACCESS), and GCC then splits an",
     "access it cannot prove aligned into bytes: these say ld and sd themselves."),
    ("struct uword {",
     "\tu8 b[SZREG];",
     "} __attribute__((__may_alias__));",
     "",
     "static __always_inline unsigned long load_uword(const void *p)",
     "{",
     "\tunsigned long w;",
     "",
     "\tasm (\"ld %0, %1\" : \"=r\" (w) : \"m\" (*(const struct uword *)p));",
     "\treturn w;",
     "}",
     "",
     "static __always_inline void store_uword(void *p, unsigned long w)",
     "{",
     "\tasm (\"sd %1, %0\" : \"=m\" (*(struct uword *)p) : \"r\" (w));",
     "}"))


def _at(ptr: str, i: int) -> str:
    """The address of word i from ptr."""
    return f"{ptr} + {i} * SZREG" if i else ptr


def load_u(ptr: str) -> str:
    """The word at ptr, any alignment (a fast core's source)."""
    return f"load_uword({ptr})"


def store_u(ptr: str, value: str) -> str:
    """Store value at ptr, any alignment."""
    return f"store_uword({ptr}, {value});"


def _stmts(depth: int, *texts: str) -> list[Stmt]:
    return [Stmt(depth, t) for t in texts]


def _advance(depth: int, step: str, *ptrs: str) -> list[Stmt]:
    """Move the pointers and the count on by `step` bytes."""
    return _stmts(depth, *(f"{p} += {step};" for p in ptrs), f"count -= {step};")


def word_block(k: int, schedule: str, depth: int, src_any: bool = False,
               dst_any: bool = False) -> list[Stmt]:
    """k words from sw[] to dw[] (from s, to d at any alignment: through
    the accessors), in the statement order of the schedule."""
    def load(i: int) -> str:
        return load_u(_at("s", i)) if src_any else f"sw[{i}]"

    def store(i: int, value: str) -> str:
        return store_u(_at("d", i), value) if dst_any else f"dw[{i}] = {value};"
    if _C_WORD_ORDER[schedule] == "interleave":
        return _stmts(depth, *(store(i, load(i)) for i in range(k)))
    return [*_stmts(depth, *(f"word_t w{i} = {load(i)};" for i in range(k))), BLANK,
            *_stmts(depth, *(store(i, f"w{i}") for i in range(k)))]


def shift_block(k: int, schedule: str, depth: int) -> list[Stmt]:
    """k destination words, each from the upper bytes of the source word
    before it (prev) and the lower bytes of the next; prev carries over."""
    def make(i: int, lo: str, hi: str) -> str:
        return f"dw[{i}] = ({lo} >> shr) | ({hi} << shl);"
    if _C_ORDER[schedule] == "interleave":
        out: list[Stmt] = []
        for i in range(k):
            out += _stmts(depth, f"next = sw[{i + 1}];", make(i, "prev", "next"), "prev = next;")
        return out
    loads = [f"word_t n{i} = sw[{i + 1}];" for i in range(k)]
    stores = [make(i, "prev" if i == 0 else f"n{i - 1}", f"n{i}") for i in range(k)]
    return [*_stmts(depth, *loads), BLANK, *_stmts(depth, *stores, f"prev = n{k - 1};")]


def _word_loop(k: int, schedule: str, depth: int, src_any: bool = False,
               dst_any: bool = False) -> list[Stmt]:
    """Blocks of k words while at least k words remain; a pointer that may
    be misaligned (`*_any`) goes through the accessors."""
    step = f"{k} * SZREG"
    decls = ([] if dst_any else ["word_t *dw = (word_t *)d;"]) \
        + ([] if src_any else ["const word_t *sw = (const word_t *)s;"])
    return (_stmts(depth, f"while (count >= {step}) {{")
            + _stmts(depth + 1, *decls)
            + [BLANK] * bool(decls) + word_block(k, schedule, depth + 1, src_any, dst_any)
            + [BLANK]
            + _advance(depth + 1, step, "d", "s") + _stmts(depth, "}"))


def _one_word_loop(depth: int, store: str, *ptrs: str) -> list[Stmt]:
    """Whole words one at a time: `store` copies (or fills) the word at d."""
    return (_stmts(depth, "while (count >= SZREG) {") + _stmts(depth + 1, store)
            + _advance(depth + 1, "SZREG", *ptrs) + _stmts(depth, "}"))


def _head(depth: int, store: str, p: Phases | None = None) -> list[Stmt]:
    """Single bytes until dst is word-aligned (`expect aligned`: rarely any)."""
    test = "(uintptr_t)d & WORD_MASK"
    test = _expect(p, test, likely=False) if p else test
    return _stmts(depth, f"while ({test}) {{") + _stmts(
        depth + 1, store, "count--;") + _stmts(depth, "}")


def _expect(p: Phases, cond: str, likely: bool) -> str:
    """`cond`, wrapped in likely() or unlikely() when the strategy says
    which way the alignment tests go (`expect aligned`)."""
    if p.expect == "none":
        return cond
    return f"{'likely' if likely else 'unlikely'}({cond})"


def _byte_loop(depth: int, store: str, ret: str) -> list[Stmt]:
    return _stmts(depth, "while (count--)") + _stmts(depth + 1, store) + _stmts(depth, ret)


def _close(phases: list[CPhase], depth: int) -> list[CPhase]:
    """End the block the phases run in: its `}` goes with the last of them."""
    last = phases[-1]
    return phases[:-1] + [CPhase(last.title, last.body + (Stmt(depth, "}"),))]


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


def _store_as(any_alignment: bool, ptr: str, value: str) -> str:
    """Store a word at ptr: through the accessor where ptr may be
    misaligned, else as a word_t."""
    return store_u(ptr, value) if any_alignment else f"*(word_t *){ptr} = {value};"


def _overlap_head(depth: int, store: str, *ptrs: str) -> CPhase:
    """One word at dst as it is, then dst rounded up to a word boundary
    (a whole word on when it was aligned): no loop, no branch."""
    step = "SZREG - ((uintptr_t)d & WORD_MASK)"
    return CPhase("head", (BLANK, Comment(depth, (
        "Head: one word at dst, at any alignment, then dst up to the next word",
        "boundary; the words below store some of its bytes again, equal.")),
        *_stmts(depth, store, f"count -= {step};"),
        *_stmts(depth, *(f"{ptr} += {step};" for ptr in ptrs))))


def _memcpy_fast(p: Phases) -> list[CPhase]:
    """Words at any source alignment, then the tail in words or one overlapping word."""
    dst = _dst_any(p)
    why = ("Words: the source may be misaligned; this core does that in hardware."
           if p.align != "none" else
           "Words: either pointer may be misaligned; this core does that in hardware.")
    out = [CPhase("words", (BLANK, Comment(1, (why,)),
                            *_word_loop(p.word_unroll, p.word_schedule, 1, True, dst)))]
    if p.tail != "bytes":
        out.append(CPhase("word tail", tuple(_one_word_loop(
            1, _store_as(dst, "d", load_u("s")), "d", "s"))))
    if p.tail == "overlap":
        out.append(CPhase("overlap tail", (
            Comment(1, ("One word ending at the end; it rewrites copied bytes with equal ones.",)),
            *_stmts(1, "if (count) {"),
            *_stmts(2, store_u("d + count - SZREG", load_u("s + count - SZREG")),
                    "return dest;"),
            *_stmts(1, "}"))))
    return out


def _shift_copy(p: Phases) -> CPhase:
    k, order = p.shift_unroll, _C_ORDER[p.shift_schedule]
    why = ("Shift copy: aligned loads only.  Each destination word takes the",
           "upper bytes of prev and the lower bytes of the next source word.",
           "Every word loaded holds at least one source byte.")
    tail = p.tail == "words" and k > 1
    if tail:
        why += ("Whole words the block loop leaves go one at a time.",)
    setup = _stmts(2, "unsigned int off = (uintptr_t)s & WORD_MASK;",
                   f"unsigned int shr = {BYTE_BITS} * off;",
                   f"unsigned int shl = {BYTE_BITS} * SZREG - shr;",
                   "const word_t *sw = (const word_t *)(s - off);", "word_t prev = sw[0];")
    if order == "interleave":
        setup += _stmts(2, "word_t next;")
    loop = (_stmts(2, f"while (count >= {k} * SZREG) {{") + _stmts(3, "word_t *dw = (word_t *)d;")
            + [BLANK] + shift_block(k, p.shift_schedule, 3) + [BLANK]
            + _stmts(3, f"sw += {k};", f"d += {k} * SZREG;", f"count -= {k} * SZREG;")
            + _stmts(2, "}"))
    if tail:
        loop += (_stmts(2, "while (count >= SZREG) {")
                 + _stmts(3, "word_t next = sw[1];",
                          "*(word_t *)d = (prev >> shr) | (next << shl);", "prev = next;",
                          "sw++;", "d += SZREG;", "count -= SZREG;")
                 + _stmts(2, "}"))
    loop += _stmts(2, "s = (const u8 *)sw + off;")
    return CPhase("shift copy", (*_stmts(1, "} else {"), Comment(2, why), *setup, BLANK, *loop,
                                 *_stmts(1, "}"), BLANK))


def _memcpy_slow(p: Phases, shift: bool) -> list[CPhase]:
    """Whole words when src is co-aligned with dst, else the shift copy (if any).

    With `tail words` both branches take the whole words their block loop
    leaves one at a time (the shift copy building each from two source
    words); the byte loop takes what is left."""
    assert p.tail != "overlap", "an overlapping tail is a misaligned access"
    aligned = _expect(p, "!((uintptr_t)s & WORD_MASK)", likely=True)
    out = [CPhase("words", (BLANK, *_stmts(1, f"if ({aligned}) {{"),
                            Comment(2, ("Co-aligned: whole words.",)),
                            *_word_loop(p.word_unroll, p.word_schedule, 2)))]
    if p.tail == "words":
        out.append(CPhase("word tail", tuple(_one_word_loop(
            2, "*(word_t *)d = *(const word_t *)s;", "d", "s"))))
    return out + [_shift_copy(p)] if shift else _close(out, 1)


def memcpy_function(lib: StringLib) -> CFunction:
    p, target = lib.memcpy, lib.target
    shift = _has_shift(p, target)
    phases = [CPhase("entry", (*_stmts(1, "u8 *d = dest;", "const u8 *s = src;"), BLANK,
                               *_stmts(1, f"if (count < {p.threshold})"),
                               *_stmts(2, "goto copy_bytes;")))]
    if p.align == "dst":
        phases.append(CPhase("head", (BLANK, Comment(1, (
            "Head: single bytes until dst is word-aligned (count covers it).",)),
            *_head(1, "*d++ = *s++;", p))))
    elif p.align == "overlap":
        phases.append(_overlap_head(1, store_u("d", load_u("s")), "s", "d"))
    phases += _memcpy_fast(p) if target.fast_misaligned else _memcpy_slow(p, shift)
    phases.append(CPhase("bytes", (Stmt(0, "copy_bytes:"),
                                   *_byte_loop(1, "*d++ = *s++;", "return dest;"))))
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
    return [*_stmts(2, "if ((uintptr_t)s - (uintptr_t)d >= count)\t/* disjoint */"),
            *_stmts(3, "return __memcpy(dest, src, count);"), Comment(2, why),
            *_one_word_loop(2, store_u("d", load_u("s")), "d", "s"),
            *_byte_loop(2, "*d++ = *s++;", "return dest;")]


def _forward_disjoint_only() -> list[Stmt | Comment]:
    """memcpy in assembly for disjoint buffers only; else bytes until dst
    is aligned, whole words when src is aligned too, then bytes."""
    why = ("dst starts below src and overlaps it: memcpy's contract is",
           "disjoint buffers (memcpy.S is proved for those), so copy",
           "forwards here, each word loaded before it is stored.")
    test = [*_stmts(2, "if (likely((uintptr_t)s - (uintptr_t)d >= count))\t/* disjoint */"),
            *_stmts(3, "return __memcpy(dest, src, count);"), Comment(2, why)]
    return [*test, *_stmts(2, "if (count >= SZREG) {"), *_head(3, "*d++ = *s++;"),
            *_stmts(3, "if (!((uintptr_t)s & WORD_MASK)) {"),
            *_one_word_loop(4, "*(word_t *)d = *(const word_t *)s;", "d", "s"),
            *_stmts(3, "}"), *_stmts(2, "}"),
            *_byte_loop(2, "*d++ = *s++;", "return dest;")]


def _memmove_forward(lib: StringLib) -> CPhase:
    """dst does not start inside the source: copying forwards reads each byte first."""
    if lib.memmove.forward == "bytes":
        body: list[Stmt | Comment] = _byte_loop(2, "*d++ = *s++;", "return dest;")
    elif lib.memcpy_asm:
        body = _forward_disjoint_only()
    elif "overlap" in (lib.memcpy.align, lib.memcpy.tail):
        body = _forward_overlap_safe(lib.memcpy)
    else:
        body = _stmts(2, "return __memcpy(dest, src, count);")
    test = "(uintptr_t)d - (uintptr_t)s >= count"
    if lib.memcpy_asm:
        # forwards into the tuned memcpy.S is the call's common path: as
        # the fall-through it costs no taken branch (the disjoint test
        # inside is hinted the same way)
        test = f"likely({test})"
    if len(body) == 1:      # one statement: no braces (kernel style)
        return CPhase("forward", (*_stmts(1, f"if ({test})"), *body, BLANK))
    return CPhase("forward", (*_stmts(1, f"if ({test}) {{"),
                              *body, *_stmts(1, "}"), BLANK))


def _backward_words() -> CPhase:
    """From the end: bytes until the end of dst is aligned, then whole words
    while the source end is aligned too."""
    return CPhase("backward words", (
        *_stmts(1, "if (count >= SZREG) {"), *_head(2, "*--d = *--s;"),
        *_stmts(2, "if (!((uintptr_t)s & WORD_MASK)) {"), *_stmts(3, "while (count >= SZREG) {"),
        *_stmts(4, "d -= SZREG;", "s -= SZREG;", "*(word_t *)d = *(const word_t *)s;",
                "count -= SZREG;"),
        *_stmts(3, "}"), *_stmts(2, "}"), *_stmts(1, "}")))


def memmove_function(lib: StringLib) -> CFunction:
    phases = [CPhase("entry", (*_stmts(1, "u8 *d = dest;", "const u8 *s = src;"), BLANK)),
              _memmove_forward(lib)]
    phases.append(CPhase("ends", tuple(_stmts(1, "d += count;", "s += count;"))))
    if lib.memmove.backward == "words":
        phases.append(_backward_words())
    phases.append(CPhase("backward bytes", tuple(_byte_loop(1, "*--d = *--s;", "return dest;"))))
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
        stores = _stmts(3, *(store_u(_at("d", i), "w") for i in range(k)))
    else:
        stores = [*_stmts(3, "word_t *dw = (word_t *)d;"), BLANK,
                  *_stmts(3, *(f"dw[{i}] = w;" for i in range(k)))]
    out = [CPhase("words", (*_stmts(2, f"while (count >= {step}) {{"), *stores,
                            *_advance(3, step, "d"), *_stmts(2, "}")))]
    if p.tail != "bytes":
        out.append(CPhase("word tail", tuple(_one_word_loop(2, _store_as(dst, "d", "w"), "d"))))
    if p.tail == "overlap":
        assert fast, "an overlapping tail is a misaligned access"
        out.append(CPhase("overlap tail", (
            *_stmts(2, "if (count) {"),
            *_stmts(3, store_u("d + count - SZREG", "w"), "return s;"), *_stmts(2, "}"))))
    return out


def memset_function(lib: StringLib) -> CFunction:
    p = lib.memset
    phases = [CPhase("entry", (*_stmts(1, "u8 *d = s;"), BLANK,
                               *_stmts(1, f"if (count >= {p.threshold}) {{"))),
              CPhase("replicate", (*_stmts(2, "word_t w = (u8)c;"), BLANK,
                                   *_stmts(2, *(f"w |= w << {s};" for s in replicate_shifts()))))]
    if p.align == "dst":
        phases.append(CPhase("head", tuple(_head(2, "*d++ = c;", p))))
    elif p.align == "overlap":
        phases.append(_overlap_head(2, store_u("d", "w"), "d"))
    phases = _close(phases + _memset_words(p, lib.target.fast_misaligned), 1)
    phases.append(CPhase("bytes", tuple(_byte_loop(1, "*d++ = c;", "return s;"))))
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
