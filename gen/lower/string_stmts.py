"""The C statements string.c's functions are built of (gen.lower.lower_string):
the word type and the accessors of a word at any alignment, blocks of
word and shift-copy statements in a schedule's order, the loops around
them, byte heads and byte loops, the overlapping one-word head, and the
branch hints of `expect aligned`.

Every builder returns cir statements at a given depth; which of them a
function uses, and where, is lower_string's decision.
May import gen.emission.cir, gen.front.strategy and the standard library.
"""
from __future__ import annotations

from copygen.gen.emission.cir import BLANK, CHelper, Comment, CPhase, CTypedef, Stmt
from copygen.gen.front.strategy import Phases


# Statement order of a C block per schedule.  C names no registers, so a
# software-pipelined loop (loads carried over to the next iteration) is left
# to the compiler: `pipelined` is written loads first, like the 2021 code;
# `paired` (where increments and shifts issue beside memory ops) is the
# compiler's business too: a word block is written loads first, a shift
# block word by word.
C_ORDER = {"loads_first": "loads_first", "interleave": "interleave",
            "pipelined": "loads_first", "paired": "interleave"}
C_WORD_ORDER = {**C_ORDER, "paired": "loads_first"}


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


def word_at(ptr: str, i: int) -> str:
    """The address of word i from ptr."""
    return f"{ptr} + {i} * SZREG" if i else ptr


def load_u(ptr: str) -> str:
    """The word at ptr, any alignment (a fast core's source)."""
    return f"load_uword({ptr})"


def store_u(ptr: str, value: str) -> str:
    """Store value at ptr, any alignment."""
    return f"store_uword({ptr}, {value});"


def stmts(depth: int, *texts: str) -> list[Stmt]:
    return [Stmt(depth, t) for t in texts]


def advance(depth: int, step: str, *ptrs: str) -> list[Stmt]:
    """Move the pointers and the count on by `step` bytes."""
    return stmts(depth, *(f"{p} += {step};" for p in ptrs), f"count -= {step};")


def word_block(k: int, schedule: str, depth: int, src_any: bool = False,
               dst_any: bool = False) -> list[Stmt]:
    """k words from sw[] to dw[] (from s, to d at any alignment: through
    the accessors), in the statement order of the schedule."""
    def load(i: int) -> str:
        return load_u(word_at("s", i)) if src_any else f"sw[{i}]"

    def store(i: int, value: str) -> str:
        return store_u(word_at("d", i), value) if dst_any else f"dw[{i}] = {value};"
    if C_WORD_ORDER[schedule] == "interleave":
        return stmts(depth, *(store(i, load(i)) for i in range(k)))
    return [*stmts(depth, *(f"word_t w{i} = {load(i)};" for i in range(k))), BLANK,
            *stmts(depth, *(store(i, f"w{i}") for i in range(k)))]


def shift_block(k: int, schedule: str, depth: int) -> list[Stmt]:
    """k destination words, each from the upper bytes of the source word
    before it (prev) and the lower bytes of the next; prev carries over."""
    def make(i: int, lo: str, hi: str) -> str:
        return f"dw[{i}] = ({lo} >> shr) | ({hi} << shl);"
    if C_ORDER[schedule] == "interleave":
        out: list[Stmt] = []
        for i in range(k):
            out += stmts(depth, f"next = sw[{i + 1}];", make(i, "prev", "next"), "prev = next;")
        return out
    loads = [f"word_t n{i} = sw[{i + 1}];" for i in range(k)]
    stores = [make(i, "prev" if i == 0 else f"n{i - 1}", f"n{i}") for i in range(k)]
    return [*stmts(depth, *loads), BLANK, *stmts(depth, *stores, f"prev = n{k - 1};")]


def word_loop(k: int, schedule: str, depth: int, src_any: bool = False,
               dst_any: bool = False) -> list[Stmt]:
    """Blocks of k words while at least k words remain; a pointer that may
    be misaligned (`*_any`) goes through the accessors."""
    step = f"{k} * SZREG"
    decls = ([] if dst_any else ["word_t *dw = (word_t *)d;"]) \
        + ([] if src_any else ["const word_t *sw = (const word_t *)s;"])
    return (stmts(depth, f"while (count >= {step}) {{")
            + stmts(depth + 1, *decls)
            + [BLANK] * bool(decls) + word_block(k, schedule, depth + 1, src_any, dst_any)
            + [BLANK]
            + advance(depth + 1, step, "d", "s") + stmts(depth, "}"))


def one_word_loop(depth: int, store: str, *ptrs: str) -> list[Stmt]:
    """Whole words one at a time: `store` copies (or fills) the word at d."""
    return (stmts(depth, "while (count >= SZREG) {") + stmts(depth + 1, store)
            + advance(depth + 1, "SZREG", *ptrs) + stmts(depth, "}"))


def byte_head(depth: int, store: str, p: Phases | None = None) -> list[Stmt]:
    """Single bytes until dst is word-aligned (`expect aligned`: rarely any)."""
    test = "(uintptr_t)d & WORD_MASK"
    test = expect(p, test, likely=False) if p else test
    return stmts(depth, f"while ({test}) {{") + stmts(
        depth + 1, store, "count--;") + stmts(depth, "}")


def expect(p: Phases, cond: str, likely: bool) -> str:
    """`cond`, wrapped in likely() or unlikely() when the strategy says
    which way the alignment tests go (`expect aligned`)."""
    if p.expect == "none":
        return cond
    return f"{'likely' if likely else 'unlikely'}({cond})"


def byte_loop(depth: int, store: str, ret: str) -> list[Stmt]:
    return stmts(depth, "while (count--)") + stmts(depth + 1, store) + stmts(depth, ret)


def close_block(phases: list[CPhase], depth: int) -> list[CPhase]:
    """End the block the phases run in: its `}` goes with the last of them."""
    last = phases[-1]
    return phases[:-1] + [CPhase(last.title, last.body + (Stmt(depth, "}"),))]


def store_as(any_alignment: bool, ptr: str, value: str) -> str:
    """Store a word at ptr: through the accessor where ptr may be
    misaligned, else as a word_t."""
    return store_u(ptr, value) if any_alignment else f"*(word_t *){ptr} = {value};"


def overlap_head(depth: int, store: str, *ptrs: str) -> CPhase:
    """One word at dst as it is, then dst rounded up to a word boundary
    (a whole word on when it was aligned): no loop, no branch."""
    step = "SZREG - ((uintptr_t)d & WORD_MASK)"
    return CPhase("head", (BLANK, Comment(depth, (
        "Head: one word at dst, at any alignment, then dst up to the next word",
        "boundary; the words below store some of its bytes again, equal.")),
        *stmts(depth, store, f"count -= {step};"),
        *stmts(depth, *(f"{ptr} += {step};" for ptr in ptrs))))
