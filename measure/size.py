"""Code size of the routines of a linked ELF: `.text` bytes per routine.

What is counted.  A routine's `.text` bytes are its symbol's `st_size`, as
`nm -S` prints it: the emitted routine from SYM_FUNC_START to SYM_FUNC_END.
copygen emits no out-of-line `.fixup` section: every fault exit (the code an
`__ex_table` entry resumes at, which computes the count not copied) lies in
line before SYM_FUNC_END, so `st_size` holds it too.  An alias
(`__asm_copy_from_user` of `__asm_copy_to_user`, `memcpy` of `__memcpy`)
has the address and the size of the code it names: it is a row of its own
with the same bytes, not more code.  The exception table is not `.text`
(it is read-only data the kernel searches on a fault) and is reported
apart: `extable_bytes`, the entries whose faulting instruction lies in the
routine times the size of an entry in the layout the ELF uses.

Role: the size measure behind `copygen bench`, `rank` and `tune`.
Imports: emu.elf, measure.bench, the standard library.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from copygen.emu.elf import ElfImage, read_elf
from copygen.measure.bench import KINDS


@dataclass(frozen=True)
class RoutineSize:
    routine: str            # symbol
    kind: str               # copy_to_user, memcpy, ...
    text_bytes: int         # st_size: the code, fault exits included
    extable_bytes: int      # its share of __ex_table (not .text)

    def as_dict(self) -> dict:
        return asdict(self)


def routine_size(image: ElfImage, symbol: str) -> RoutineSize:
    """The size of `symbol` in `image` (an ElfError when it has none)."""
    start = image.address_of(symbol)
    text = image.sizes.get(symbol, 0)
    entries = sum(1 for insn in image.extable if start <= insn < start + text)
    kind = KINDS[symbol].name if symbol in KINDS else symbol
    return RoutineSize(symbol, kind, text, entries * image.extable_entry)


def routine_sizes(elf: str | Path | ElfImage, symbols: list[str] | None = None) -> dict[str, RoutineSize]:
    """symbol -> its size, for `symbols` (default: every routine bench knows
    that the ELF defines, in measure.bench.KINDS order)."""
    image = elf if isinstance(elf, ElfImage) else read_elf(elf)
    wanted = symbols if symbols is not None else [s for s in KINDS if s in image.symbols]
    return {s: routine_size(image, s) for s in wanted}
