"""Routine IR: functions made of phases made of instructions (declared as data).

Legend
  Function  one exported symbol (plus aliases): header text, phases, fault exits
  Phase     a named step of the copy (DOMAIN.md §2): its label, why it exists,
            C pseudo-code, the role of each register it uses, and its body
  Insn      one assembly instruction or macro; `fixup` names the label that
            computes the return value when this (user) access faults
  Label     a named (`.Lword_copy`) or numeric (`1`) label in a body

Role: the contract between lowering (gen.lower_*), scheduling (gen.schedule)
and emission (gen.emit).  May import only the standard library.
"""
from __future__ import annotations

from dataclasses import dataclass, field


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
