"""Encoder: the inverse of the decoder, from the same table.

Role: build instruction bits from a mnemonic and operands (`encode("c.addi",
rd=10, rs1=10, imm=-3)`), for tests that generate random programs without a
toolchain, and as a round-trip check of `emu.isa` (decode(encode(x)) == x).
Raises ValueError when an operand does not fit the encoding.
Imports: emu.isa, emu.decode, emu.errors.
"""

from __future__ import annotations

from copygen.emu.decode import Insn, decode
from copygen.emu.errors import IllegalInstruction
from copygen.emu.isa import IMM_LAYOUTS, REG_FIELDS, TABLE

_BY_ASM = {enc.asm: enc for enc in TABLE}


def _put_field(source: str, value: int) -> int:
    hi, lo, add = REG_FIELDS[source]
    v = value - add
    if not 0 <= v < 1 << (hi - lo + 1):
        raise ValueError(f"register x{value} does not fit field {source}")
    return v << lo


def _put_imm(layout: str, value: int) -> int:
    bits = 0
    for hi, lo, dest in IMM_LAYOUTS[layout][1]:
        width = hi - lo + 1
        bits |= ((value >> dest) & ((1 << width) - 1)) << lo
    return bits


def encode(asm: str, *, rd: int = 0, rs1: int = 0, rs2: int = 0, imm: int = 0, csr: int = 0) -> int:
    """Encode `asm` (a base or `c.` mnemonic).  The result is checked by decoding."""
    try:
        enc = _BY_ASM[asm]
    except KeyError:
        raise ValueError(f"unknown instruction {asm!r}") from None
    given = {"rd": rd, "rs1": rs1, "rs2": rs2, "imm": imm, "csr": csr}
    raw, placed = enc.match, {}
    for kind, source in enc.operands:
        if kind[0] == "_":
            continue
        if isinstance(source, int):
            if given[kind] != source:
                raise ValueError(f"{asm}: {kind} must be {source}")
            continue
        if placed.get(source, given[kind]) != given[kind]:
            raise ValueError(f"{asm}: operands sharing field {source} differ")
        placed[source] = given[kind]
        raw |= _put_imm(source, given[kind]) if kind == "imm" else _put_field(source, given[kind])
    try:
        got = decode(raw)
    except IllegalInstruction as e:
        raise ValueError(f"{asm} {given}: reserved encoding ({e})") from None
    want = Insn(enc.name, *(given[k] if any(k == o for o, _ in enc.operands) else 0
                            for k in ("rd", "rs1", "rs2", "imm", "csr")), enc.length, raw, asm)
    if got != want:
        raise ValueError(f"{asm} {given}: not encodable (decodes as {got.asm} {got})")
    return raw
