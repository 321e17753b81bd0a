"""Loading a linked RV64 ELF: segments, symbols (address and size), `__ex_table`.

Role: read the ELF produced by the generator's toolchain driver (text at
0x80200000, `__ex_table` kept) with pyelftools and return plain data
(`ElfImage`); `load_into` maps its loadable segments as kernel pages.
`__ex_table` comes in the three layouts RISC-V kernels have used
(EXTABLE_LAYOUTS): 12-byte entries like `struct exception_table_entry { int
insn, fixup; short type, data; }` (since 2022), 8-byte ones without type and
data (late 2021), both with `insn`/`fixup` relative to the address of the
field itself, and 16-byte pairs of absolute addresses (`RISCV_PTR insn,
fixup`, 2017-2021).  The layout read is the first whose entries all name
even addresses inside the loaded code and have a known type: types 0 and 1
(EX_TYPE_FIXUP), which resume at the fixup; an entry of another type is
rejected.  Every problem with the file is an `ElfError`.
Imports: emu.errors, emu.hart.memory.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from elftools.common.exceptions import ELFError as _PyElfError
from elftools.elf.elffile import ELFFile

from copygen.emu.errors import ElfError
from copygen.emu.hart.memory import PAGE_MASK, PAGE_SIZE, Memory

EM_RISCV = "EM_RISCV"
MASK64 = 2**64 - 1
EXTABLE_ENTRY = struct.Struct("<iihh")     # insn, fixup (relative), type, data
EXTABLE_PAIR = struct.Struct("<ii")        # insn, fixup (relative)
EXTABLE_ABSOLUTE = struct.Struct("<QQ")    # insn, fixup (absolute addresses)
EX_TYPE_FIXUP = 1


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
    sizes: dict[str, int] = field(default_factory=dict)     # symbol -> st_size
    extable_entry: int = 0      # bytes per __ex_table entry in the layout read; 0: no table

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
    symbols, sizes = _symbols(elf)
    extable, entry = _extable(elf, path, segments)
    return ElfImage(path, elf["e_entry"], tuple(segments), symbols, extable, sizes, entry)


def _symbols(elf: ELFFile) -> tuple[dict[str, int], dict[str, int]]:
    """(name -> address, name -> st_size) of the defined symbols."""
    symtab = elf.get_section_by_name(".symtab")
    out: dict[str, int] = {}
    sizes: dict[str, int] = {}
    if symtab is None:
        return out, sizes
    for sym in symtab.iter_symbols():
        kind = sym["st_info"]["type"]
        if sym.name and not sym.name.startswith("$") and sym["st_shndx"] != "SHN_UNDEF" \
                and kind in ("STT_FUNC", "STT_NOTYPE", "STT_OBJECT"):
            # a global definition wins over a local one of the same name
            if sym.name not in out or sym["st_info"]["bind"] == "STB_GLOBAL":
                out[sym.name] = sym["st_value"]
                sizes[sym.name] = sym["st_size"]
    return out, sizes


def _relative(data: bytes, base: int, entry: struct.Struct) -> list[tuple[int, int, int]]:
    """(insn, fixup, type) of entries whose first two fields are offsets
    from their own address; entries without a type field are fixups."""
    out = []
    for off in range(0, len(data), entry.size):
        insn, fixup, *rest = entry.unpack_from(data, off)
        at = base + off
        out.append(((at + insn) & MASK64, (at + 4 + fixup) & MASK64, rest[0] if rest else EX_TYPE_FIXUP))
    return out


def _absolute(data: bytes, base: int) -> list[tuple[int, int, int]]:
    return [(*EXTABLE_ABSOLUTE.unpack_from(data, off), EX_TYPE_FIXUP)
            for off in range(0, len(data), EXTABLE_ABSOLUTE.size)]


# every layout RISC-V kernels have written __ex_table in, tried in this order
EXTABLE_LAYOUTS = (
    ("relative 12-byte", EXTABLE_ENTRY.size, lambda d, b: _relative(d, b, EXTABLE_ENTRY)),
    ("relative 8-byte", EXTABLE_PAIR.size, lambda d, b: _relative(d, b, EXTABLE_PAIR)),
    ("absolute 16-byte (RISCV_PTR pairs)", EXTABLE_ABSOLUTE.size, _absolute),
)


def _in_code(segments, addr: int) -> bool:
    return addr % 2 == 0 and any(s.executable and s.vaddr <= addr < s.vaddr + s.memsz
                                 for s in segments)


def _extable(elf: ELFFile, path: str, segments) -> tuple[dict[int, int], int]:
    """(insn -> fixup, bytes per entry).  The layout is the first whose entry size divides the
    section and whose entries all name even addresses in the code, with a
    type copygen knows.  Read in a wrong layout an entry points outside the
    code or at an odd address (a 12-byte table read as 16-byte pairs takes
    two offsets for one address, far below the code; read as 8-byte pairs,
    type 1 becomes an offset to an odd address), or, for 8-byte pairs read
    as 12-byte entries, takes half an offset for its type."""
    sec = elf.get_section_by_name("__ex_table")
    if sec is None:
        return {}, 0
    base, data = sec["sh_addr"], sec.data()
    typed = None     # entries in the code, with a type copygen does not know
    for _, size, decode in EXTABLE_LAYOUTS:
        if len(data) % size:
            continue
        entries = decode(data, base)
        if not all(_in_code(segments, a) and _in_code(segments, f) for a, f, _ in entries):
            continue
        unknown = [(a, kind) for a, _, kind in entries if kind not in (0, EX_TYPE_FIXUP)]
        if not unknown:
            return {insn: fixup for insn, fixup, _ in entries}, size
        typed = typed or unknown[0]
    if typed:
        raise ElfError(f"{path}: __ex_table entry for insn {typed[0]:#x} has type {typed[1]}; "
                       f"only EX_TYPE_FIXUP (1) is supported")
    names = ", ".join(name for name, _, _ in EXTABLE_LAYOUTS)
    raise ElfError(f"{path}: __ex_table ({len(data)} bytes) is in none of the layouts "
                   f"copygen reads ({names}): read in each, some entry points outside the code")


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
