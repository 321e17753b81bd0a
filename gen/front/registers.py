"""Register rules of a target, checked where they are written.

`reserve t6, t5`: registers no generated instruction may name (a kernel
that keeps t6 for itself: mainline's hand-written assembly avoids it);
`jump t2`: the one register a computed jump may go through (a kernel with
landing pads exempts jumps through t2 from them).  Both are kept in the
frozen Target (gen.front.strategy) under the registers' ABI names; the
lowering honours them (gen.lower.registers) and the verifier's clause R1
checks them on the machine code.

Registers are written as the psABI names them (zero, ra, sp, gp, tp,
t0-t6, s0-s11 or fp, a0-a7) or as x0-x31.  Refused, each at its line:
an unknown name; a reserved register the calling convention needs in
every routine here (zero, ra, sp, and a0-a2, the arguments and the
result); a register named twice; a jump register that is not a temporary
the generated code may write (t0-t6, a3-a7) or that is also reserved.

May import copygen.errors, gen.front.parse and the standard library.
"""
from __future__ import annotations

from copygen.errors import CopygenError
from copygen.gen.front.parse import Setting

ABI = ("zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3",
       "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
       "t3", "t4", "t5", "t6")
# registers every routine here needs: a reserve of one cannot be honoured
NEEDED = ("zero", "ra", "sp", "a0", "a1", "a2")
# registers a computed jump may be routed through: temporaries no routine
# reads as an argument
JUMPABLE = ("t0", "t1", "t2", "t3", "t4", "t5", "t6", "a3", "a4", "a5", "a6", "a7")


def abi_name(word: str) -> str | None:
    """The ABI name of a register written as `t6`, `x31` or `fp`; None if
    `word` names none."""
    w = word.lower()
    if w == "fp":
        return "s0"
    if w in ABI:
        return w
    if w.startswith("x") and w[1:].isdigit() and str(int(w[1:])) == w[1:] and int(w[1:]) < 32:
        return ABI[int(w[1:])]
    return None


def refusal(reg: str) -> str | None:
    """Why `reg` (an ABI name) cannot be reserved, or None."""
    if reg in NEEDED:
        return (f"{reg} cannot be reserved: every routine needs it (zero, ra, sp, and a0-a2 "
                "for the arguments and the result)")
    return None


def _register(word: str, s: Setting) -> str:
    reg = abi_name(word)
    if reg is None:
        raise CopygenError(f"`{word}` is not a register", s.loc,
                           hint="write an ABI name (t0-t6, a0-a7, s0-s11, ra, sp, gp, tp) "
                                "or x0-x31")
    return reg


def reserve_setting(s: Setting) -> tuple[str, ...]:
    """The registers of a `reserve` line, as ABI names, in its order."""
    out: list[str] = []
    for word in s.values:
        reg = _register(word, s)
        why = refusal(reg)
        if why:
            raise CopygenError(why, s.loc, hint="reserve temporaries (t0-t6, a3-a7) or "
                                                "registers the code never writes")
        if reg in out:
            raise CopygenError(f"`reserve` names {reg} twice", s.loc, hint="name it once")
        out.append(reg)
    return tuple(out)


def jump_setting(s: Setting, reserve: tuple[str, ...]) -> str:
    """The register of a `jump` line, as an ABI name."""
    reg = _register(s.values[0], s)
    if reg not in JUMPABLE:
        raise CopygenError(f"a computed jump cannot go through {reg}", s.loc,
                           hint="name a temporary: " + ", ".join(JUMPABLE))
    if reg in reserve:
        raise CopygenError(f"{reg} is reserved, so no jump may go through it", s.loc,
                           hint="name another register for the jump, or do not reserve it")
    return reg


def rules_text(reserve: tuple[str, ...], jump: str | None) -> list[str]:
    """The target settings that state the rules, as they are written."""
    return ([f"reserve {', '.join(reserve)}"] if reserve else []) + \
        ([f"jump {jump}"] if jump else [])
