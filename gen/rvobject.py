"""A RISC-V relocatable object read and patched byte by byte: its sections,
its symbols, the instructions of its code sections, and the one change
`copygen hwbench` makes to the kernel's machine code so that it runs in
user space: each SUM toggle (`csrs sstatus, rX` / `csrc sstatus, rX`)
becomes a `nop` of the same length, every other byte stays as it was.

Role: the object surgery of gen.hwbench, in Python so that the words
changed are exactly the ones decoded here (no tool rewrites the object);
only ELF64 little-endian relocatable objects (what the RISC-V toolchain
assembles) are read, their headers through pyelftools.  Instructions are
walked by their length (low two bits not 0b11: 2 bytes, else 4), as the
hart fetches them.
May import copygen.errors, pyelftools and the standard library.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from copygen.errors import CopygenError, Loc

SHF_EXECINSTR = 0x4
SHN_UNDEF = 0
STB_GLOBAL, STB_WEAK = 1, 2
STT_SECTION, STT_FILE = 3, 4

SYSTEM = 0x73
SSTATUS = 0x100
NOP = 0x00000013                        # addi x0, x0, 0
ECALL, EBREAK = 0x00000073, 0x00100073
ABI = ("zero ra sp gp tp t0 t1 t2 s0 s1 a0 a1 a2 a3 a4 a5 a6 a7 "
       "s2 s3 s4 s5 s6 s7 s8 s9 s10 s11 t3 t4 t5 t6").split()

# pyelftools' names of symbol binding and type -> their numbers
_BIND = {"STB_LOCAL": 0, "STB_GLOBAL": STB_GLOBAL, "STB_WEAK": STB_WEAK}
_TYPE = {"STT_NOTYPE": 0, "STT_OBJECT": 1, "STT_FUNC": 2, "STT_SECTION": STT_SECTION, "STT_FILE": STT_FILE}


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: str                           # pyelftools' name: SHT_PROGBITS, ...
    flags: int
    offset: int                         # in the file
    size: int
    link: int

    @property
    def code(self) -> bool:
        return bool(self.flags & SHF_EXECINSTR)


@dataclass(frozen=True)
class Symbol:
    name: str
    bind: int
    type: int
    shndx: int
    value: int

    @property
    def defined_global(self) -> bool:
        """Defined here and seen by the linker outside this object."""
        return self.bind in (STB_GLOBAL, STB_WEAK) and self.shndx != SHN_UNDEF


@dataclass(frozen=True)
class Patched:
    """One SUM toggle replaced by a nop."""
    section: str
    offset: int                         # in the section
    text: str                           # the instruction it was, e.g. `csrs sstatus, t6`

    def as_dict(self) -> dict:
        return {"section": self.section, "offset": self.offset, "was": self.text}


class RvObject:
    """An ELF64 little-endian RISC-V relocatable object held in memory: its
    headers read with pyelftools, its bytes kept to be patched in place."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.data = bytearray(self.path.read_bytes())
        try:
            elf = ELFFile(io.BytesIO(bytes(self.data)))
            ok = (elf.elfclass == 64 and elf.little_endian and elf["e_type"] == "ET_REL"
                  and elf["e_machine"] == "EM_RISCV")
        except ELFError:
            ok = False
        if not ok:
            raise CopygenError("not a RISC-V ELF64 relocatable object", Loc(str(path)))
        self.sections = [Section(i, s.name, s["sh_type"], s["sh_flags"], s["sh_offset"], s["sh_size"],
                                 s["sh_link"]) for i, s in enumerate(elf.iter_sections())]
        self._symbols = [Symbol(sym.name, _BIND[sym["st_info"]["bind"]], _TYPE.get(sym["st_info"]["type"], 0),
                                sym["st_shndx"] if isinstance(sym["st_shndx"], int) else SHN_UNDEF,
                                sym["st_value"])
                         for sec in elf.iter_sections() if isinstance(sec, SymbolTableSection)
                         for sym in sec.iter_symbols()]

    def bytes_of(self, sec: Section) -> bytes:
        return bytes(self.data[sec.offset:sec.offset + sec.size])

    def symbols(self) -> list[Symbol]:
        return list(self._symbols)

    def code_sections(self) -> list[Section]:
        return [s for s in self.sections if s.code and s.size]

    def where(self, sec: Section, offset: int, prefix: str = "") -> str:
        """`symbol+0x12` for an offset of a code section, the nearest named
        symbol at or before it (less `prefix`, when it has it); else
        `section+0x12`."""
        best = None
        for sym in self.symbols():
            if (sym.shndx == sec.index and sym.value <= offset and sym.name
                    and sym.type not in (STT_SECTION, STT_FILE) and not sym.name.startswith(".L")
                    and (best is None or sym.value > best.value)):
                best = sym
        base, at = (best.name.removeprefix(prefix), best.value) if best else (sec.name, 0)
        return f"{base}+{offset - at:#x}"

    def write(self, path: Path) -> None:
        Path(path).write_bytes(bytes(self.data))


def instructions(code: bytes):
    """(offset, length, word) of each instruction, walked by length; a
    2-byte instruction's word is its 16 bits."""
    at = 0
    while at + 2 <= len(code):
        half = code[at] | code[at + 1] << 8
        if half & 0b11 != 0b11 or at + 4 > len(code):
            yield at, 2, half
            at += 2
            continue
        yield at, 4, int.from_bytes(code[at:at + 4], "little")
        at += 4


def _fields(word: int) -> tuple[int, int, int, int, int]:
    """(opcode, rd, funct3, rs1, csr) of a 32-bit instruction."""
    return word & 0x7F, (word >> 7) & 31, (word >> 12) & 7, (word >> 15) & 31, word >> 20


def sum_toggle(word: int) -> str | None:
    """`csrs sstatus, rX` / `csrc sstatus, rX` (csrrs/csrrc, rd = x0,
    csr = 0x100, rs1 a register other than x0) as text, else None."""
    op, rd, f3, rs1, csr = _fields(word)
    if op == SYSTEM and f3 in (2, 3) and rd == 0 and rs1 != 0 and csr == SSTATUS:
        return f"{'csrs' if f3 == 2 else 'csrc'} sstatus, {ABI[rs1]}"
    return None


def privileged(word: int) -> str | None:
    """Why a 32-bit instruction traps in user mode, or None: a CSR access
    whose address names a privilege above user (its bits 9:8 not 0), an
    environment instruction other than ecall/ebreak (sret, wfi,
    sfence.vma, ...), or a hypervisor load/store."""
    op, _, f3, _, csr = _fields(word)
    if op != SYSTEM:
        return None
    if f3 == 0:
        return None if word in (ECALL, EBREAK) else f"system instruction {word:#010x}"
    if f3 == 4:
        return f"hypervisor load/store {word:#010x}"
    if (csr >> 8) & 3:
        return f"access to privileged CSR {csr:#x}"
    return None


def neutralise_sum(src: Path, dst: Path, where: str, prefix: str = "") -> list[Patched]:
    """Copy the object SRC to DST with every SUM toggle of its code
    sections replaced by a nop; any other instruction that traps in user
    mode is an error (located at `where`, the input that made it, and named
    by its symbol less `prefix`, the one its symbols were given)."""
    obj = RvObject(src)
    patched: list[Patched] = []
    for sec in obj.code_sections():
        for off, size, word in instructions(obj.bytes_of(sec)):
            if size != 4:
                continue
            text = sum_toggle(word)
            if text:
                obj.data[sec.offset + off:sec.offset + off + 4] = NOP.to_bytes(4, "little")
                patched.append(Patched(sec.name, off, text))
                continue
            why = privileged(word)
            if why:
                raise CopygenError(f"{obj.where(sec, off, prefix)} ({sec.name}+{off:#x}): {why}: it "
                                   "cannot run in user space", Loc(where),
                                   hint="hwbench neutralises only the SUM toggles (csrs/csrc "
                                        "sstatus); time this routine in a kernel instead")
    obj.write(dst)
    return patched


def defined_globals(paths: list[Path]) -> list[tuple[Path, Symbol]]:
    """The symbols the objects define for the linker (global and weak), with
    the object that defines each, in file order."""
    return [(p, s) for p in paths for s in RvObject(p).symbols() if s.defined_global and s.name]
