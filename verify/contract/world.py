"""The contract's world: the symbols a proof quantifies over, the
preconditions of a call, the fault model, and what each byte must become.

Symbols: D, S (dst, src), N (n), W (an arbitrary byte index: proving a
property for symbolic W proves it for every byte), SRC (source contents),
C (memset's value), F / NF (the first inaccessible byte of the user buffer:
a page boundary in it, or its first byte; or none), SS0 (sstatus at entry:
SUM clear, or set for an entry point whose caller holds SUM, `sum_held`),
RA0, SP0 and the entry value of every other register.

Routine kinds
  to, from   __asm_copy_{to,from}_user: user buffer is dst / src
  clear      __clear_user (a0 = dst, a1 = n)
  memcpy     memcpy, buffers disjoint, never faults
  memmove    memmove: the buffers may overlap; loads read the source as it
             was at the call, and each load must meet no byte already
             overwritten (World.overwritten)
  memset     memset (a0 = dst, a1 = c, a2 = n)

Role: data and formulas only.  May import z3, verify.contract.clauses, verify.contract.rules,
verify.symbolic.z3ops.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import z3

from copygen.verify.contract.clauses import OVERLAP_KINDS
from copygen.verify.contract.rules import RegisterRules
from copygen.verify.symbolic.z3ops import bv, mentions

PAGE = 4096
SR_SUM = 1 << 18
SSTATUS = 0x100
BV8 = z3.BitVecSort(8)
BV64 = z3.BitVecSort(64)
# Addresses stay away from both ends of the address space, sizes below 2^40,
# so that no pointer arithmetic of a correct routine wraps around.
LOW, HIGH, MAX_N = 1 << 20, (1 << 64) - (1 << 20), 1 << 40
GAP = 1 << 16

KINDS = {
    "__asm_copy_to_user": "to", "__asm_copy_from_user": "from",
    # mainline's entry points for callers that hold SUM (verify.contract.clauses.holds_sum)
    "__asm_copy_to_user_sum_enabled": "to", "__asm_copy_from_user_sum_enabled": "from",
    "__clear_user": "clear",
    "memcpy": "memcpy", "__memcpy": "memcpy", "memset": "memset", "__memset": "memset",
    "memmove": "memmove", "__memmove": "memmove",
    # uaccess_vector.S's strip-mined copy, either side user memory (verify.vector.vprove)
    "__asm_vector_usercopy": "vector",
    # mainline's loop for callers that hold SUM (its __asm_vector_usercopy wraps it)
    "__asm_vector_usercopy_sum_enabled": "vector",
    # uaccess_vector.S's strip-mined clear, proved in the clear world (verify.vector.vprove)
    "__asm_vector_clear_user": "vector_clear",
}
VECTOR_KINDS = ("vector", "vector_clear")
USER_SIDE = {"to": "dst", "from": "src", "clear": "dst"}
CALLEE_SAVED = (2, 8, 9, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27)


@dataclass
class World:
    kind: str
    sum_held: bool = False    # SUM set at entry, by the caller, and to stay set
    D: z3.BitVecRef = field(default_factory=lambda: z3.BitVec("D", 64))
    S: z3.BitVecRef = field(default_factory=lambda: z3.BitVec("S", 64))
    N: z3.BitVecRef = field(default_factory=lambda: z3.BitVec("N", 64))
    W: z3.BitVecRef = field(default_factory=lambda: z3.BitVec("W", 64))
    C: z3.BitVecRef = field(default_factory=lambda: z3.BitVec("C", 64))
    FO: z3.BitVecRef = field(default_factory=lambda: z3.BitVec("FO", 64))
    NF: z3.BoolRef = field(default_factory=lambda: z3.Bool("NF"))
    SS0: z3.BitVecRef = field(default_factory=lambda: z3.BitVec("SS0", 64))
    SRC: z3.ArrayRef = field(default_factory=lambda: z3.Array("SRC", BV64, BV8))
    DST0: z3.BitVecRef = field(default_factory=lambda: z3.BitVec("DST0_W", 8))
    # memmove's dst - src, for queries that write D as S + DS (World.relative)
    DS: z3.BitVecRef = field(default_factory=lambda: z3.BitVec("DS", 64))
    # callee entry -> verify.symbolic.summary.Summary: calls taken by a proved contract
    summaries: dict = field(default_factory=dict)
    # the register rules of clause R1 (none: R1 is not asked)
    rules: RegisterRules = field(default_factory=RegisterRules)

    def __post_init__(self):
        self.R0 = [bv(0)] + [z3.BitVec(f"R0_x{i}", 64) for i in range(1, 32)]
        args = {"clear": (self.D, self.N), "memset": (self.D, self.C, self.N)}
        for i, v in enumerate(args.get(self.kind, (self.D, self.S, self.N))):
            self.R0[10 + i] = v

    @property
    def RA0(self):
        return self.R0[1]

    @property
    def SP0(self):
        return self.R0[2]

    @property
    def sum_at_entry(self):
        """sstatus.SUM (as the masked bit) when the routine is entered."""
        return bv(SR_SUM if self.sum_held else 0)

    @property
    def E(self):
        return self.D + self.N

    @property
    def has_source(self) -> bool:
        return self.kind in ("to", "from", "memcpy", *OVERLAP_KINDS)

    @property
    def user(self) -> str | None:
        return USER_SIDE.get(self.kind)

    @property
    def U(self):
        return self.S if self.user == "src" else self.D

    def preconditions(self) -> list:
        D, S, N = self.D, self.S, self.N
        # W indexes dst: below n, but n = 0 is a call too (nothing may be
        # stored then), so it must not be ruled out by W
        pre = [z3.ULT(N, bv(MAX_N)), z3.UGE(D, bv(LOW)), z3.ULE(D, bv(HIGH) - N),
               z3.Or(N == 0, z3.ULT(self.W, N)), self.SS0 & bv(SR_SUM) == self.sum_at_entry,
               z3.UGE(self.SP0, bv(LOW)), z3.ULE(self.SP0, bv(HIGH)),
               self.RA0 & bv(1) == 0]
        if self.has_source:
            pre += [z3.UGE(S, bv(LOW)), z3.ULE(S, bv(HIGH) - N)]
            if self.kind not in OVERLAP_KINDS:
                # disjoint: user and kernel buffers never share a page (GAP
                # apart); memcpy's may be adjacent (memmove hands it such calls)
                gap = bv(0) if self.kind == "memcpy" else bv(GAP)
                pre.append(z3.Or(z3.ULE(D + N + gap, S), z3.ULE(S + N + gap, D)))
        # the stack is elsewhere
        pre.append(z3.Or(z3.ULE(self.SP0 + 4096, D - 8), z3.ULE(D + N + 8, self.SP0 - 8192)))
        if self.has_source:
            pre.append(z3.Or(z3.ULE(self.SP0 + 4096, S - 8), z3.ULE(S + N + 8, self.SP0 - 8192)))
        if self.user:
            # the first inaccessible byte: a page boundary inside the buffer,
            # or its very first byte (the page holding it is inaccessible,
            # whatever the buffer's alignment)
            pre.append(z3.Or(self.NF, z3.And(z3.Or(self.FO == 0, self.F & bv(PAGE - 1) == 0),
                                              z3.ULT(self.FO, N))))
        else:
            pre.append(self.NF)
        return pre

    def expected_byte(self, w):
        """What dst[w] must hold after a successful call."""
        if self.kind in ("clear",):
            return z3.BitVecVal(0, 8)
        if self.kind == "memset":
            return z3.Extract(7, 0, self.C)
        return z3.Select(self.SRC, self.S + w)

    def overwritten(self, written, addr, size):
        """For memmove, whose buffers may overlap: the watched byte dst[W]
        was written, is one of the `size` bytes at addr, and is a source
        byte.  Loads read the source as it was at the call, which is what
        memory holds as long as no load meets an overwritten source byte
        (bytes of an aligned word outside src are any value anyway)."""
        at = self.D + self.W
        return z3.And(written, z3.ULT(z3.simplify(at - addr), bv(size)),
                      z3.ULT(z3.simplify(at - self.S), self.N))

    def relative(self, f):
        """f with D written S + DS.  D is a free symbol, so this changes no
        verdict; but a query about memmove's overlap then compares offsets
        off one base, and the solver need not work through the carries of
        D - S."""
        return z3.simplify(z3.substitute(f, (self.D, self.S + self.DS)))

    def source_word(self, addr, size=8):
        """Little-endian value of `size` source bytes at addr, zero-extended."""
        parts = [z3.Select(self.SRC, addr + k) for k in range(size - 1, -1, -1)]
        val = parts[0] if size == 1 else z3.Concat(*parts)
        return z3.ZeroExt(64 - 8 * size, val) if size < 8 else val

    @property
    def F(self):
        """The first inaccessible address: offset FO into the user buffer."""
        return self.U + self.FO

    def fault_free(self, facts: list, goal) -> list:
        """`facts` without those about the fault point, when that keeps the
        query `facts and not goal` equisatisfiable: the goal does not
        mention FO or NF, and every dropped fact holds once NF is set (no
        fault anywhere: a path that faulted has a fact that does not).  A
        model of the rest then extends to one of all with NF = true.  On
        the paths that did not fault this drops the "this access did not
        fault" facts, one per user access, which the solver otherwise
        bit-blasts against FO."""
        if mentions(goal, self.FO, self.NF):
            return facts
        out = []
        for f in facts:
            if not mentions(f, self.FO, self.NF):
                out.append(f)
            elif not z3.is_true(z3.simplify(z3.substitute(f, (self.NF, z3.BoolVal(True))))):
                return facts
        return out

    def user_access_faults(self, addr, size):
        """True when [addr, addr+size) reaches the inaccessible part.  Written
        on the offset from the user buffer, so that the base cancels."""
        return z3.And(z3.Not(self.NF), z3.UGT(z3.simplify(addr - self.U) + size, self.FO))

    def offset(self, addr, base):
        return z3.simplify(addr - base)

    def in_dst(self, addr, size):
        d = self.offset(addr, self.D)
        return z3.And(d >= 0, d + size <= self.N)

    def in_src(self, addr, size, strict: bool):
        """Inside [S, S+n), or (not strict) inside its aligned cover words."""
        d = self.offset(addr, self.S)
        if strict:
            return z3.And(d >= 0, d + size <= self.N)
        lo = -(self.S & bv(7))
        hi = self.N + ((-(self.S + self.N)) & bv(7))
        return z3.And(self.N != 0, d >= lo, d + size <= hi)
