"""Encoder: the inverse of the decoder, from the same table.

Role: build instruction bits from a mnemonic and operands (`encode("c.addi",
rd=10, rs1=10, imm=-3)`), for tests that generate random programs without a
toolchain, and as a round-trip check of `emu.insn.isa` (decode(encode(x)) == x).
Raises ValueError when an operand does not fit the encoding.
Imports: emu.insn.isa, emu.insn.decode, emu.errors.
"""

from __future__ import annotations

from copygen.emu.insn.decode import decode, make_insn
from copygen.emu.errors import IllegalInstruction
from copygen.emu.insn.isa import IMM_LAYOUTS, REG_FIELDS, TABLE

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


def encode(asm: str, **operands: int) -> int:
    """Encode `asm` (a base or `c.` mnemonic) from operands named as in its
    table row (rd, rs1, rs2, imm, csr; vd, vs2, vs3, vm, uimm for vector rows;
    missing ones are 0, vm 1).  The result is checked by decoding."""
    try:
        enc = _BY_ASM[asm]
    except KeyError:
        raise ValueError(f"unknown instruction {asm!r}") from None
    names = {kind for kind, _ in enc.operands if kind[0] != "_"}
    if set(operands) - names - {"rd", "rs1", "rs2", "imm", "csr"}:
        raise ValueError(f"{asm}: no operand {sorted(set(operands) - names)}")
    given = {kind: operands.get(kind, int(kind == "vm")) for kind in names}
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
    want = make_insn(enc, given, raw)
    if got != want:
        raise ValueError(f"{asm} {given}: not encodable (decodes as {got.asm} {got})")
    return raw
