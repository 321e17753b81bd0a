"""The shift copy of a user-access routine: its entry, its first loop (in
line, or out of line behind a size test), the second class and the tail
steps or one-word loop after it.

It loads only aligned source words and builds each destination word from
two neighbours (gen.phases.schedule.shift_copy), with the register contract and
fault exits of gen.phases.uaccess_phases.

Role: phase builders for the shift copy.  May import gen.emission.ir, gen.phases.schedule,
gen.phases.fixups, gen.front.strategy, gen.phases.uaccess_phases.
"""
from __future__ import annotations

from copygen.gen.phases import schedule as S
from copygen.gen.phases.fixups import FaultExits
from copygen.gen.emission.ir import Insn, Label, Phase
from copygen.gen.phases.schedule import units
from copygen.gen.front.strategy import Phases
from copygen.gen.phases.uaccess_phases import (ALIGN_MASK, END, LIMIT, block_regs, block_temps, retries,
                                        block_loop, shift_tail, steps, words)


def _shift_block(unroll: int, schedule: str, carry: bool, keep: tuple[str, ...] = ()) -> S.Block:
    """One shift loop's block; `carry`: a later loop goes on from prev, so a
    pipelined epilogue leaves the last word it loaded in prev."""
    block = S.shift_copy(unroll, schedule, "a6", "a4", "a5", S.shift_pool(keep))
    if carry and block.lookahead:
        last = [st for st in block.prologue if st.kind == "load"][-1].operands[0]
        block = S.Block(block.prologue, block.body,
                        block.epilogue + (S.alu("mv", "a6", last),), block.lookahead)
    return block


def _prev_read_after(ph: Phases) -> bool:
    """Does code after the last shift loop read prev (a6)?  The word tail
    goes on from it, and `ends pieces` builds the last bytes from it."""
    return shift_tail(ph) or ph.ends == "pieces"


def _first_shift_block(ph: Phases) -> S.Block:
    return _shift_block(ph.shift_unroll, ph.shift_schedule,
                        bool(ph.then_shift_unroll) or _prev_read_after(ph), ph.keep)


def shift_blocks_phase(pfx: str, ph: Phases, exits: FaultExits) -> Phase:
    """The first shift loop of a class layout, entered with a whole block left."""
    block = _first_shift_block(ph)
    body = block_loop(pfx, "shift_blocks", block, exits, ph.fault, True, retries(ph), True,
                      ready=ph.shift_block)
    body += [Insn("bne", ("a0", END, f".L{pfx}_shift_then"),
                  note="the rest: second class (backward: taken)"),
             Insn("j", (f".L{pfx}_done",))]
    return Phase(f".L{pfx}_shift_blocks", "Shift copy, first class",
                 (f"{words(ph.shift_unroll)} per iteration, schedule {ph.shift_schedule}.",),
                 (), (), tuple(body))


def shift_phase(pfx: str, ph: Phases, exits: FaultExits, out_of_line: bool = False,
                restore: bool = True, inline_done: str | None = None) -> Phase:
    """The shift copy.  `out_of_line` (class layout): a call with a whole
    first block left branches to `shift_blocks`; with `inline_done` that
    loop is in line instead, a shorter call branches past it, and a call it
    finishes leaves for `inline_done`."""
    block = _first_shift_block(ph)
    size = ph.shift_block
    body = _shift_body(pfx, ph, exits, block, out_of_line, restore, inline_done)
    regs = [("a2", f"loop limit: end - {size * (1 + block.lookahead)}"),
            ("a4", "shr = 8 * (src & 7)"), ("a5", "shl = 64 - shr"),
            ("a6", "prev: the aligned source word being consumed"),
            ("a1", "address of prev")]
    regs += [(r, "next source word") for r in block_regs(block) if r != "a6"]
    regs += [(r, "part of the destination word being built") for r in block_temps(block)]
    return Phase(f".L{pfx}_shift", "Shift copy",
                 ("The source is misaligned against the destination.  Load only aligned",
                  "source words and build each destination word from two neighbours;",
                  "this never makes a misaligned access and only reads aligned words",
                  "that hold at least one byte of the source, so it cannot fault where",
                  f"a byte copy would not.  {words(ph.shift_unroll)} per iteration,"
                  f" schedule {ph.shift_schedule}.") + _shift_classes(ph, inline_done),
                 shift_pseudo(ph.shift_unroll, size, block.lookahead),
                 tuple(regs), tuple(body))


def shift_pseudo(unroll: int, size: int, lookahead: int) -> tuple[str, ...]:
    """The C sketch of the first shift loop: `unroll` words a block, each
    built from two aligned source words, with the bound block_loop gives it."""
    word = ("next = *(u64 *)((src & ~7) + 8);",
            "*(u64 *)dst = (prev >> shr) | (next << shl);",
            "prev = next; dst += 8; src += 8;")
    span = size * (1 + lookahead)
    head = ["prev = *(u64 *)(src & ~7);", f"while (end - dst >= {span}) {{"]
    if unroll == 1:
        return tuple(head + ["\t" + w for w in word] + ["}"])
    loads = ["(the loads run one block ahead of the stores)"] if lookahead else []
    return tuple(head + ["\t" + ln for ln in loads] + [f"\tfor (i = 0; i < {unroll}; i++) {{"]
                 + ["\t\t" + w for w in word] + ["\t}", "}"])


def _shift_body(pfx: str, ph: Phases, exits: FaultExits, block, out_of_line: bool,
                restore: bool, inline_done: str | None) -> list:
    """The shift copy's instructions: set-up, the first loop where the
    layout puts it, the second class, the words left, and src moved back
    to the first byte not copied when `restore`."""
    size = ph.shift_block
    setup = [Insn("andi", ("a4", "a1", "SZREG-1"), note="off = src & (SZREG - 1)"),
             Insn("slli", ("a4", "a4", "3"), note="shr = 8 * off: bits, not SZREG units"),
             Insn("neg", ("a5", "a4"), note="shl = 64 - shr (sll uses the low 6 bits)"),
             Insn("andi", ("a1", "a1", ALIGN_MASK), note="src rounded down: aligned loads only"),
             Insn("REG_L", ("a6", "0(a1)"),
                  exits.retry(0, 0, True) if retries(ph) else exits.label(0))]
    if out_of_line and inline_done:
        body = setup + [Insn("addi", (LIMIT, END, units(-size))),
                        Insn("bgtu", ("a0", LIMIT, f".L{pfx}_shift_then"),
                             note="less than a whole block: the second class")]
        body += block_loop(pfx, "shift_blocks", block, exits, ph.fault, True, retries(ph), True,
                           ready=size)
        body += [Insn("beq", ("a0", END, inline_done),
                      note="nothing left (forward: predicted not taken)"),
                 Label(f".L{pfx}_shift_then")]
    elif out_of_line:
        body = setup + [Insn("addi", (LIMIT, END, units(-size))),
                        Insn("bleu", ("a0", LIMIT, f".L{pfx}_shift_blocks"),
                             note="a whole block left: first class"),
                        Label(f".L{pfx}_shift_then")]
    else:
        body = setup + block_loop(pfx, "shift", block, exits, ph.fault, True, retries(ph), True,
                                  tested=ph.tested)
    if ph.then_shift_unroll:
        second = _shift_block(ph.then_shift_unroll, ph.then_shift_schedule, _prev_read_after(ph),
                              ph.keep)
        body += block_loop(pfx, "shift_then", second, exits, ph.fault, True, retries(ph), True,
                           tested=True)
    if shift_tail(ph) and ph.tail == "steps":
        for k in steps(ph.last_shift_unroll):
            step = S.shift_copy(k, "paired", "a6", "a4", "a5", S.shift_pool(ph.keep))
            body += block_loop(pfx, f"shift_step{k}", step, exits, ph.fault, True, retries(ph),
                               True, tested=True, once=True)
    elif shift_tail(ph):
        one = S.shift_copy(1, "interleave", "a6", "a4", "a5", S.shift_pool(ph.keep))
        body += block_loop(pfx, "shift_tail", one, exits, ph.fault, True, retries(ph), True,
                           tested=True)
    if restore:
        body += [Insn("srli", ("t0", "a4", "3")),
                 Insn("add", ("a1", "a1", "t0"), note="back to the first source byte not copied")]
    return body


def _shift_classes(ph: Phases, inline_done: str | None) -> tuple[str, ...]:
    """The comment lines that say which loops follow the first and where it lies."""
    then = ph.then_shift_unroll
    classes = (("That loop lies in line: a call with less than a whole block",
                "branches past it.") if inline_done else ())
    classes += ((f"Then {words(then)} per iteration, schedule {ph.then_shift_schedule},",
                 "for what is left.") if then else ())
    if shift_tail(ph):
        classes += (("Then one block each of " + ", ".join(map(words, steps(ph.last_shift_unroll)))
                     + ", as what is left needs.",) if ph.tail == "steps"
                    else ("Then single words.",))
    return classes
