"""Lowering of an assembly memcpy (`form asm`): Phases -> ir.Function.

A memcpy is a copy whose memory never faults and whose caller never
holds SUM: the body gen.lower_uaccess lays out for a copy_user whose
caller holds SUM (no csrs/csrc) is that copy once its accesses lose their
exception-table entries, its fault exits go, and it returns dst instead
of 0.  So memcpy takes every phase a copy_user takes (size classes, ends
in pieces, the loops in line or out of it) and the same schedules.

dst is kept in a7 for the return: the copy's register pools leave a7 out
(`keep`), and gen.lower_uaccess refuses a strategy that would need it.

Role: turn the user copy's Function into memcpy's.  May import gen.ir,
gen.lower_uaccess, gen.strategy.
"""
from __future__ import annotations

from dataclasses import replace

from copygen.gen.ir import Function, Insn, Phase
from copygen.gen.lower_uaccess import copy_user_function
from copygen.gen.strategy import CopyUser, StringLib

SAVED = "a7"
PFX = "memcpy"


def _kernel_only(ph: Phase) -> Phase:
    """The phase without exception-table entries."""
    return replace(ph, body=tuple(replace(i, fixup=None) if isinstance(i, Insn) and i.fixup
                                  else i for i in ph.body))


def _entry(ph: Phase) -> Phase:
    rest = ph.why[1:] if ph.why and "SUM" in ph.why[0] else ph.why
    return replace(ph, why=("Keep dst for the return value and remember where it ends,",
                            *rest),
                   regs=((SAVED, "dst, returned"),) + ph.regs,
                   body=(Insn("mv", (SAVED, "a0")),) + ph.body)


def _done(ph: Phase) -> Phase:
    return replace(ph, why=("Every byte was copied: return dst.",),
                   body=(Insn("mv", ("a0", SAVED)), Insn("ret")))


def _is_done(ph: Phase) -> bool:
    return ph.title == "Done"


def memcpy_function(lib: StringLib) -> Function:
    """__memcpy (weak alias memcpy) from the user copy's lowering of the
    memcpy block's phases."""
    assert lib.memcpy_asm
    cu = CopyUser(lib.name, lib.target, lib.memcpy, lib.loc)
    fn = copy_user_function(cu, sum_held=True, prefix=PFX, keep=(SAVED,))
    phases = []
    for i, ph in enumerate(fn.phases):
        ph = _kernel_only(ph)
        if i == 0:
            ph = _entry(ph)
        elif _is_done(ph):
            ph = _done(ph)
        phases.append(ph)
    return Function(
        "__memcpy", (), ("Copy n bytes from src to dst; the buffers do not overlap.",),
        (("a0", "dst"), ("a1", "src"), ("a2", "n")), "a0: dst", tuple(phases))
