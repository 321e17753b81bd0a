"""What the commands accept as code to verify or measure: a .copy strategy
(built with the generator), a hand-written kernel-style .S (assembled
against copygen's shim), an object file, or a linked ELF.  Everything
becomes one linked ELF, so the proof reads the machine code that ships.

Role: input file -> linked ELF, above the pillars: it combines gen (which
builds and links) with what verify and emu read, so neither of them needs
the other's front end.  Anything but a regular file (a FIFO, a device) is
refused before it is opened.  May import gen.build, gen.front.parse,
copygen.errors and the standard library.
"""
from __future__ import annotations

from pathlib import Path

from copygen.errors import CopygenError, Loc
from copygen.gen.build import build_file, shim_elf
from copygen.gen.front.parse import require_regular_file


def linked_elf(path: str | Path, workdir: Path, tell=lambda msg: None) -> Path:
    """The linked ELF of PATH, built under WORKDIR when it is not one;
    `tell` hears "building PATH" once the input is found sound, before the
    toolchain runs (bad input is refused first, alone)."""
    p = Path(path)
    require_regular_file(p)
    suffix = p.suffix
    if suffix == ".o" and not _is_elf(p):
        raise CopygenError("not an ELF object", Loc(str(path)),
                           hint="give the .o the RISC-V assembler made, or its .S")
    if suffix in (".copy", ".S", ".s", ".o"):
        tell(f"building {path}")
    if suffix == ".copy":
        workdir.mkdir(parents=True, exist_ok=True)
        return build_file(p, workdir).elf
    if suffix in (".S", ".s", ".o"):
        return shim_elf(p, workdir)
    if suffix in (".elf", ""):
        return p
    raise CopygenError(f"cannot verify a `{suffix}` file", hint="give a .copy, .S, .o or linked ELF")


def _is_elf(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == b"\x7fELF"
