"""Decoder: raw instruction bits -> `Insn`, driven by `emu.insn.isa.TABLE`.

Role: turn 16/32-bit encodings into frozen `Insn` records (compressed ones
already expanded to their base instruction), and give a short disassembly
for error messages.  Shared by the interpreter, the block translator and the
verifier.
Imports: emu.insn.isa, emu.errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from copygen.emu.errors import IllegalInstruction
from copygen.emu.insn.isa import IMM_LAYOUTS, REG_FIELDS, TABLE, VECTOR_NAMES, Encoding

ABI = ("zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
       "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3",
       "t4", "t5", "t6")


@dataclass(frozen=True, slots=True)
class Insn:
    """A decoded instruction.  `name` is the base mnemonic (c.addi -> addi);
    `asm` the mnemonic as encoded; `imm` is sign-extended where the format is
    signed (lui/auipc hold the value already shifted left by 12).  Vector
    instructions keep vd/vs3 in `rd`, vs2 in `rs2`, vsetivli's AVL in `rs1`
    (see `INSN_SLOT`) and the mask bit in `vm` (1 = unmasked, also for every
    scalar instruction)."""

    name: str
    rd: int = 0
    rs1: int = 0
    rs2: int = 0
    imm: int = 0
    csr: int = 0
    length: int = 4
    raw: int = 0
    asm: str = ""
    vm: int = 1

    def __str__(self) -> str:
        return disassemble(self)


# Operand name in the table -> the `Insn` slot that holds it.
INSN_SLOT = {"rd": "rd", "rs1": "rs1", "rs2": "rs2", "imm": "imm", "csr": "csr", "vm": "vm",
             "vd": "rd", "vs3": "rd", "vs2": "rs2", "uimm": "rs1"}


def _field(raw: int, source: str) -> int:
    hi, lo, add = REG_FIELDS[source]
    return ((raw >> lo) & ((1 << (hi - lo + 1)) - 1)) + add


def _imm(raw: int, layout: str) -> int:
    signed, parts = IMM_LAYOUTS[layout]
    value = top = 0
    for hi, lo, dest in parts:
        width = hi - lo + 1
        value |= ((raw >> lo) & ((1 << width) - 1)) << dest
        top = max(top, dest + width - 1)
    if signed and value >> top & 1:
        value -= 1 << (top + 1)
    return value


def _operand(raw: int, kind: str, source: str | int) -> int:
    if isinstance(source, int):
        return source
    if kind == "imm":
        return _imm(raw, source)
    return _field(raw, source)


def _buckets() -> dict[tuple[int, int], list[Encoding]]:
    """Rows by (length, low opcode bits), most specific mask first."""
    out: dict[tuple[int, int], list[Encoding]] = {}
    for enc in TABLE:
        key = (4, enc.match & 0x7F) if enc.length == 4 else (2, enc.match & 0xE003)
        out.setdefault(key, []).append(enc)
    for rows in out.values():
        rows.sort(key=lambda e: -bin(e.mask).count("1"))
    return out


_BUCKETS = _buckets()


def insn_length(low_half: int) -> int:
    """Length in bytes from the first 16-bit parcel (only 2 and 4 are supported)."""
    return 4 if low_half & 3 == 3 else 2


@lru_cache(maxsize=65536)
def decode(raw: int, pc: int | None = None) -> Insn:
    """Decode one instruction.  `raw` holds 16 or 32 bits (by its low bits).

    Raises IllegalInstruction (with pc and raw bits) for anything not in the table,
    including reserved compressed encodings and FP instructions."""
    length = insn_length(raw)
    if length == 4:
        raw &= 0xFFFFFFFF
        if raw & 0x1C == 0x1C:
            raise IllegalInstruction(pc, raw, 4, "longer than 32 bits")
        rows = _BUCKETS.get((4, raw & 0x7F), ())
    else:
        raw &= 0xFFFF
        if raw == 0:
            raise IllegalInstruction(pc, raw, 2, "all-zero parcel")
        rows = _BUCKETS.get((2, raw & 0xE003), ())
    for enc in rows:
        if raw & enc.mask == enc.match:
            return _build(enc, raw, pc)
    raise IllegalInstruction(pc, raw, length, "not RV64IMC/Zicsr/V-subset")


def _build(enc: Encoding, raw: int, pc: int | None) -> Insn:
    fields = {kind: _operand(raw, kind, source) for kind, source in enc.operands if kind[0] != "_"}
    for kind in enc.nonzero:
        if fields.get(kind, 0) == 0:
            raise IllegalInstruction(pc, raw, enc.length, f"reserved {enc.asm} with {kind}=0")
    return make_insn(enc, fields, raw)


def make_insn(enc: Encoding, fields: dict[str, int], raw: int) -> Insn:
    """The `Insn` of row `enc` with operand values `fields` (named as in the table)."""
    slots = {INSN_SLOT[kind]: v for kind, v in fields.items()}
    return Insn(enc.name, slots.get("rd", 0), slots.get("rs1", 0), slots.get("rs2", 0),
                slots.get("imm", 0), slots.get("csr", 0), enc.length, raw, enc.asm, slots.get("vm", 1))


_LOADS = {"lb", "lh", "lw", "ld", "lbu", "lhu", "lwu"}
_STORES = {"sb", "sh", "sw", "sd"}
_BRANCHES = {"beq", "bne", "blt", "bge", "bltu", "bgeu"}


def disassemble(i: Insn, pc: int | None = None) -> str:
    """A readable, objdump-like rendering (base form; compressed marked `c.`)."""
    text = _render(i, pc)
    return f"{text}  [{i.asm}]" if i.length == 2 else text


def _render(i: Insn, pc: int | None) -> str:
    r = ABI
    n = i.name
    if i.name in _LOADS or i.name == "jalr":
        return f"{n} {r[i.rd]}, {i.imm}({r[i.rs1]})"
    if i.name in _STORES:
        return f"{n} {r[i.rs2]}, {i.imm}({r[i.rs1]})"
    if i.name in _BRANCHES:
        where = f"{pc + i.imm:#x}" if pc is not None else f"pc{i.imm:+d}"
        return f"{n} {r[i.rs1]}, {r[i.rs2]}, {where}"
    if i.name == "jal":
        where = f"{pc + i.imm:#x}" if pc is not None else f"pc{i.imm:+d}"
        return f"{n} {r[i.rd]}, {where}"
    if i.name in ("lui", "auipc"):
        return f"{n} {r[i.rd]}, {(i.imm >> 12) & 0xFFFFF:#x}"
    if i.name.startswith("csrr"):
        src = str(i.imm) if i.name.endswith("i") else r[i.rs1]
        return f"{n} {r[i.rd]}, {i.csr:#x}, {src}"
    if i.name in ("ecall", "ebreak", "wfi", "fence", "fence.i"):
        return n
    if i.name in VECTOR_NAMES:
        return _render_vector(i)
    if _is_rtype(i):
        return f"{n} {r[i.rd]}, {r[i.rs1]}, {r[i.rs2]}"
    return f"{n} {r[i.rd]}, {r[i.rs1]}, {i.imm}"


def _render_vector(i: Insn) -> str:
    r, n = ABI, i.name
    if n == "vsetvli" or n == "vsetivli":
        avl = str(i.rs1) if n == "vsetivli" else r[i.rs1]
        return f"{n} {r[i.rd]}, {avl}, {i.imm:#x}"
    if n == "vsetvl":
        return f"{n} {r[i.rd]}, {r[i.rs1]}, {r[i.rs2]}"
    if n == "vmv.v.i":
        return f"{n} v{i.rd}, {i.imm}"
    if n.startswith("vmv"):
        return f"{n} v{i.rd}, v{i.rs2}"
    stride = f", {r[i.rs2]}" if n.startswith(("vlse", "vsse")) else ""
    return f"{n} v{i.rd}, ({r[i.rs1]}){stride}" + ("" if i.vm else ", v0.t")


def _is_rtype(i: Insn) -> bool:
    return not (i.name.endswith("i") or i.name.endswith("iw") or i.name == "sltiu")
