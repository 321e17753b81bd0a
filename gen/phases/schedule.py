"""Instruction scheduling of one unrolled block: which load, store and shift
goes where (docs/strategies.md, "Schedules").

Schedules
  loads_first  all loads of the block, then all stores (the 2021 routine);
               blocks wider than the register pool are split into groups
  interleave   load/store pairs, one word at a time
  pipelined    software pipelining: the block's words were loaded one
               iteration earlier; each store is followed by the load of the
               same word of the next block, and the pointer increments are
               hoisted to where they issue beside memory operations
  paired       (shift copy) the steps of neighbouring words interleaved so
               that every load and store sits beside a shift or an `or`: on
               a dual-issue core with one memory pipe each word then costs
               its two memory slots plus half a slot, within one block;
               (word copy) loads first, with the dst increment after the
               first load and the src increment after the last, so both
               issue beside a load and the loop branch beside the last
               store: a block costs its memory slots and nothing more

A block is returned as `Block(prologue, body, epilogue, lookahead)`: body is
the loop body without its branch; `lookahead` is how many blocks past the
current one the body reads (1 for pipelined), which sets the loop bound.
Stores always happen in ascending address order, so "bytes stored so far" is
a prefix and the fault return can be exact (gen.lower.lower_uaccess relies on it).

Role: pure functions from (unroll, schedule, registers) to Steps.
May import gen.front.strategy and the standard library.
"""
from __future__ import annotations

from dataclasses import dataclass

from copygen.gen.front.strategy import SZREG

DST, SRC = "a0", "a1"


@dataclass(frozen=True)
class Step:
    """One instruction of a block before fixups are attached.

    kind: load | store | alu | adv_dst | adv_src
    For loads and stores `operands` is (reg, "off(base)"); `offset` is the
    displacement from the base register.
    """

    kind: str
    op: str
    operands: tuple[str, ...]
    offset: int = 0


@dataclass(frozen=True)
class Block:
    prologue: tuple[Step, ...]
    body: tuple[Step, ...]
    epilogue: tuple[Step, ...]
    lookahead: int = 0


def units(n: int) -> str:
    """A byte count as the kernel writes it: in SZREG units where it divides."""
    if n == 0 or n % SZREG:
        return str(n)
    k = n // SZREG
    return "SZREG" if k == 1 else "-SZREG" if k == -1 else f"{k}*SZREG"


def load(reg: str, off: int, base: str = SRC) -> Step:
    return Step("load", "REG_L", (reg, f"{units(off)}({base})"), off)


def store(reg: str, off: int, base: str = DST) -> Step:
    return Step("store", "REG_S", (reg, f"{units(off)}({base})"), off)


def alu(op: str, *operands: str) -> Step:
    return Step("alu", op, operands)


def adv_dst(n: int) -> Step:
    return Step("adv_dst", "addi", (DST, DST, units(n)), n)


def adv_src(n: int, base: str = SRC) -> Step:
    return Step("adv_src", "addi", (base, base, units(n)), n)


def _groups(n: int, size: int) -> list[range]:
    return [range(i, min(i + size, n)) for i in range(0, n, size)]


# ---------------------------------------------------------------- word copy

def word_copy(unroll: int, schedule: str, pool: tuple[str, ...]) -> Block:
    """Co-aligned copy of `unroll` words per block."""
    size = unroll * SZREG
    if schedule == "loads_first":
        body: list[Step] = []
        for grp in _groups(unroll, len(pool)):
            body += [load(pool[i - grp.start], i * SZREG) for i in grp]
            body += [store(pool[i - grp.start], i * SZREG) for i in grp]
        return Block((), tuple(body + [adv_dst(size), adv_src(size)]), ())
    if schedule == "paired":
        return Block((), tuple(_words_paired(unroll, pool)), ())
    if schedule == "interleave":
        body = []
        for i in range(unroll):
            reg = pool[i % 2]
            body += [load(reg, i * SZREG), store(reg, i * SZREG)]
        return Block((), tuple(body + [adv_dst(size), adv_src(size)]), ())
    assert schedule == "pipelined", schedule
    assert unroll <= len(pool), "validate keeps pipelined blocks in registers"
    prologue = [load(pool[i], i * SZREG) for i in range(unroll)] + [adv_src(size)]
    body = [adv_dst(size)]
    for i in range(unroll):
        body += [store(pool[i], i * SZREG - size), load(pool[i], i * SZREG)]
    body.append(adv_src(size))
    epilogue = [store(pool[i], i * SZREG) for i in range(unroll)] + [adv_dst(size)]
    return Block(tuple(prologue), tuple(body), tuple(epilogue), lookahead=1)


def _words_paired(unroll: int, pool: tuple[str, ...]) -> list[Step]:
    """loads_first with the increments moved up: a0 moves on after the
    block's first load (so every store is addressed back from the new a0,
    one cycle after the increment), a1 after the block's last load."""
    size = unroll * SZREG
    groups = _groups(unroll, len(pool))
    body: list[Step] = []
    for g, grp in enumerate(groups):
        for i in grp:
            body.append(load(pool[i - grp.start], i * SZREG))
            if i == 0:
                body.append(adv_dst(size))
        if g == len(groups) - 1:
            body.append(adv_src(size))
        body += [store(pool[i - grp.start], i * SZREG - size) for i in grp]
    return body


# ---------------------------------------------------------------- shift copy
# Registers: prev holds the aligned source word whose upper bytes start the
# next destination word; shr = 8 * (src & 7); shl = 64 - shr (taken mod 64 by
# sll, so `neg` computes it).  out = (prev >> shr) | (next << shl).

def _combine(prev: str, nxt: str, tmp: str, out_off: int, shr: str, shl: str,
             keep_prev: bool = False, tmp2: str | None = None) -> list[Step]:
    """Build one destination word from prev and next and store it."""
    if keep_prev:
        assert tmp2 is not None
        return [alu("srl", tmp, prev, shr), alu("sll", tmp2, nxt, shl),
                alu("or", tmp, tmp, tmp2), store(tmp, out_off)]
    return [alu("srl", prev, prev, shr), alu("sll", tmp, nxt, shl),
            alu("or", tmp, tmp, prev), store(tmp, out_off)]


def shift_copy(unroll: int, schedule: str, prev: str, shr: str, shl: str,
               pool: tuple[str, ...]) -> Block:
    """Misaligned-source copy from aligned loads (`SRC` points at prev's word)."""
    size = unroll * SZREG
    tmp, regs = pool[-1], pool[:-1]
    if schedule == "interleave":
        # shift prev out of the way first, so the next word can be loaded
        # straight into prev's register: no `mv` in the loop
        body: list[Step] = []
        for i in range(unroll):
            body += [alu("srl", tmp, prev, shr), load(prev, (i + 1) * SZREG),
                     alu("sll", regs[0], prev, shl), alu("or", tmp, tmp, regs[0]),
                     store(tmp, i * SZREG)]
        return Block((), tuple(body + [adv_dst(size), adv_src(size)]), ())
    if schedule == "paired":
        return Block((), tuple(_paired(unroll, prev, shr, shl, pool) +
                               [adv_dst(size), adv_src(size)]), ())
    if schedule == "loads_first":
        body = []
        for grp in _groups(unroll, len(regs)):
            names = [regs[i - grp.start] for i in grp]
            body += [load(names[j], (i + 1) * SZREG) for j, i in enumerate(grp)]
            p = prev
            for j, i in enumerate(grp):
                body += _combine(p, names[j], tmp, i * SZREG, shr, shl)
                p = names[j]
            body.append(alu("mv", prev, names[-1]))
        return Block((), tuple(body + [adv_dst(size), adv_src(size)]), ())
    assert schedule == "pipelined", schedule
    tmp2, regs = regs[-1], regs[:-1]
    assert unroll <= len(regs), "validate keeps pipelined blocks in registers"
    prologue = [load(regs[i], (i + 1) * SZREG) for i in range(unroll)] + [adv_src(size)]
    body = [adv_dst(size)]
    for i in range(unroll):
        p = prev if i == 0 else regs[i - 1]
        body += _combine(p, regs[i], tmp, i * SZREG - size, shr, shl, True, tmp2)
        if i:
            body.append(load(regs[i - 1], i * SZREG))
    body += [alu("mv", prev, regs[unroll - 1]), load(regs[unroll - 1], unroll * SZREG),
             adv_src(size)]
    epilogue = []
    for i in range(unroll):
        p = prev if i == 0 else regs[i - 1]
        epilogue += _combine(p, regs[i], tmp, i * SZREG, shr, shl, True, tmp2)
    # SRC already points at the last loaded word: the source cursor is right.
    epilogue.append(adv_dst(size))
    return Block(tuple(prologue), tuple(body), tuple(epilogue), lookahead=1)


def _paired(unroll: int, prev: str, shr: str, shl: str, pool: tuple[str, ...]) -> list[Step]:
    """Word i: load next, shift prev right, shift next left, store word
    i-1, or: no two neighbours depend on each other, so they pair.  The
    source words alternate between prev's register and pool[0], so the
    block ends with prev holding its last word (one `mv` for odd unroll);
    the built words alternate between pool[1] and pool[2]; pool[3] is the
    left-shifted half."""
    nxt, outs, half = (pool[0], prev), (pool[1], pool[2]), pool[3]
    body: list[Step] = []
    for i in range(unroll):
        src, word, out = (prev if i == 0 else nxt[(i - 1) % 2]), nxt[i % 2], outs[i % 2]
        body += [load(word, (i + 1) * SZREG), alu("srl", out, src, shr),
                 alu("sll", half, word, shl)]
        if i:
            body.append(store(outs[(i - 1) % 2], (i - 1) * SZREG))
        body.append(alu("or", out, out, half))
    body.append(store(outs[(unroll - 1) % 2], (unroll - 1) * SZREG))
    if unroll % 2:
        body.append(alu("mv", prev, nxt[0]))
    return body


# ---------------------------------------------------------------- fill

def fill_words(unroll: int) -> Block:
    """Store zero words (clear_user): no loads, so no schedule to choose."""
    size = unroll * SZREG
    body = [store("zero", i * SZREG) for i in range(unroll)]
    return Block((), tuple(body + [adv_dst(size)]), ())


def pipelined_limits(keep: tuple[str, ...] = ()) -> dict[str, int]:
    """How many words a pipelined block may hold (registers it keeps live)."""
    return {"words": len(word_pool(keep)), "shift": len(shift_pool(keep)) - 2}


def word_pool(keep: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The registers a word block may load into, less those in `keep`."""
    return tuple(r for r in WORD_POOL if r not in keep)


def shift_pool(keep: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The registers a shift block may use, less those in `keep`."""
    return tuple(r for r in SHIFT_POOL if r not in keep)


WORD_POOL = ("a4", "a5", "a6", "a7", "t0", "t1", "t2", "t3", "t4", "t5", "t6")
SHIFT_POOL = ("a7", "t0", "t1", "t2", "t3", "t4", "t5", "t6")
