"""What the verifier reads of a linked ELF: the routines it defines that
copygen knows how to prove.  Turning a .copy, .S or .o into that ELF is the
command line's job (copygen.inputs), so verify needs no front end.

Role: linked ELF -> [(symbol, kind)].  May import emu.elf, emu.errors,
copygen.errors, verify.contract.clauses, verify.contract.world.
"""
from __future__ import annotations

from pathlib import Path

from copygen.emu.elf import read_elf
from copygen.emu.errors import ElfError
from copygen.errors import CopygenError, Loc
from copygen.verify.contract.clauses import holds_sum
from copygen.verify.contract.world import KINDS


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
