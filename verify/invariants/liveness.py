"""Live registers at the loop heads: a register that every path from a loop
head overwrites before reading (or never reads) is dead there, and a
candidate invariant about it can prove nothing later on.

Standard backward data flow over the routine's static CFG (verify.symbolic.program),
fault edges included: a load that faults does not write its destination, so
what its fixup reads is live before the load.  Calls are followed into the
callee and its returns back to the call site (Routine.edges), so what the
caller reads after a call is live throughout the callee.  At the routine's
own return the result (a0), the return address and the registers the
caller keeps (sp, gp, tp, s0-s11) are live: clause A1 reads them.

Role: `live_at`, `prune`.  May import emu.insn.isa, verify.symbolic.program, verify.invariants.candidates.
"""
from __future__ import annotations

from copygen.emu.insn.isa import BASE, FORMATS
from copygen.verify.invariants.candidates import Cand, registers
from copygen.verify.symbolic.program import LOADS, Program, Routine

_FORMAT = {name: fmt for name, fmt, _ in BASE}
AT_RETURN = frozenset({1, 2, 3, 4, 8, 9, 10} | set(range(18, 28)))


def uses_defs(prog: Program, pc: int) -> tuple[frozenset, frozenset]:
    """Registers an instruction reads and writes (x0 left out)."""
    i = prog.fetch(pc)
    ops = FORMATS[_FORMAT[i.name]]
    uses = {r for key, r in (("rs1", i.rs1), ("rs2", i.rs2)) if key in ops and r}
    defs = {i.rd} if "rd" in ops and i.rd else set()
    return frozenset(uses), frozenset(defs)


def live_at(prog: Program, routine: Routine) -> dict[int, frozenset[int]]:
    """Registers live on entry to every instruction of the routine."""
    info = {pc: uses_defs(prog, pc) for pc in routine.pcs}
    succ = routine.edges
    fixup = {pc: prog.image.extable.get(pc) for pc in routine.pcs}
    live: dict[int, frozenset[int]] = {pc: frozenset() for pc in routine.pcs}
    changed = True
    while changed:
        changed = False
        for pc in sorted(routine.pcs, reverse=True):
            uses, defs = info[pc]
            name = prog.fetch(pc).name
            if name == "jalr" and not succ[pc]:
                out = AT_RETURN
            else:
                out = frozenset().union(*(live[s] for s in succ[pc]))
            new = uses | (out - defs)
            if name in LOADS and fixup[pc] in live:
                new |= live[fixup[pc]]           # the faulting load leaves rd as it was
            if new != live[pc]:
                live[pc], changed = new, True
    return live


def prune(prog: Program, routine: Routine, guesses: dict[int, list[Cand]]) -> dict[int, list[Cand]]:
    """The guesses without those about a register dead at their loop head
    (dropping a guess is always sound; these could only cost solver time)."""
    live = live_at(prog, routine)
    return {pc: [c for c in cands if registers(c) <= live[pc]] for pc, cands in guesses.items()}
