"""Instruction semantics of RV64IMC + Zicsr, written once for every value domain.

Role: `SEMANTICS[name](insn, ops, st)` performs one decoded instruction on a
machine state `st` (the `State` protocol below) using only the value operations
`ops` (`emu.insn.values.Ops`).  The concrete interpreter (`emu.hart.machine`), the block
translator (`emu.fast.translate`, whose `ops` print Python source) and the
verifier's symbolic step (Z3 bit-vectors) all run these same functions.

Rules that keep the definitions domain-independent:
* No Python `if`/`and`/`or`/`min` on *values*: choose with `ops.ite` and end
  conditional control flow with `st.branch(cond, target)`.  Python `if` on
  decoded *fields* (register numbers, immediates, csr numbers) is fine: they
  are concrete in every domain.
* `st.write_x` is each instruction's last effect (after `set_pc`, `load`,
  `store`), so a domain that builds expressions lazily never reads a register
  after the instruction overwrote it, and a faulting access leaves no trace.
* Instruction addresses (`st.pc`, branch/jump targets of pc-relative forms) are
  concrete ints; only `jalr` computes its target from a value (`st.set_pc`).
Families are built by small higher-order helpers, as in Serval's interpreter.
The vector instructions are defined in `emu.insn.vsemantics` (their own state
protocol) and merged into `SEMANTICS` here.
Imports: emu.insn.values (types and XLEN only), emu.insn.vsemantics.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from copygen.emu.insn.values import XLEN, Ops
from copygen.emu.insn.vsemantics import VECTOR_SEMANTICS


class State(Protocol):
    """What an instruction may do to the machine."""

    pc: int  # address of the instruction being executed (concrete)

    def read_x(self, r: int) -> Any: ...                  # x0 reads as const(0)
    def write_x(self, r: int, v: Any) -> None: ...        # writes to x0 are dropped
    def load(self, addr: Any, size: int) -> Any: ...      # zero-extended to XLEN
    def store(self, addr: Any, size: int, v: Any) -> None: ...  # low `size` bytes
    def csr_read(self, csr: int) -> Any: ...
    def csr_write(self, csr: int, v: Any) -> None: ...
    def set_pc(self, target: Any) -> None: ...            # unconditional jump
    def branch(self, cond: Any, target: int) -> None: ... # taken iff cond
    def trap(self, cause: str) -> None: ...               # ecall / ebreak


Semantic = Callable[[Any, Ops, State], None]
SEMANTICS: dict[str, Semantic] = {}


def _define(names: str, make: Callable[[str], Semantic]) -> None:
    for name in names.split():
        SEMANTICS[name] = make(name)


# --- register-register and register-immediate ALU -------------------------

def _shamt(ops: Ops, v: Any, bits: int) -> Any:
    return ops.and_(v, ops.const(bits - 1))


ALU: dict[str, Callable[[Ops, Any, Any], Any]] = {
    "add": lambda o, a, b: o.add(a, b),
    "sub": lambda o, a, b: o.sub(a, b),
    "and": lambda o, a, b: o.and_(a, b),
    "or": lambda o, a, b: o.or_(a, b),
    "xor": lambda o, a, b: o.xor(a, b),
    "sll": lambda o, a, b: o.shl(a, _shamt(o, b, XLEN)),
    "srl": lambda o, a, b: o.lshr(a, _shamt(o, b, XLEN)),
    "sra": lambda o, a, b: o.ashr(a, _shamt(o, b, XLEN)),
    "slt": lambda o, a, b: o.ite(o.slt(a, b), o.const(1), o.const(0)),
    "sltu": lambda o, a, b: o.ite(o.ult(a, b), o.const(1), o.const(0)),
    "mul": lambda o, a, b: o.mul(a, b),
    "mulh": lambda o, a, b: o.mulh(a, b),
    "mulhu": lambda o, a, b: o.mulhu(a, b),
    "mulhsu": lambda o, a, b: o.mulhsu(a, b),
    "div": lambda o, a, b: o.div(a, b),
    "divu": lambda o, a, b: o.divu(a, b),
    "rem": lambda o, a, b: o.rem(a, b),
    "remu": lambda o, a, b: o.remu(a, b),
}

# 32-bit ("W") operations: operate on the low words, sign-extend the result.
# Signed operands are sign-extended and unsigned ones zero-extended first, so
# the 64-bit operation on them yields the right low word (divw overflow and
# division by zero included).
ALU_W: dict[str, Callable[[Ops, Any, Any], Any]] = {
    "addw": lambda o, a, b: o.add(a, b),
    "subw": lambda o, a, b: o.sub(a, b),
    "sllw": lambda o, a, b: o.shl(a, _shamt(o, b, 32)),
    "srlw": lambda o, a, b: o.lshr(o.zext(a, 32), _shamt(o, b, 32)),
    "sraw": lambda o, a, b: o.ashr(o.sext(a, 32), _shamt(o, b, 32)),
    "mulw": lambda o, a, b: o.mul(a, b),
    "divw": lambda o, a, b: o.div(o.sext(a, 32), o.sext(b, 32)),
    "divuw": lambda o, a, b: o.divu(o.zext(a, 32), o.zext(b, 32)),
    "remw": lambda o, a, b: o.rem(o.sext(a, 32), o.sext(b, 32)),
    "remuw": lambda o, a, b: o.remu(o.zext(a, 32), o.zext(b, 32)),
}


def _r_type(name: str) -> Semantic:
    op = ALU[name]
    return lambda i, o, s: s.write_x(i.rd, op(o, s.read_x(i.rs1), s.read_x(i.rs2)))


def _r_type_w(name: str) -> Semantic:
    op = ALU_W[name]
    return lambda i, o, s: s.write_x(i.rd, o.sext(op(o, s.read_x(i.rs1), s.read_x(i.rs2)), 32))


def _i_type(name: str) -> Semantic:
    op = ALU[name[:-1] if name != "sltiu" else "sltu"]
    return lambda i, o, s: s.write_x(i.rd, op(o, s.read_x(i.rs1), o.const(i.imm)))


def _i_type_w(name: str) -> Semantic:
    op = ALU_W[name[:-2] + "w"]
    return lambda i, o, s: s.write_x(i.rd, o.sext(op(o, s.read_x(i.rs1), o.const(i.imm)), 32))


_define("add sub and or xor sll srl sra slt sltu mul mulh mulhu mulhsu div divu rem remu", _r_type)
_define("addw subw sllw srlw sraw mulw divw divuw remw remuw", _r_type_w)
_define("addi andi ori xori slli srli srai slti sltiu", _i_type)
_define("addiw slliw srliw sraiw", _i_type_w)


# --- upper immediates and jumps -------------------------------------------

SEMANTICS["lui"] = lambda i, o, s: s.write_x(i.rd, o.const(i.imm))
SEMANTICS["auipc"] = lambda i, o, s: s.write_x(i.rd, o.const(s.pc + i.imm))


def _jal(i: Any, o: Ops, s: State) -> None:
    link = o.const(s.pc + i.length)
    s.set_pc(o.const(s.pc + i.imm))
    s.write_x(i.rd, link)


def _jalr(i: Any, o: Ops, s: State) -> None:
    link = o.const(s.pc + i.length)
    s.set_pc(o.and_(o.add(s.read_x(i.rs1), o.const(i.imm)), o.const(~1)))
    s.write_x(i.rd, link)


SEMANTICS["jal"] = _jal
SEMANTICS["jalr"] = _jalr


# --- conditional branches --------------------------------------------------

BRANCH: dict[str, Callable[[Ops, Any, Any], Any]] = {
    "beq": lambda o, a, b: o.eq(a, b),
    "bne": lambda o, a, b: o.ne(a, b),
    "blt": lambda o, a, b: o.slt(a, b),
    "bge": lambda o, a, b: o.not_(o.slt(a, b)),
    "bltu": lambda o, a, b: o.ult(a, b),
    "bgeu": lambda o, a, b: o.not_(o.ult(a, b)),
}


def _branch(name: str) -> Semantic:
    cond = BRANCH[name]
    return lambda i, o, s: s.branch(cond(o, s.read_x(i.rs1), s.read_x(i.rs2)), s.pc + i.imm)


_define("beq bne blt bge bltu bgeu", _branch)


# --- loads and stores --------------------------------------------------------

LOAD_SIZE = {"lb": (1, True), "lh": (2, True), "lw": (4, True), "ld": (8, False),
             "lbu": (1, False), "lhu": (2, False), "lwu": (4, False)}
STORE_SIZE = {"sb": 1, "sh": 2, "sw": 4, "sd": 8}


def _load(name: str) -> Semantic:
    size, is_signed = LOAD_SIZE[name]

    def run(i: Any, o: Ops, s: State) -> None:
        v = s.load(o.add(s.read_x(i.rs1), o.const(i.imm)), size)
        s.write_x(i.rd, o.sext(v, 8 * size) if is_signed else v)
    return run


def _store(name: str) -> Semantic:
    size = STORE_SIZE[name]
    return lambda i, o, s: s.store(o.add(s.read_x(i.rs1), o.const(i.imm)), size, s.read_x(i.rs2))


_define(" ".join(LOAD_SIZE), _load)
_define(" ".join(STORE_SIZE), _store)


# --- Zicsr -----------------------------------------------------------------
# csrrs/csrrc with rs1 = x0 (or uimm = 0) do not write; csrrw with rd = x0
# does not read.  Both are decided on fields, so plain `if` is allowed.

CSR_OP: dict[str, Callable[[Ops, Any, Any], Any]] = {
    "w": lambda o, old, v: v,
    "s": lambda o, old, v: o.or_(old, v),
    "c": lambda o, old, v: o.and_(old, o.xor(v, o.const(-1))),
}


def _csr(name: str) -> Semantic:
    kind, immediate = name[4], name.endswith("i")
    op = CSR_OP[kind]

    def run(i: Any, o: Ops, s: State) -> None:
        src = o.const(i.imm) if immediate else s.read_x(i.rs1)
        writes = kind == "w" or (i.imm if immediate else i.rs1) != 0
        reads = kind != "w" or i.rd != 0
        old = s.csr_read(i.csr) if reads else o.const(0)
        if writes:
            s.csr_write(i.csr, op(o, old, src))
        if reads:
            s.write_x(i.rd, old)
    return run


_define("csrrw csrrs csrrc csrrwi csrrsi csrrci", _csr)


# --- system ------------------------------------------------------------------

def _nop(i: Any, o: Ops, s: State) -> None:
    """fence, fence.i and wfi: no architectural effect in this model (one hart,
    no self-modifying code, no interrupts)."""


SEMANTICS["fence"] = _nop
SEMANTICS["fence.i"] = _nop
SEMANTICS["wfi"] = _nop
SEMANTICS["ecall"] = lambda i, o, s: s.trap("ecall")
SEMANTICS["ebreak"] = lambda i, o, s: s.trap("ebreak")


SEMANTICS.update(VECTOR_SEMANTICS)


def _check_complete() -> None:
    from copygen.emu.insn.isa import NAMES

    missing = NAMES - SEMANTICS.keys()
    extra = SEMANTICS.keys() - NAMES
    assert not missing and not extra, f"semantics missing {sorted(missing)}, extra {sorted(extra)}"


_check_complete()
