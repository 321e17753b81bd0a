"""copygen's bundled RV64 emulator (S-mode, kernel memory model, cycle cost profiles).

Public API (see docs/emulator.md): `Machine`, `CallResult`, `Fault`, the error
types from `emu.errors`, `decode`/`Insn`, and `load_profile`.
Imports nothing outside `emu`: never `gen` or `verify`.
"""

from emu.api import RETURN_SENTINEL, STACK_TOP, CallResult, Machine
from emu.decode import Insn, decode, disassemble
from emu.errors import (ElfError, EmuError, IllegalInstruction, MapError, Oops, ProfileError,
                        StepLimit, Trap)
from emu.machine import Fault
from emu.profile import Profile, load_profile

__all__ = [
    "Machine", "CallResult", "Fault", "RETURN_SENTINEL", "STACK_TOP",
    "Insn", "decode", "disassemble", "Profile", "load_profile",
    "EmuError", "ElfError", "IllegalInstruction", "MapError", "Oops", "ProfileError", "StepLimit", "Trap",
]
