"""The kernel's vector dispatch, as the bench times it.

A vector kernel copies n bytes with __asm_copy_to_user's scalar code below
riscv_v_usercopy_threshold and, from it on, inside a kernel vector section
with __asm_vector_usercopy (DOMAIN.md §8).  `Dispatched` wraps a Bench of an
ELF that has both routines: a copy_to_user case of `threshold` bytes or
more runs the vector routine and is charged the section's cycles on top,
measured on the same profile from shim/vector_section.S: "clean" (no user
vector state: the unit switched on and off) or "dirty" (the user's state
saved and restored too).  The dispatch's compare and the C glue's own
instructions are not charged; a copy that faults is not benched.

Role: composed cycles for the tuner and the bench scripts.  May import emu
and measure.bench.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from copygen.emu.api import Machine
from copygen.emu.profile import Profile
from copygen.measure.bench import KINDS, Bench, Case, Sample

SECTIONS = ("clean", "dirty")
SAVE_AREA = 0x7800_0000     # kernel memory for the dirty section's save area
COPY, VECTOR = "__asm_copy_to_user", "__asm_vector_usercopy"


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
    tuner's evaluation): copy_to_user cases of `threshold` bytes or more
    take the vector path."""

    def __init__(self, bench: Bench, threshold: int, section: int) -> None:
        self.bench, self.threshold, self.section = bench, threshold, section

    @property
    def machine(self):
        return self.bench.machine

    def run(self, case: Case) -> Sample:
        if case.routine != COPY or case.size < self.threshold:
            return self.bench.run(case)
        s = self.bench.run(replace(case, routine=VECTOR))
        return replace(s, routine=COPY, kind=KINDS[COPY].name, cycles=s.cycles + self.section)
