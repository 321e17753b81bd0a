"""The register rules a routine may be proved under: clause R1.

A kernel may keep registers for itself (mainline's hand-written assembly
leaves t6 alone, `-ffixed-<reg>` keeps one from the compiler) and may
route computed jumps through one register (with landing pads, jumps
through t2 need none).  R1, asked only when rules are given: no
instruction on any path the proof explores writes a reserved register
(so an interrupt, a fault handler or a callee never sees it changed, and
at every return it holds its value from the entry, which the proof also
checks), and every `jalr` goes through ra (a return, or a call's link
register) or through the allowed jump register.  Writes are read from the
decoded instruction stream (an `rd` slot naming the register), never from
the assembly text, so a body that breaks a rule is refused by proof.

Role: the rules as data, and what one instruction does against them.
May import emu.insn.decode, emu.insn.isa, copygen.errors and the standard library.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from copygen.emu.insn.decode import ABI
from copygen.emu.insn.isa import TABLE
from copygen.errors import CopygenError

# the instructions that write the integer register in their `rd` slot
WRITES_RD = frozenset(e.name for e in TABLE if any(kind == "rd" for kind, _ in e.operands))
# registers a rule cannot reserve: every routine writes or needs them
NEEDED = ("zero", "ra", "sp", "a0", "a1", "a2")
RA = 1


def register_number(word: str) -> int:
    """x0-x31 of a register written as an ABI name (or fp) or as xN."""
    w = word.strip().lower()
    if w == "fp":
        return 8
    if w in ABI:
        return ABI.index(w)
    if w.startswith("x") and w[1:].isdigit() and str(int(w[1:])) == w[1:] and int(w[1:]) < 32:
        return int(w[1:])
    raise CopygenError(f"`{word}` is not a register",
                       hint="write an ABI name (t0-t6, a0-a7, s0-s11, gp, tp) or x0-x31")


@dataclass(frozen=True)
class RegisterRules:
    """Registers never written (ABI names, sorted by number), and the one
    register a computed jump may go through (None: any)."""

    reserved: tuple[str, ...] = ()
    jump: str | None = None

    def __bool__(self) -> bool:
        return bool(self.reserved or self.jump)

    @property
    def reserved_numbers(self) -> tuple[int, ...]:
        return tuple(ABI.index(r) for r in self.reserved)

    @property
    def jump_number(self) -> int | None:
        return None if self.jump is None else ABI.index(self.jump)

    def key(self) -> str:
        """What a proof cache key adds for these rules ("" for none)."""
        return f"reserve={','.join(self.reserved)};jump={self.jump or ''}" if self else ""

    def text(self) -> str:
        """The rules in words: `t6 reserved; computed jumps only through t2`."""
        parts = [f"{', '.join(self.reserved)} reserved"] if self.reserved else []
        if self.jump:
            parts.append(f"computed jumps only through {self.jump}")
        return "; ".join(parts)

    def as_dict(self) -> dict:
        return {"reserve": list(self.reserved), "jump_register": self.jump}


def make_rules(reserve: Iterable[str] = (), jump: str | None = None) -> RegisterRules:
    """Rules from register names as a user writes them; a name that is no
    register, a reserve of one every routine needs, or a jump register that
    is also reserved is a CopygenError (exit 2)."""
    nums = sorted({register_number(r) for r in reserve})
    for n in nums:
        if ABI[n] in NEEDED:
            raise CopygenError(f"{ABI[n]} cannot be reserved: every routine writes or needs it",
                               hint="reserve temporaries (t0-t6, a3-a7) or registers the code "
                                    "never writes")
    j = None if jump is None else register_number(jump)
    if j is not None and (j in nums or ABI[j] in NEEDED):
        raise CopygenError(f"a computed jump cannot be limited to {ABI[j]}",
                           hint="the jump register must be a temporary that is not reserved")
    return RegisterRules(tuple(ABI[n] for n in nums), None if j is None else ABI[j])


def breaks(insn, rules: RegisterRules) -> str | None:
    """What `insn` (emu.insn.decode.Insn) does against the rules, or None."""
    if insn.name in WRITES_RD and insn.rd and insn.rd in rules.reserved_numbers:
        return f"writes {ABI[insn.rd]}, a reserved register ({insn})"
    if rules.jump is not None and insn.name == "jalr" and insn.rs1 not in (RA, rules.jump_number):
        return f"a computed jump through {ABI[insn.rs1]}, not {rules.jump} ({insn})"
    return None
