"""The machine code under proof: decoded instructions of a linked ELF, the
static control-flow graph of one routine, and its loop heads (cut points).

Role: read what ships (DESIGN.md decision 2) through emu's ELF loader and
decoder.  Fault edges (user access -> __ex_table fixup) are CFG edges too.
May import emu.elf, emu.decode.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from copygen.emu.decode import Insn, decode, insn_length
from copygen.emu.elf import ElfImage, read_elf

LOADS = {"lb", "lh", "lw", "ld", "lbu", "lhu", "lwu"}
STORES = {"sb", "sh", "sw", "sd"}
BRANCHES = {"beq", "bne", "blt", "bge", "bltu", "bgeu"}


class ProgramError(Exception):
    """The code cannot be analysed (unknown jump target, runaway CFG...)."""


@dataclass
class Program:
    image: ElfImage
    _cache: dict = field(default_factory=dict)

    @classmethod
    def load(cls, path) -> "Program":
        return cls(read_elf(path))

    @cached_property
    def _bytes(self) -> list[tuple[int, bytes]]:
        return [(s.vaddr, s.data) for s in self.image.segments if s.executable]

    def read_const(self, addr: int, size: int) -> int | None:
        """The little-endian value at addr if it lies in a read-only part of
        the image (a literal pool, .rodata), else None."""
        for seg in self.image.segments:
            if not seg.writable and seg.vaddr <= addr and addr + size <= seg.vaddr + len(seg.data):
                off = addr - seg.vaddr
                return int.from_bytes(seg.data[off:off + size], "little")
        return None

    def _read16(self, pc: int) -> int:
        for base, data in self._bytes:
            if base <= pc and pc + 2 <= base + len(data):
                return int.from_bytes(data[pc - base:pc - base + 2], "little")
        raise ProgramError(f"pc {pc:#x} is outside the code")

    def address_roles(self, pc: int, limit: int = 64) -> dict[int, str]:
        """Registers the straight-line code from pc (up to its first branch or
        jump) uses as load ("src") or store ("dst") addresses; sp excluded.
        A register used both ways is left out."""
        roles: dict[int, str] = {}
        for _ in range(limit):
            try:
                ins = self.fetch(pc)
            except ProgramError:
                break
            if ins.name in LOADS or ins.name in STORES:
                role = "src" if ins.name in LOADS else "dst"
                if ins.rs1 != 2:
                    roles[ins.rs1] = role if roles.get(ins.rs1, role) == role else "both"
            if ins.name in BRANCHES or ins.name in ("jal", "jalr"):
                break
            pc += ins.length
        return {r: v for r, v in roles.items() if v != "both"}

    def fetch(self, pc: int) -> Insn:
        insn = self._cache.get(pc)
        if insn is None:
            low = self._read16(pc)
            raw = low if insn_length(low) == 2 else low | (self._read16(pc + 2) << 16)
            insn = self._cache[pc] = decode(raw, pc)
        return insn

    def successors(self, pc: int) -> list[int]:
        """Static successors, fault edges included; [] for jalr (return)."""
        i = self.fetch(pc)
        nxt = pc + i.length
        if i.name in BRANCHES:
            out = [pc + i.imm, nxt]
        elif i.name == "jal":
            out = [pc + i.imm] + ([nxt] if i.rd else [])
        elif i.name == "jalr":
            out = []
        else:
            out = [nxt]
        if (i.name in LOADS or i.name in STORES) and pc in self.image.extable:
            out.append(self.image.extable[pc])
        return out

    def routine(self, entry: int) -> "Routine":
        return Routine.build(self, entry)


@dataclass(frozen=True)
class Routine:
    entry: int
    pcs: frozenset[int]
    cut_points: frozenset[int]     # targets of back edges: every cycle has one

    @classmethod
    def build(cls, prog: Program, entry: int, limit: int = 20000) -> "Routine":
        seen: set[int] = set()
        on_stack: set[int] = set()
        cuts: set[int] = set()
        stack = [(entry, iter(prog.successors(entry)))]
        seen.add(entry)
        on_stack.add(entry)
        while stack:
            pc, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                on_stack.discard(pc)
                continue
            if nxt in on_stack:
                cuts.add(nxt)
            elif nxt not in seen:
                if len(seen) > limit:
                    raise ProgramError(f"routine at {entry:#x} has over {limit} instructions")
                seen.add(nxt)
                on_stack.add(nxt)
                stack.append((nxt, iter(prog.successors(nxt))))
        return cls(entry, frozenset(seen), frozenset(cuts))
