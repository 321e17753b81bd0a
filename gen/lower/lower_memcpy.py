"""Lowering of an assembly memcpy (`form asm`): Phases -> ir.Function.

A memcpy is a copy whose memory never faults and whose caller never
holds SUM: the body gen.lower.lower_uaccess lays out for a copy_user whose
caller holds SUM (no csrs/csrc) is that copy once its accesses lose their
exception-table entries, its fault exits go, and it returns dst instead
of 0.  So memcpy takes every phase a copy_user takes (size classes, ends
in pieces, the loops in line or out of it) and the same schedules.

dst is kept in a7 for the return: the copy's register pools leave a7 out
(`keep`), and gen.lower.lower_uaccess refuses a strategy that would need it.

`bytes below T unroll K` adds one path a copy_user does not have: a call
shorter than T whose dst is misaligned leaves the alignment head at its
first instruction for a loop of K-byte blocks (every load of a block
before its first store), then the byte loop for the rest.  On a short
call the head's pieces, the size classes' tests and the tail's pieces
cost more than the bytes themselves.

Role: turn the user copy's Function into memcpy's.  May import gen.emission.ir,
gen.lower.lower_uaccess, gen.lower.registers, gen.front.strategy.
"""
from __future__ import annotations

from dataclasses import replace

from copygen.gen.emission.ir import Function, Insn, Label, Phase
from copygen.gen.lower.lower_uaccess import copy_user_function
from copygen.gen.lower.registers import honour
from copygen.gen.front.strategy import CopyUser, StringLib

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


BYTE_TEMPS = ("t0", "t2", "t3", "t4", "t5", "t6", "a4", "a5")


def _short_test(ph: Phase, below: int) -> Phase:
    """The head's first instructions send a short call to the byte blocks.
    The entry leaves n in a2 and dst where it was: the head is entered
    straight from the alignment check."""
    test = (Insn("li", ("t0", str(below)), note="`bytes below`: a short call"),
            Insn("bltu", ("a2", "t0", f".L{PFX}_short"), note="copies bytes"))
    return replace(ph, why=ph.why + (f"A call shorter than {below} bytes (n is still in a2) "
                                     "takes the short copy.",),
                   pseudo=(f"if (n < {below}) goto short;",) + ph.pseudo, body=test + ph.body)


def _short_phase(below: int, k: int) -> Phase:
    temps = BYTE_TEMPS[:k]
    body: list = [Insn("andi", ("t1", "a2", f"-{k}")),
                  Insn("add", ("t1", "t1", "a0"), note=f"end of the whole {k}-byte blocks"),
                  Label("1")]
    body += [Insn("lbu", (t, f"{i}(a1)")) for i, t in enumerate(temps)]
    body += [Insn("sb", (t, f"{i}(a0)")) for i, t in enumerate(temps)]
    body += [Insn("addi", ("a0", "a0", str(k))), Insn("addi", ("a1", "a1", str(k))),
             Insn("bltu", ("a0", "t1", "1b")),
             Insn("j", (f".L{PFX}_bytes",), note="the last bytes, one at a time")]
    return Phase(f".L{PFX}_short", "Short copy, misaligned dst",
                 (f"Fewer than {below} bytes and dst not word-aligned: blocks of {k} bytes,",
                  "each loaded whole before the first of it is stored (a byte's load",
                  "does not wait for the store before it), then the byte loop.",
                  f"`small below` (at least {k}) guarantees one whole block."),
                 (f"do {{ copy {k} bytes; dst += {k}; src += {k}; }} while (dst < block end);",
                  "goto bytes;"),
                 (("t1", "end of the whole blocks"),) + tuple((t, "byte in flight") for t in temps),
                 tuple(body))


def memcpy_function(lib: StringLib) -> Function:
    """__memcpy (weak alias memcpy) from the user copy's lowering of the
    memcpy block's phases."""
    assert lib.memcpy_asm
    cu = CopyUser(lib.name, lib.target, lib.memcpy, lib.loc)
    fn = copy_user_function(cu, sum_held=True, prefix=PFX, keep=(SAVED,))
    phases = []
    below = lib.memcpy.bytes_below
    for i, ph in enumerate(fn.phases):
        ph = _kernel_only(ph)
        if i == 0:
            ph = _entry(ph)
        elif _is_done(ph):
            ph = _done(ph)
        elif below and ph.label == f".L{PFX}_head":
            ph = _short_test(ph, below)
        phases.append(ph)
    if below:
        # validation asks for size classes, whose head is out of line
        assert any(ph.label == f".L{PFX}_head" for ph in phases)
        # last, so that the head's branch to it is a forward one: predicted
        # not taken, free for every call that is not short
        phases.append(_short_phase(below, lib.memcpy.bytes_unroll))
    fn = Function(
        "__memcpy", (), ("Copy n bytes from src to dst; the buffers do not overlap.",),
        (("a0", "dst"), ("a1", "src"), ("a2", "n")), "a0: dst", tuple(phases))
    # the short copy's temporaries come after the copy's own renaming
    return honour(fn, lib.target.reserve, lib.target.jump, (), lib.target.loc)
