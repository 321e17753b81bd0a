"""Fault-return bookkeeping: attach a fixup label to every user access.

When a user access faults, the routine must return N, the number of bytes
not copied (DOMAIN.md §3).  Every phase keeps `a0` = first destination byte
not yet known to be stored, possibly displaced by a constant: a block that has
advanced `a0` early, or has stored some of its words, is `c` bytes away from
the truth.  The fixup for such an access is `a0 += c; N = end - a0`, so there
is one fault exit per distinct `c`.

Policies
  exact  c = (bytes stored so far in this block) - (advance of a0 so far)
  block  c = -(advance of a0 so far): stores done inside the faulting block
         are reported as not copied (what the 2021 routine did)

Role: turn scheduled Steps into Insns with fixup labels.  May import gen.ir,
gen.schedule, gen.strategy.
"""
from __future__ import annotations

from gen.ir import Insn
from gen.schedule import Step
from gen.strategy import SZREG


class FaultExits:
    """The set of fault exits one function needs, named by their offset."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.offsets: set[int] = set()

    def label(self, c: int) -> str:
        self.offsets.add(c)
        if c == 0:
            return f".L{self.prefix}_fault"
        sign = "plus" if c > 0 else "minus"
        return f".L{self.prefix}_fault_{sign}_{abs(c)}"


def attach(steps: tuple[Step, ...] | list[Step], exits: FaultExits, policy: str,
           user: bool = True) -> list[Insn]:
    """Insns for `steps`, each user access carrying its fault exit."""
    out: list[Insn] = []
    stored = 0       # bytes of this block stored so far
    advanced = 0     # how far a0 has moved since the block began
    for st in steps:
        fix = None
        if st.kind == "store":
            start = advanced + st.offset
            assert start == stored, f"stores out of order at {st}: {start} != {stored}"
        if user and st.kind in ("load", "store"):
            c = stored - advanced if policy == "exact" else -advanced
            fix = exits.label(c)
        out.append(Insn(st.op, st.operands, fix))
        if st.kind == "store":
            stored += SZREG
        elif st.kind == "adv_dst":
            advanced += st.offset
    return out


def exit_code(exits: FaultExits, end_reg: str, disable: list[Insn]) -> list:
    """The fault exits: adjust a0 by c, then N = end - a0, SUM off, return."""
    from gen.ir import Label
    body: list = []
    main = f".L{exits.prefix}_fault"
    others = sorted(exits.offsets - {0})
    for k, c in enumerate(others):
        body += [Label(exits.label(c)), Insn("addi", ("a0", "a0", str(c)),
                 note=f"a0 is {abs(c)} bytes {'behind' if c > 0 else 'ahead of'} the first unstored byte")]
        if k != len(others) - 1:
            body.append(Insn("j", (main,)))
    exits.offsets.add(0)
    body += [Label(main), Insn("sub", ("a0", end_reg, "a0"), note="bytes not copied")]
    body += disable
    body.append(Insn("ret"))
    return body
