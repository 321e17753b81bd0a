"""The RV64 encoding table: data, checked when imported.

Role: one table drives the decoder (`emu.insn.decode`), the interpreter, the block
translator and, later, the symbolic step of the verifier.  Rows are written
like riscv-opcodes: a bit pattern (`0`/`1` fixed, `.` a field bit, spaces for
readability), a format naming which fields the remaining bits hold.  Compressed
rows name the base instruction they expand to and where its operands come from.

Covered: RV64I, M, C (no FP loads/stores), Zicsr, fence/fence.i, ecall,
ebreak, wfi, and the part of RVV 1.0 copy code uses (`VECTOR`: vset{i}vl{i},
unit-stride, strided, fault-only-first and whole-register loads and stores,
whole-register moves, and vmv.v.i, the splat a vector fill starts from).  Anything else decodes as an illegal instruction.
Vector rows name their register operands `vd`/`vs2`/`vs3` (vector registers,
held in the decoded `rd`/`rs2` slots), `vm` (bit 25: 1 = unmasked) and `uimm`
(vsetivli's AVL, in the `rs1` slot), so only `rd`/`rs1`/`rs2` ever name a
scalar register.

Checks at import (errors name the instruction): every bit of a row is either
fixed or belongs to exactly one field of its format; two rows of the same
length may overlap only when one's fixed bits strictly contain the other's
(then the more specific row wins, e.g. `c.jr` inside `c.mv`).
Imports: nothing from the project.
"""

from __future__ import annotations

from dataclasses import dataclass

# --- bit fields -----------------------------------------------------------

# Register / csr fields: name -> (hi, lo, add).  Compressed "prime" registers
# (x8..x15) are a 3-bit field plus 8.
REG_FIELDS: dict[str, tuple[int, int, int]] = {
    "rd": (11, 7, 0), "rs1": (19, 15, 0), "rs2": (24, 20, 0), "csr": (31, 20, 0),
    "c_rd": (11, 7, 0), "c_rs2": (6, 2, 0),
    "c_rdp": (4, 2, 8), "c_rs1p": (9, 7, 8), "c_rs2p": (4, 2, 8),
    "vm": (25, 25, 0),
}

# Immediate layouts: name -> (signed, ((inst_hi, inst_lo, imm_lo), ...)).
# The sign bit (when signed) is the highest immediate bit produced.
IMM_LAYOUTS: dict[str, tuple[bool, tuple[tuple[int, int, int], ...]]] = {
    "I": (True, ((31, 20, 0),)),
    "S": (True, ((31, 25, 5), (11, 7, 0))),
    "B": (True, ((31, 31, 12), (30, 25, 5), (11, 8, 1), (7, 7, 11))),
    "U": (True, ((31, 12, 12),)),
    "J": (True, ((31, 31, 20), (30, 21, 1), (20, 20, 11), (19, 12, 12))),
    "SH6": (False, ((25, 20, 0),)),
    "SH5": (False, ((24, 20, 0),)),
    "CSRI": (False, ((19, 15, 0),)),
    "VTYPE11": (False, ((30, 20, 0),)),  # vsetvli's vtype immediate
    "VTYPE10": (False, ((29, 20, 0),)),  # vsetivli's
    "SIMM5": (True, ((19, 15, 0),)),     # OPIVI's 5-bit signed immediate (vmv.v.i)
    # compressed (RVC chapter of the unprivileged spec)
    "CIW4SPN": (False, ((12, 11, 4), (10, 7, 6), (6, 6, 2), (5, 5, 3))),
    "CLW": (False, ((12, 10, 3), (6, 6, 2), (5, 5, 6))),
    "CLD": (False, ((12, 10, 3), (6, 5, 6))),
    "CI": (True, ((12, 12, 5), (6, 2, 0))),
    "CSH": (False, ((12, 12, 5), (6, 2, 0))),
    "C16SP": (True, ((12, 12, 9), (6, 6, 4), (5, 5, 6), (4, 3, 7), (2, 2, 5))),
    "CLUI": (True, ((12, 12, 17), (6, 2, 12))),
    "CJ": (True, ((12, 12, 11), (11, 11, 4), (10, 9, 8), (8, 8, 10), (7, 7, 6),
                  (6, 6, 7), (5, 3, 1), (2, 2, 5))),
    "CB": (True, ((12, 12, 8), (11, 10, 3), (6, 5, 6), (4, 3, 1), (2, 2, 5))),
    "CLWSP": (False, ((12, 12, 5), (6, 4, 2), (3, 2, 6))),
    "CLDSP": (False, ((12, 12, 5), (6, 5, 3), (4, 2, 6))),
    "CSWSP": (False, ((12, 9, 2), (8, 7, 6))),
    "CSDSP": (False, ((12, 10, 3), (9, 7, 6))),
}

# 32-bit formats: operand -> field or layout name.  "_" entries are fields the
# instruction ignores (fence's pred/succ/fm, rs1, rd).
FORMATS: dict[str, dict[str, str]] = {
    "R": {"rd": "rd", "rs1": "rs1", "rs2": "rs2"},
    "I": {"rd": "rd", "rs1": "rs1", "imm": "I"},
    "S": {"rs1": "rs1", "rs2": "rs2", "imm": "S"},
    "B": {"rs1": "rs1", "rs2": "rs2", "imm": "B"},
    "U": {"rd": "rd", "imm": "U"},
    "J": {"rd": "rd", "imm": "J"},
    "SH6": {"rd": "rd", "rs1": "rs1", "imm": "SH6"},
    "SH5": {"rd": "rd", "rs1": "rs1", "imm": "SH5"},
    "CSR": {"rd": "rd", "rs1": "rs1", "csr": "csr"},
    "CSRI": {"rd": "rd", "imm": "CSRI", "csr": "csr"},
    "FENCE": {"_hi": "fence_hi", "_rs1": "rs1", "_rd": "rd"},
    "N": {},
    # vector (register operands named as in the V spec; see the module doc)
    "VSETVLI": {"rd": "rd", "rs1": "rs1", "imm": "VTYPE11"},
    "VSETIVLI": {"rd": "rd", "uimm": "rs1", "imm": "VTYPE10"},
    "VSETVL": {"rd": "rd", "rs1": "rs1", "rs2": "rs2"},
    "VLOAD": {"vd": "rd", "rs1": "rs1", "vm": "vm"},
    "VSTORE": {"vs3": "rd", "rs1": "rs1", "vm": "vm"},
    "VLOADS": {"vd": "rd", "rs1": "rs1", "rs2": "rs2", "vm": "vm"},
    "VSTORES": {"vs3": "rd", "rs1": "rs1", "rs2": "rs2", "vm": "vm"},
    "VLOADR": {"vd": "rd", "rs1": "rs1"},
    "VSTORER": {"vs3": "rd", "rs1": "rs1"},
    "VMVR": {"vd": "rd", "vs2": "rs2"},
    "VMVI": {"vd": "rd", "imm": "SIMM5"},
}
REG_FIELDS["fence_hi"] = (31, 20, 0)


@dataclass(frozen=True, slots=True)
class Encoding:
    """One table row: `name` is the base mnemonic it executes as.

    `operands` maps rd/rs1/rs2/imm/csr to a field name, a layout name (imm) or
    a fixed register number (compressed rows, e.g. rs1=2 for sp).
    `nonzero` lists operands whose value 0 is reserved (illegal)."""

    name: str
    asm: str  # mnemonic as written (c.addi for a compressed row)
    length: int
    match: int
    mask: int
    operands: tuple[tuple[str, str | int], ...]
    nonzero: tuple[str, ...] = ()


def _pattern(asm: str, pattern: str, length: int) -> tuple[int, int]:
    bits = pattern.replace(" ", "")
    if len(bits) != 8 * length or set(bits) - set("01."):
        raise ValueError(f"{asm}: bit pattern must have {8 * length} chars of 0/1/., got {pattern!r}")
    match = mask = 0
    for ch in bits:
        match, mask = match << 1, mask << 1
        if ch != ".":
            mask |= 1
            match |= ch == "1"
    return match, mask


# --- the base table ---------------------------------------------------------
#   name       format  pattern (bit 31 ... bit 0)
BASE: tuple[tuple[str, str, str], ...] = (
    # RV64I
    ("lui",    "U",   "....... ..... ..... ... ..... 0110111"),
    ("auipc",  "U",   "....... ..... ..... ... ..... 0010111"),
    ("jal",    "J",   "....... ..... ..... ... ..... 1101111"),
    ("jalr",   "I",   "....... ..... ..... 000 ..... 1100111"),
    ("beq",    "B",   "....... ..... ..... 000 ..... 1100011"),
    ("bne",    "B",   "....... ..... ..... 001 ..... 1100011"),
    ("blt",    "B",   "....... ..... ..... 100 ..... 1100011"),
    ("bge",    "B",   "....... ..... ..... 101 ..... 1100011"),
    ("bltu",   "B",   "....... ..... ..... 110 ..... 1100011"),
    ("bgeu",   "B",   "....... ..... ..... 111 ..... 1100011"),
    ("lb",     "I",   "....... ..... ..... 000 ..... 0000011"),
    ("lh",     "I",   "....... ..... ..... 001 ..... 0000011"),
    ("lw",     "I",   "....... ..... ..... 010 ..... 0000011"),
    ("ld",     "I",   "....... ..... ..... 011 ..... 0000011"),
    ("lbu",    "I",   "....... ..... ..... 100 ..... 0000011"),
    ("lhu",    "I",   "....... ..... ..... 101 ..... 0000011"),
    ("lwu",    "I",   "....... ..... ..... 110 ..... 0000011"),
    ("sb",     "S",   "....... ..... ..... 000 ..... 0100011"),
    ("sh",     "S",   "....... ..... ..... 001 ..... 0100011"),
    ("sw",     "S",   "....... ..... ..... 010 ..... 0100011"),
    ("sd",     "S",   "....... ..... ..... 011 ..... 0100011"),
    ("addi",   "I",   "....... ..... ..... 000 ..... 0010011"),
    ("slti",   "I",   "....... ..... ..... 010 ..... 0010011"),
    ("sltiu",  "I",   "....... ..... ..... 011 ..... 0010011"),
    ("xori",   "I",   "....... ..... ..... 100 ..... 0010011"),
    ("ori",    "I",   "....... ..... ..... 110 ..... 0010011"),
    ("andi",   "I",   "....... ..... ..... 111 ..... 0010011"),
    ("slli",   "SH6", "000000. ..... ..... 001 ..... 0010011"),
    ("srli",   "SH6", "000000. ..... ..... 101 ..... 0010011"),
    ("srai",   "SH6", "010000. ..... ..... 101 ..... 0010011"),
    ("add",    "R",   "0000000 ..... ..... 000 ..... 0110011"),
    ("sub",    "R",   "0100000 ..... ..... 000 ..... 0110011"),
    ("sll",    "R",   "0000000 ..... ..... 001 ..... 0110011"),
    ("slt",    "R",   "0000000 ..... ..... 010 ..... 0110011"),
    ("sltu",   "R",   "0000000 ..... ..... 011 ..... 0110011"),
    ("xor",    "R",   "0000000 ..... ..... 100 ..... 0110011"),
    ("srl",    "R",   "0000000 ..... ..... 101 ..... 0110011"),
    ("sra",    "R",   "0100000 ..... ..... 101 ..... 0110011"),
    ("or",     "R",   "0000000 ..... ..... 110 ..... 0110011"),
    ("and",    "R",   "0000000 ..... ..... 111 ..... 0110011"),
    ("addiw",  "I",   "....... ..... ..... 000 ..... 0011011"),
    ("slliw",  "SH5", "0000000 ..... ..... 001 ..... 0011011"),
    ("srliw",  "SH5", "0000000 ..... ..... 101 ..... 0011011"),
    ("sraiw",  "SH5", "0100000 ..... ..... 101 ..... 0011011"),
    ("addw",   "R",   "0000000 ..... ..... 000 ..... 0111011"),
    ("subw",   "R",   "0100000 ..... ..... 000 ..... 0111011"),
    ("sllw",   "R",   "0000000 ..... ..... 001 ..... 0111011"),
    ("srlw",   "R",   "0000000 ..... ..... 101 ..... 0111011"),
    ("sraw",   "R",   "0100000 ..... ..... 101 ..... 0111011"),
    ("fence",  "FENCE", "....... ..... ..... 000 ..... 0001111"),
    ("fence.i", "FENCE", "....... ..... ..... 001 ..... 0001111"),
    ("ecall",  "N",   "0000000 00000 00000 000 00000 1110011"),
    ("ebreak", "N",   "0000000 00001 00000 000 00000 1110011"),
    ("wfi",    "N",   "0001000 00101 00000 000 00000 1110011"),
    # Zicsr
    ("csrrw",  "CSR",  "....... ..... ..... 001 ..... 1110011"),
    ("csrrs",  "CSR",  "....... ..... ..... 010 ..... 1110011"),
    ("csrrc",  "CSR",  "....... ..... ..... 011 ..... 1110011"),
    ("csrrwi", "CSRI", "....... ..... ..... 101 ..... 1110011"),
    ("csrrsi", "CSRI", "....... ..... ..... 110 ..... 1110011"),
    ("csrrci", "CSRI", "....... ..... ..... 111 ..... 1110011"),
    # M
    ("mul",    "R",   "0000001 ..... ..... 000 ..... 0110011"),
    ("mulh",   "R",   "0000001 ..... ..... 001 ..... 0110011"),
    ("mulhsu", "R",   "0000001 ..... ..... 010 ..... 0110011"),
    ("mulhu",  "R",   "0000001 ..... ..... 011 ..... 0110011"),
    ("div",    "R",   "0000001 ..... ..... 100 ..... 0110011"),
    ("divu",   "R",   "0000001 ..... ..... 101 ..... 0110011"),
    ("rem",    "R",   "0000001 ..... ..... 110 ..... 0110011"),
    ("remu",   "R",   "0000001 ..... ..... 111 ..... 0110011"),
    ("mulw",   "R",   "0000001 ..... ..... 000 ..... 0111011"),
    ("divw",   "R",   "0000001 ..... ..... 100 ..... 0111011"),
    ("divuw",  "R",   "0000001 ..... ..... 101 ..... 0111011"),
    ("remw",   "R",   "0000001 ..... ..... 110 ..... 0111011"),
    ("remuw",  "R",   "0000001 ..... ..... 111 ..... 0111011"),
)

# --- the vector table (RVV 1.0, the part copy code uses) ---------------------
# Loads/stores: nf[31:29] mew[28] mop[27:26] vm[25] lumop|rs2[24:20] rs1 width vd opcode.
# width 000/101/110/111 is EEW 8/16/32/64 (the others are scalar FP loads);
# mop 00 unit stride (lumop 00000 plain, 01000 whole register, 10000
# fault-only-first), 10 strided.  Whole-register rows fix nf = NREG - 1 and
# vm = 1; their stores exist with width 000 only.
VECTOR_EEW = {8: "000", 16: "101", 32: "110", 64: "111"}
_NF = {1: "000", 2: "001", 4: "011", 8: "111"}
VECTOR: tuple[tuple[str, str, str], ...] = (
    ("vsetvli",  "VSETVLI",  "0 ........... ..... 111 ..... 1010111"),
    ("vsetivli", "VSETIVLI", "11 .......... ..... 111 ..... 1010111"),
    ("vsetvl",   "VSETVL",   "1000000 ..... ..... 111 ..... 1010111"),
    *((f"vle{w}.v", "VLOAD", f"000 0 00 . 00000 ..... {c} ..... 0000111") for w, c in VECTOR_EEW.items()),
    *((f"vle{w}ff.v", "VLOAD", f"000 0 00 . 10000 ..... {c} ..... 0000111") for w, c in VECTOR_EEW.items()),
    *((f"vse{w}.v", "VSTORE", f"000 0 00 . 00000 ..... {c} ..... 0100111") for w, c in VECTOR_EEW.items()),
    *((f"vlse{w}.v", "VLOADS", f"000 0 10 . ..... ..... {c} ..... 0000111") for w, c in VECTOR_EEW.items()),
    *((f"vsse{w}.v", "VSTORES", f"000 0 10 . ..... ..... {c} ..... 0100111") for w, c in VECTOR_EEW.items()),
    *((f"vl{n}re{w}.v", "VLOADR", f"{f} 0 00 1 01000 ..... {c} ..... 0000111")
      for n, f in _NF.items() for w, c in VECTOR_EEW.items()),
    *((f"vs{n}r.v", "VSTORER", f"{f} 0 00 1 01000 ..... 000 ..... 0100111") for n, f in _NF.items()),
    # vmv<n>r.v: OPIVI funct6 100111, vm = 1, simm5 = n - 1
    *((f"vmv{n}r.v", "VMVR", f"100111 1 ..... {n - 1:05b} 011 ..... 1010111") for n in _NF),
    # vmv.v.i: OPIVI funct6 010111 (vmerge/vmv), vm = 1, vs2 = 0 (a fill: clear_user)
    ("vmv.v.i", "VMVI", "010111 1 00000 ..... 011 ..... 1010111"),
)
BASE = BASE + VECTOR


# --- the compressed table (RV64C without FP) --------------------------------
#   asm, pattern (bit 15 ... bit 0), base, operands, reserved-if-zero operands
_R = "c_rd"
COMPRESSED: tuple[tuple[str, str, str, dict[str, str | int], tuple[str, ...]], ...] = (
    # quadrant 0
    ("c.addi4spn", "000 ........ ... 00", "addi", {"rd": "c_rdp", "rs1": 2, "imm": "CIW4SPN"}, ("imm",)),
    ("c.lw",   "010 ... ... .. ... 00", "lw", {"rd": "c_rdp", "rs1": "c_rs1p", "imm": "CLW"}, ()),
    ("c.ld",   "011 ... ... .. ... 00", "ld", {"rd": "c_rdp", "rs1": "c_rs1p", "imm": "CLD"}, ()),
    ("c.sw",   "110 ... ... .. ... 00", "sw", {"rs2": "c_rs2p", "rs1": "c_rs1p", "imm": "CLW"}, ()),
    ("c.sd",   "111 ... ... .. ... 00", "sd", {"rs2": "c_rs2p", "rs1": "c_rs1p", "imm": "CLD"}, ()),
    # quadrant 1
    ("c.addi", "000 . ..... ..... 01", "addi", {"rd": _R, "rs1": _R, "imm": "CI"}, ()),
    ("c.addiw", "001 . ..... ..... 01", "addiw", {"rd": _R, "rs1": _R, "imm": "CI"}, ("rd",)),
    ("c.li",   "010 . ..... ..... 01", "addi", {"rd": _R, "rs1": 0, "imm": "CI"}, ()),
    ("c.addi16sp", "011 . 00010 ..... 01", "addi", {"rd": 2, "rs1": 2, "imm": "C16SP"}, ("imm",)),
    ("c.lui",  "011 . ..... ..... 01", "lui", {"rd": _R, "imm": "CLUI"}, ("imm",)),
    ("c.srli", "100 . 00 ... ..... 01", "srli", {"rd": "c_rs1p", "rs1": "c_rs1p", "imm": "CSH"}, ()),
    ("c.srai", "100 . 01 ... ..... 01", "srai", {"rd": "c_rs1p", "rs1": "c_rs1p", "imm": "CSH"}, ()),
    ("c.andi", "100 . 10 ... ..... 01", "andi", {"rd": "c_rs1p", "rs1": "c_rs1p", "imm": "CI"}, ()),
    ("c.sub",  "100 0 11 ... 00 ... 01", "sub", {"rd": "c_rs1p", "rs1": "c_rs1p", "rs2": "c_rs2p"}, ()),
    ("c.xor",  "100 0 11 ... 01 ... 01", "xor", {"rd": "c_rs1p", "rs1": "c_rs1p", "rs2": "c_rs2p"}, ()),
    ("c.or",   "100 0 11 ... 10 ... 01", "or", {"rd": "c_rs1p", "rs1": "c_rs1p", "rs2": "c_rs2p"}, ()),
    ("c.and",  "100 0 11 ... 11 ... 01", "and", {"rd": "c_rs1p", "rs1": "c_rs1p", "rs2": "c_rs2p"}, ()),
    ("c.subw", "100 1 11 ... 00 ... 01", "subw", {"rd": "c_rs1p", "rs1": "c_rs1p", "rs2": "c_rs2p"}, ()),
    ("c.addw", "100 1 11 ... 01 ... 01", "addw", {"rd": "c_rs1p", "rs1": "c_rs1p", "rs2": "c_rs2p"}, ()),
    ("c.j",    "101 ........... 01", "jal", {"rd": 0, "imm": "CJ"}, ()),
    ("c.beqz", "110 ... ... ..... 01", "beq", {"rs1": "c_rs1p", "rs2": 0, "imm": "CB"}, ()),
    ("c.bnez", "111 ... ... ..... 01", "bne", {"rs1": "c_rs1p", "rs2": 0, "imm": "CB"}, ()),
    # quadrant 2
    ("c.slli", "000 . ..... ..... 10", "slli", {"rd": _R, "rs1": _R, "imm": "CSH"}, ()),
    ("c.lwsp", "010 . ..... ..... 10", "lw", {"rd": _R, "rs1": 2, "imm": "CLWSP"}, ("rd",)),
    ("c.ldsp", "011 . ..... ..... 10", "ld", {"rd": _R, "rs1": 2, "imm": "CLDSP"}, ("rd",)),
    ("c.jr",   "100 0 ..... 00000 10", "jalr", {"rd": 0, "rs1": _R, "imm": 0}, ("rs1",)),
    ("c.mv",   "100 0 ..... ..... 10", "add", {"rd": _R, "rs1": 0, "rs2": "c_rs2"}, ()),
    ("c.ebreak", "100 1 00000 00000 10", "ebreak", {}, ()),
    ("c.jalr", "100 1 ..... 00000 10", "jalr", {"rd": 1, "rs1": _R, "imm": 0}, ("rs1",)),
    ("c.add",  "100 1 ..... ..... 10", "add", {"rd": _R, "rs1": _R, "rs2": "c_rs2"}, ()),
    ("c.swsp", "110 ...... ..... 10", "sw", {"rs2": "c_rs2", "rs1": 2, "imm": "CSWSP"}, ()),
    ("c.sdsp", "111 ...... ..... 10", "sd", {"rs2": "c_rs2", "rs1": 2, "imm": "CSDSP"}, ()),
)


def _field_bits(source: str | int) -> int:
    """Instruction bits read by an operand source (0 for a fixed value)."""
    if isinstance(source, int):
        return 0
    if source in REG_FIELDS:
        hi, lo, _ = REG_FIELDS[source]
        return ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)
    bits = 0
    for hi, lo, _ in IMM_LAYOUTS[source][1]:
        bits |= ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)
    return bits


def _check_coverage(enc: Encoding) -> None:
    """Every bit is fixed or read by exactly one field (shared rd=rs1 counts once)."""
    full = (1 << (8 * enc.length)) - 1
    seen: dict[str, int] = {}
    for operand, source in enc.operands:
        if isinstance(source, str) and source not in seen.values():
            seen[operand] = source
    used = 0
    for source in dict.fromkeys(seen.values()):
        bits = _field_bits(source)
        if bits & used:
            raise ValueError(f"{enc.asm}: operand fields overlap (bits {bits & used:#x})")
        used |= bits
    if used & enc.mask:
        raise ValueError(f"{enc.asm}: bits {used & enc.mask:#x} are both fixed and a field")
    if (used | enc.mask) != full:
        raise ValueError(f"{enc.asm}: bits {full & ~(used | enc.mask):#x} are neither fixed nor a field")


def _check_overlaps(rows: list[Encoding]) -> None:
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            if a.length != b.length or (a.match ^ b.match) & a.mask & b.mask:
                continue
            more, less = (a, b) if a.mask | b.mask == a.mask else (b, a)
            if more.mask == less.mask or more.mask | less.mask != more.mask:
                raise ValueError(f"encodings {a.asm} and {b.asm} overlap ambiguously")


def build_table() -> tuple[Encoding, ...]:
    """Build and validate the table; raises ValueError naming the instruction."""
    rows: list[Encoding] = []
    names = set()
    for name, fmt, pattern in BASE:
        match, mask = _pattern(name, pattern, 4)
        ops = tuple((k, v) for k, v in FORMATS[fmt].items())
        rows.append(Encoding(name, name, 4, match, mask, ops))
    for asm, pattern, base, operands, nonzero in COMPRESSED:
        match, mask = _pattern(asm, pattern, 2)
        rows.append(Encoding(base, asm, 2, match, mask, tuple(operands.items()), nonzero))
    for enc in rows:
        if enc.asm in names:
            raise ValueError(f"{enc.asm}: listed twice")
        names.add(enc.asm)
        if enc.match & ~enc.mask:
            raise ValueError(f"{enc.asm}: match has bits outside its mask")
        if enc.length == 4 and enc.match & 3 != 3:
            raise ValueError(f"{enc.asm}: 32-bit encodings end in 0b11")
        if enc.length == 2 and enc.match & 3 == 3:
            raise ValueError(f"{enc.asm}: compressed encodings must not end in 0b11")
        _check_coverage(enc)
    _check_overlaps(rows)
    base_names = {name for name, _, _ in BASE}
    for enc in rows:
        if enc.name not in base_names:
            raise ValueError(f"{enc.asm}: expands to unknown base instruction {enc.name}")
    return tuple(rows)


TABLE: tuple[Encoding, ...] = build_table()
NAMES: frozenset[str] = frozenset(name for name, _, _ in BASE)
VECTOR_NAMES: frozenset[str] = frozenset(name for name, _, _ in VECTOR)
