"""Loading a linked RV64 ELF: segments, symbols, `__ex_table`.

Role: read the ELF produced by the generator's toolchain driver (text at
0x80200000, `__ex_table` kept) with pyelftools and return plain data
(`ElfImage`); `load_into` maps its loadable segments as kernel pages.
`__ex_table` entries are 12 bytes like the kernel's RISC-V
`struct exception_table_entry { int insn, fixup; short type, data; }`, with
`insn`/`fixup` relative to the address of the field itself.  Types 0 and 1
(EX_TYPE_FIXUP) resume at the fixup; other types are rejected.
Every problem with the file is an `ElfError`.
Imports: emu.errors, emu.memory.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from elftools.common.exceptions import ELFError as _PyElfError
from elftools.elf.elffile import ELFFile

from copygen.emu.errors import ElfError
from copygen.emu.memory import PAGE_MASK, PAGE_SIZE, Memory

EM_RISCV = "EM_RISCV"
EXTABLE_ENTRY = struct.Struct("<iihh")


@dataclass(frozen=True)
class Segment:
    vaddr: int
    data: bytes
    memsz: int
    readable: bool
    writable: bool
    executable: bool


@dataclass(frozen=True)
class ElfImage:
    path: str
    entry: int
    segments: tuple[Segment, ...]
    symbols: dict[str, int] = field(default_factory=dict)
    extable: dict[int, int] = field(default_factory=dict)

    def address_of(self, symbol: str) -> int:
        try:
            return self.symbols[symbol]
        except KeyError:
            raise ElfError(f"{self.path}: no symbol {symbol!r}") from None


def read_elf(path: str | Path) -> ElfImage:
    """Parse `path`; raises ElfError if it is not a linked RV64 executable."""
    path = str(path)
    try:
        with open(path, "rb") as f:
            return _parse(ELFFile(f), path)
    except OSError as e:
        raise ElfError(f"{path}: cannot read: {e.strerror or e}") from None
    except (_PyElfError, struct.error, ValueError) as e:
        raise ElfError(f"{path}: not a valid ELF file: {e}") from None


def _parse(elf: ELFFile, path: str) -> ElfImage:
    if elf["e_machine"] != EM_RISCV or elf.elfclass != 64:
        raise ElfError(f"{path}: not a 64-bit RISC-V ELF (machine {elf['e_machine']}, class {elf.elfclass})")
    segments = []
    for seg in elf.iter_segments():
        if seg["p_type"] != "PT_LOAD" or seg["p_memsz"] == 0:
            continue
        flags = seg["p_flags"]
        segments.append(Segment(seg["p_vaddr"], seg.data(), seg["p_memsz"],
                                bool(flags & 4), bool(flags & 2), bool(flags & 1)))
    if not segments:
        raise ElfError(f"{path}: no loadable segments (an object file, not a linked ELF?)")
    symbols = _symbols(elf)
    extable = _extable(elf, path)
    return ElfImage(path, elf["e_entry"], tuple(segments), symbols, extable)


def _symbols(elf: ELFFile) -> dict[str, int]:
    symtab = elf.get_section_by_name(".symtab")
    out: dict[str, int] = {}
    if symtab is None:
        return out
    for sym in symtab.iter_symbols():
        kind = sym["st_info"]["type"]
        if sym.name and not sym.name.startswith("$") and sym["st_shndx"] != "SHN_UNDEF" \
                and kind in ("STT_FUNC", "STT_NOTYPE", "STT_OBJECT"):
            # a global definition wins over a local one of the same name
            if sym.name not in out or sym["st_info"]["bind"] == "STB_GLOBAL":
                out[sym.name] = sym["st_value"]
    return out


def _extable(elf: ELFFile, path: str) -> dict[int, int]:
    sec = elf.get_section_by_name("__ex_table")
    if sec is None:
        return {}
    base, data = sec["sh_addr"], sec.data()
    if len(data) % EXTABLE_ENTRY.size:
        raise ElfError(f"{path}: __ex_table is {len(data)} bytes, not a multiple of {EXTABLE_ENTRY.size}")
    table: dict[int, int] = {}
    for off in range(0, len(data), EXTABLE_ENTRY.size):
        insn, fixup, kind, _ = EXTABLE_ENTRY.unpack_from(data, off)
        at = base + off
        if kind not in (0, 1):
            raise ElfError(f"{path}: __ex_table entry for insn {at + insn:#x} has type {kind}; "
                           f"only EX_TYPE_FIXUP (1) is supported")
        table[(at + insn) & (2**64 - 1)] = (at + 4 + fixup) & (2**64 - 1)
    return table


def load_into(image: ElfImage, memory: Memory) -> None:
    """Map every loadable segment as kernel pages (permissions: union per page)."""
    perms: dict[int, list[bool]] = {}
    for seg in image.segments:
        for pn in range(seg.vaddr >> 12, (seg.vaddr + seg.memsz + PAGE_MASK) >> 12):
            p = perms.setdefault(pn, [False, False, False])
            p[0] |= seg.readable
            p[1] |= seg.writable
            p[2] |= seg.executable
    for pn, (r, w, x) in sorted(perms.items()):
        memory.map(pn << 12, PAGE_SIZE, user=False, readable=r, writable=w, executable=x)
    for seg in image.segments:
        memory.host_write(seg.vaddr, seg.data + bytes(seg.memsz - len(seg.data)))
