"""Routine IR: functions made of phases made of instructions (declared as data).

Legend
  Function  one exported symbol (plus aliases): header text, phases, fault exits
  Phase     a named step of the copy (docs/strategies.md, "The phases"): its label, why it exists,
            C pseudo-code, the role of each register it uses, and its body
  Insn      one assembly instruction or macro; `fixup` names the label that
            computes the return value when this (user) access faults
  Label     a named (`.Lword_copy`) or numeric (`1`) label in a body

Role: the contract between lowering (gen.lower_*), scheduling (gen.phases.schedule)
and emission (gen.emission.emit).  May import only the standard library.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Insn:
    op: str
    operands: tuple[str, ...] = ()
    fixup: str | None = None
    note: str = ""

    def text(self) -> str:
        ops = ", ".join(self.operands)
        return f"{self.op}\t{ops}" if ops else self.op


@dataclass(frozen=True)
class Label:
    name: str
    note: str = ""


@dataclass(frozen=True)
class Phase:
    label: str | None
    title: str
    why: tuple[str, ...] = ()
    pseudo: tuple[str, ...] = ()
    regs: tuple[tuple[str, str], ...] = ()
    body: tuple[Insn | Label, ...] = ()


@dataclass(frozen=True)
class Function:
    symbol: str
    aliases: tuple[str, ...]
    summary: tuple[str, ...]
    params: tuple[tuple[str, str], ...]
    returns: str
    phases: tuple[Phase, ...]
    fault_exits: tuple[Phase, ...] = ()
    exported: tuple[str, ...] = field(default=())

    def user_accesses(self) -> int:
        return sum(1 for p in self.phases for i in p.body
                   if isinstance(i, Insn) and i.fixup)


def without_jumps_to_next(phases: tuple[Phase, ...]) -> tuple[Phase, ...]:
    """The phases with every `j L` dropped that L directly follows (the next
    phase's label, or a label right after it in the same body): the jump
    only costs a taken branch there."""
    out = []
    for i, ph in enumerate(phases):
        nxt = phases[i + 1].label if i + 1 < len(phases) else None
        after = [it.name if isinstance(it, Label) else None for it in ph.body[1:]] + [nxt]
        keep = tuple(it for it, label in zip(ph.body, after) if not _jumps_to(it, label))
        out.append(ph if len(keep) == len(ph.body) else replace(ph, body=keep))
    return tuple(out)


def _jumps_to(item, label: str | None) -> bool:
    """item is a plain `j` to label (`1f` for a numeric one)."""
    return (label is not None and isinstance(item, Insn) and item.op == "j" and not item.fixup
            and item.operands in ((label,), (f"{label}f",)))
