"""copygen's bundled RV64 machine: S-mode, the kernel memory model, and the
cycle cost profiles that observe it.  Nothing else: measuring (benches,
workloads, ranking) is copygen.measure, the command line copygen.cli.

Public API (see docs/emulator.md): `Machine` (with `attach` for an
`Observer`), `CallResult`, `Fault`, the error types from `emu.errors`,
`decode`/`Insn`, and `load_profile`.
Imports nothing outside `emu`: never `gen`, `verify` or `measure`.
"""

from copygen.emu.api import RETURN_SENTINEL, STACK_TOP, CallResult, Machine
from copygen.emu.insn.decode import Insn, decode, disassemble
from copygen.emu.errors import (ConfigError, ElfError, EmuError, IllegalInstruction, MapError, Oops,
                                ProfileError, StepLimit, Trap)
from copygen.emu.hart.machine import Fault
from copygen.emu.hart.observer import Fanout, Observer
from copygen.emu.timing.profile import Profile, load_profile

# the modules of this package that only time a run (paths below it): a
# change to them can change a routine's cycles, never what it computes
TIMING_MODULES = frozenset(f"timing/{m}.py" for m in
                           ("__init__", "cost", "vcost", "ooo", "memhier", "predictor", "profile"))

__all__ = [
    "Machine", "CallResult", "Fault", "Observer", "Fanout", "RETURN_SENTINEL", "STACK_TOP",
    "Insn", "decode", "disassemble", "Profile", "load_profile", "TIMING_MODULES",
    "EmuError", "ConfigError", "ElfError", "IllegalInstruction", "MapError", "Oops", "ProfileError", "StepLimit", "Trap",
]
