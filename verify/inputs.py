"""What `copygen verify` accepts: a .copy strategy (built with the
generator), a hand-written kernel-style .S (assembled against our shim),
an object file, or a linked ELF.  Everything becomes one linked ELF, so the
proof reads the machine code that ships.

Role: input files -> (elf path, [(symbol, kind)]).  Anything but a regular
file (a FIFO, a device) is refused before it is opened.  May import
gen.build, gen.toolchain, gen.errors, gen.parse, gen.resources, emu.elf,
emu.errors, verify.clauses, verify.world.
"""
from __future__ import annotations

from pathlib import Path

from copygen.emu.elf import read_elf
from copygen.emu.errors import ElfError
from copygen.gen.errors import CopygenError, Loc
from copygen.gen.parse import require_regular_file
from copygen.gen.resources import shim_dir
from copygen.verify.clauses import holds_sum
from copygen.verify.world import KINDS



def linked_elf(path: str, workdir: Path) -> Path:
    from copygen.gen import toolchain
    from copygen.gen.build import build_file
    p = Path(path)
    require_regular_file(p)
    suffix = p.suffix
    if suffix == ".o" and not _is_elf(p):
        raise CopygenError("not an ELF object", Loc(path),
                           hint="give the .o the RISC-V assembler made, or its .S")
    if suffix == ".copy":
        workdir.mkdir(parents=True, exist_ok=True)
        res = build_file(p, workdir)
        return res.elf
    if suffix in (".S", ".s", ".o"):
        obj = p
        workdir.mkdir(parents=True, exist_ok=True)
        if suffix != ".o":
            obj = workdir / (p.stem + ".o")
            toolchain.assemble(p, shim_dir() / "include", obj)
        elf = workdir / (p.stem + ".elf")
        toolchain.link([obj], shim_dir() / "copygen.ld", elf)
        return elf
    if suffix in (".elf", ""):
        return p
    raise CopygenError(f"cannot verify a `{suffix}` file", hint="give a .copy, .S, .o or linked ELF")


def _is_elf(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == b"\x7fELF"


def routines(elf: Path) -> list[tuple[str, str]]:
    """(symbol, kind) for each routine the ELF defines, one per kind and
    per way of entry (with SUM clear, or held by the caller)."""
    try:
        image = read_elf(elf)
    except ElfError as err:
        raise CopygenError(str(err), Loc(str(elf))) from None
    seen_kinds, out = set(), []
    for sym, kind in KINDS.items():
        if sym in image.symbols and (kind, holds_sum(sym)) not in seen_kinds:
            seen_kinds.add((kind, holds_sum(sym)))
            out.append((sym, kind))
    if not out:
        raise CopygenError(f"{elf} defines none of the routines copygen verifies",
                           hint="expected __asm_copy_to_user, __clear_user, memcpy, memset ...")
    return out
