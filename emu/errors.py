"""Error types raised by the emulator.

Role: the one family of exceptions that `emu` lets escape to its callers; the
command line (in `gen`) maps `EmuError` to its own user-facing error.  Internal
invariant failures stay plain `AssertionError`s.
Imports: nothing from the project.
"""

from __future__ import annotations


class EmuError(Exception):
    """Base of every error the emulator reports to a caller."""


class ElfError(EmuError):
    """The ELF file is missing, unreadable, not RISC-V 64, or lacks a symbol."""


class IllegalInstruction(EmuError):
    """An encoding the decoder does not accept (reserved, FP, unknown)."""

    def __init__(self, pc: int | None, raw: int, length: int, why: str = "") -> None:
        self.pc, self.raw, self.length = pc, raw, length
        where = f"at pc {pc:#x}" if pc is not None else ""
        width = 4 if length == 2 else 8
        extra = f" ({why})" if why else ""
        super().__init__(f"illegal instruction {where}: .insn {raw:#0{width + 2}x}{extra}".replace("  ", " "))


class Oops(EmuError):
    """A fault that no `__ex_table` entry covers (what the kernel calls an oops)."""

    def __init__(self, pc: int, addr: int, cause: str) -> None:
        self.pc, self.addr, self.cause = pc, addr, cause
        super().__init__(f"oops: {cause} at address {addr:#x}, pc {pc:#x}")


class Trap(EmuError):
    """ecall / ebreak reached: the routines under test never execute them."""

    def __init__(self, pc: int, cause: str) -> None:
        self.pc, self.cause = pc, cause
        super().__init__(f"trap: {cause} at pc {pc:#x}")


class StepLimit(EmuError):
    """The step limit was reached: most likely a runaway loop."""

    def __init__(self, pc: int, limit: int) -> None:
        self.pc, self.limit = pc, limit
        super().__init__(f"step limit of {limit} instructions reached at pc {pc:#x} (runaway loop?)")


class MapError(EmuError):
    """A bad `map`/`read`/`write` request (unaligned page range, unmapped bytes)."""


class ConfigError(EmuError):
    """A machine parameter out of range (e.g. a VLEN the model does not support)."""


class ProfileError(EmuError):
    """A cost profile file is missing or malformed."""
