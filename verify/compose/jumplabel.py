"""The kernel's jump labels in a linked ELF: read the `__jump_table`, and
write the ELF as the kernel runs it with a static key enabled.

A static branch is one 4-byte instruction (a `nop` or a `jal x0`) at a
site that the `__jump_table` names, with the key it follows and the
jump's target.  Each entry is the kernel's relative `struct jump_entry`
(CONFIG_HAVE_ARCH_JUMP_LABEL_RELATIVE, which RISC-V selects): `s32 code`,
`s32 target`, each an offset from its own field, then a pointer-sized
offset from its own field to the key, whose bit 0 is the branch's sense
(0: the site jumps when the key is enabled, as static_branch_unlikely()
on a false key emits; 1: the other way round) and bit 1 marks a site in
init text.  The jump-label code writes the jump at a site whose key
state and sense differ and the nop elsewhere, one aligned instruction
at a time; so a call runs each site in one state or the other, and the
routine under a key state is the ELF with every site of that key
written so.  `with_key` makes that ELF, for the prover and the bench.

Role: ELF in, sites and a patched ELF out.  May import elftools,
emu.insn.encode, emu.insn.decode, copygen.errors and the standard library.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile

from copygen.emu.insn.decode import decode
from copygen.emu.insn.encode import encode
from copygen.errors import CopygenError, Loc

SECTION = "__jump_table"
ENTRY = struct.Struct("<iiq")       # code, target (s32 each), key (long), all relative
NOP = 0x00000013                    # addi x0, x0, 0
MASK64 = (1 << 64) - 1
J_RANGE = 1 << 20                   # jal's reach, in bytes either way


@dataclass(frozen=True)
class Site:
    """One static branch: its instruction's address, the jump's target, the
    key's address and name, its sense (bit 0 of the entry's key field) and
    the instruction the ELF holds there now."""

    code: int
    target: int
    key: int
    key_name: str
    branch: bool
    insn: int

    def jumps(self, enabled: bool) -> bool:
        """Whether the site holds the jump with the key in this state."""
        return enabled != self.branch

    def holds(self) -> str:
        return "jump" if self.insn == jump_to(self.code, self.target) else \
            "nop" if self.insn == NOP else f"{self.insn:#010x}"


def jump_to(pc: int, target: int) -> int:
    """`jal x0, target` at pc: the jump the kernel writes at a site."""
    return encode("jal", rd=0, imm=target - pc)


def _file(path: Path) -> tuple[ELFFile, object]:
    f = open(path, "rb")
    return ELFFile(f), f


def _offset(elf: ELFFile, addr: int) -> int | None:
    """The file offset of a loaded address."""
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] <= addr < seg["p_vaddr"] + seg["p_filesz"]:
            return seg["p_offset"] + addr - seg["p_vaddr"]
    return None


def _names(elf: ELFFile) -> dict[int, str]:
    tab = elf.get_section_by_name(".symtab")
    out: dict[int, str] = {}
    for sym in (tab.iter_symbols() if tab is not None else ()):
        if sym.name and sym["st_shndx"] != "SHN_UNDEF" and sym["st_info"]["type"] in ("STT_OBJECT", "STT_NOTYPE"):
            out.setdefault(sym["st_value"], sym.name)
    return out


def sites(path: str | Path) -> list[Site]:
    """Every entry of the ELF's `__jump_table` (none: an empty list)."""
    path = Path(path)
    elf, f = _file(path)
    with f:
        sec = elf.get_section_by_name(SECTION)
        if sec is None:
            return []
        data, base, names = sec.data(), sec["sh_addr"], _names(elf)
        if len(data) % ENTRY.size:
            raise CopygenError(f"{path}: {SECTION} is {len(data)} bytes, not whole "
                               f"{ENTRY.size}-byte entries", Loc(str(path)))
        out = []
        for off in range(0, len(data), ENTRY.size):
            code, target, key = ENTRY.unpack_from(data, off)
            at = base + off
            code, target, key = (at + code) & MASK64, (at + 4 + target) & MASK64, (at + 8 + key) & MASK64
            where = _offset(elf, code)
            if where is None or code % 4:
                raise CopygenError(f"{path}: a {SECTION} entry names {code:#x}, which is no "
                                   "aligned instruction of the loaded code", Loc(str(path)))
            f.seek(where)
            insn = int.from_bytes(f.read(4), "little")
            out.append(Site(code, target, key & ~3, names.get(key & ~3, f"{key & ~3:#x}"),
                            bool(key & 1), insn))
    return out


def check(site: Site) -> None:
    """The site holds what its key's false state asks for (the ELF as
    linked, every key off), and its jump can reach the target."""
    want = jump_to(site.code, site.target) if site.jumps(False) else NOP
    if abs(site.target - site.code) >= J_RANGE:
        raise CopygenError(f"the static branch at {site.code:#x} cannot reach {site.target:#x} "
                           "with one jal", hint="keep the target within 1 MiB of the site")
    if site.insn != want:
        raise CopygenError(f"the static branch at {site.code:#x} on {site.key_name} holds "
                           f"{decode(site.insn).name if site.insn else 'zero'}, not the "
                           f"{'jump' if site.jumps(False) else 'nop'} its entry asks for")


def with_key(path: str | Path, key: str, out: str | Path, enabled: bool = True) -> tuple[Path, list[Site]]:
    """Write to `out` the ELF at `path` with every site of `key` set as the
    jump-label code sets it in that state; (out, the sites)."""
    path, out = Path(path), Path(out)
    mine = [s for s in sites(path) if s.key_name == key]
    if not mine:
        raise CopygenError(f"{path} has no static branch on {key}", Loc(str(path)),
                           hint=f"its {SECTION} names: "
                                + (", ".join(sorted({s.key_name for s in sites(path)})) or "nothing"))
    blob = bytearray(path.read_bytes())
    elf, f = _file(path)
    with f:
        for s in mine:
            check(s)
            at = _offset(elf, s.code)
            insn = jump_to(s.code, s.target) if s.jumps(enabled) else NOP
            blob[at:at + 4] = insn.to_bytes(4, "little")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(bytes(blob))
    return out, mine
