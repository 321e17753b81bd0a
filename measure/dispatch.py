"""The kernel's vector dispatch, as the bench times it.

A vector kernel copies n bytes with __asm_copy_to_user's scalar code below
riscv_v_usercopy_threshold and, from it on, inside a kernel vector section
with __asm_vector_usercopy (docs/vector.md).  `Dispatched` wraps a Bench of an
ELF that has both routines: a copy_to_user case of `threshold` bytes or
more runs the vector routine and is charged the section's cycles on top,
measured on the same profile from shim/vector_section.S: "clean" (no user
vector state: the unit switched on and off) or "dirty" (the user's state
saved and restored too).  The dispatch's compare and the C glue's own
instructions are not charged; a copy that faults is not benched.

The vector state of a workload is the share of its vector calls that find
the user's vector state dirty, a number from 0 ("clean", the default) to 1
("dirty"); a vector call costs the clean section plus that share of what
the dirty one adds (the expected cost per call: the share is taken to be
the same at every size).  `parse_vector_state` reads it as `copygen tune
--vector-state` takes it, `vector_state_name` writes it back in the
canonical spelling stores and reports use (0 and 1 are clean and dirty).

clear_user goes the same way (docs/vector.md: our dispatch at the top of
__clear_user and a glue like the copy's): a clear_user case of the
threshold or more runs __asm_vector_clear_user, charged the same section.

Role: composed cycles for the tuner and the bench scripts.  May import emu,
measure.bench and copygen.errors.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from copygen.emu.api import Machine
from copygen.emu.timing.profile import Profile
from copygen.errors import CopygenError
from copygen.measure.bench import KINDS, Bench, Case, Sample

SECTIONS = ("clean", "dirty")
SAVE_AREA = 0x7800_0000     # kernel memory for the dirty section's save area
COPY, VECTOR = "__asm_copy_to_user", "__asm_vector_usercopy"
COPY_FROM = "__asm_copy_from_user"
CLEAR, VECTOR_CLEAR = "__clear_user", "__asm_vector_clear_user"
# the routine the dispatch runs from the threshold on, for each it serves
# (the kernel's glue dispatches both directions of the copy)
VECTOR_PATH = {COPY: VECTOR, COPY_FROM: VECTOR, CLEAR: VECTOR_CLEAR}


def parse_vector_state(text: str) -> float:
    """The share of vector calls with dirty user vector state: `clean` (0),
    `dirty` (1) or a number from 0 to 1 (0.25)."""
    word = str(text).strip().lower()
    if word in SECTIONS:
        return float(SECTIONS.index(word))
    try:
        share = float(word)
    except ValueError:
        share = -1.0
    if not 0.0 <= share <= 1.0:        # NaN fails this too
        raise CopygenError(f"--vector-state {text!r}: give clean, dirty, or the share of vector "
                           "calls that find the user's vector state dirty, from 0 to 1 (e.g. 0.25)")
    return share


def vector_state_name(share: float) -> str:
    """`clean`, `dirty`, or the share as the shortest text that reads back
    as it (0.25): the key of a state in stores and reports."""
    return SECTIONS[int(share)] if share in (0.0, 1.0) else repr(float(share))


def section_cost(sections: dict[str, int], share: float) -> float:
    """Expected cycles of the section around one vector call when `share`
    of the calls find dirty user state (`sections`: section_cycles)."""
    if share in (0.0, 1.0):
        return sections[SECTIONS[int(share)]]
    return sections["clean"] + share * (sections["dirty"] - sections["clean"])


def section_cycles(elf: str | Path, profile: str | Profile) -> dict[str, int]:
    """Warm cycles of the section's entry and exit, clean and dirty."""
    m = Machine.from_elf(elf, profile)
    m.map(SAVE_AREA, 2 * 4096, user=False)
    out = {}
    for name, args in (("clean", ()), ("dirty", (SAVE_AREA,))):
        m.call(f"vector_section_{name}", *args, vector_at_entry=True)
        out[name] = m.call(f"vector_section_{name}", *args, vector_at_entry=True).cycles or 0
    return out


class Dispatched:
    """Stands in for a Bench where `run` and `machine` are what is used (the
    tuner's evaluation): cases of `routine` (copy_to_user, or clear_user)
    of `threshold` bytes or more take its vector path, charged `section`
    cycles on top (section_cost: a share of dirty calls makes it a
    fraction, and the case's cycles an expected value)."""

    def __init__(self, bench: Bench, threshold: int, section: float, routine: str = COPY) -> None:
        self.bench, self.threshold, self.section = bench, threshold, section
        self.routine = routine

    @property
    def machine(self):
        return self.bench.machine

    def run(self, case: Case) -> Sample:
        if case.routine != self.routine or case.size < self.threshold:
            return self.bench.run(case)
        s = self.bench.run(replace(case, routine=VECTOR_PATH[self.routine]))
        return replace(s, routine=self.routine, kind=KINDS[self.routine].name,
                       cycles=s.cycles + self.section)
