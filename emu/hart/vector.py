"""The hart's vector unit state: VLEN, v0-v31 and the vector CSRs, over ints.

Role: what `emu.hart.machine.Hart` keeps for RVV 1.0 (the vector semantics live in
`emu.insn.vsemantics`).  The register file is one bytearray of 32 * VLENB bytes,
register r at offset r * VLENB, so a register group is a contiguous run and
element e of the group at r is at r * VLENB + e * EEW / 8, little-endian.
CSRs: vstart (WARL: the lg2(VLEN) bits the largest element index needs),
vxsat, vxrm, vcsr (the two together), and the read-only vl, vtype, vlenb.  At reset vtype is vill
and vl 0 (the reset state the spec recommends).
Imports: emu.insn.vsemantics (CSR numbers), emu.errors.
"""

from __future__ import annotations

from copygen.emu.errors import ConfigError
from copygen.emu.insn.vsemantics import VCSR, VILL, VL, VLENB, VSTART, VTYPE, VXRM, VXSAT

VLEN_RANGE = (128, 1024)
READ_ONLY = frozenset({VL, VTYPE, VLENB})


class VectorUnit:
    """Vector registers and CSRs of one hart (values are Python ints)."""

    __slots__ = ("vlen", "vlenb", "regs", "vl", "vtype", "vstart", "vxrm", "vxsat")

    def __init__(self, vlen: int = 128) -> None:
        lo, hi = VLEN_RANGE
        if not isinstance(vlen, int) or vlen & (vlen - 1) or not lo <= vlen <= hi:
            raise ConfigError(f"VLEN {vlen!r}: must be a power of two from {lo} to {hi}")
        self.vlen, self.vlenb = vlen, vlen // 8
        self.regs = bytearray(32 * self.vlenb)
        self.vl, self.vtype, self.vstart, self.vxrm, self.vxsat = 0, VILL, 0, 0, 0

    def read(self, reg: int, e: int, eew: int) -> int:
        n = eew >> 3
        off = reg * self.vlenb + e * n
        return int.from_bytes(self.regs[off:off + n], "little")

    def write(self, reg: int, e: int, eew: int, v: int) -> None:
        n = eew >> 3
        off = reg * self.vlenb + e * n
        self.regs[off:off + n] = (v & ((1 << eew) - 1)).to_bytes(n, "little")

    def register(self, reg: int) -> bytes:
        """The bytes of v<reg> (for tests and the oracle)."""
        return bytes(self.regs[reg * self.vlenb:(reg + 1) * self.vlenb])

    def csr_read(self, csr: int) -> int:
        return {VSTART: self.vstart, VXSAT: self.vxsat, VXRM: self.vxrm,
                VCSR: self.vxrm << 1 | self.vxsat, VL: self.vl, VTYPE: self.vtype,
                VLENB: self.vlenb}[csr]

    def csr_write(self, csr: int, v: int) -> None:
        """Write a writable vector CSR (the caller refuses READ_ONLY ones)."""
        if csr == VSTART:
            self.vstart = v & (self.vlen - 1)
        elif csr == VXSAT:
            self.vxsat = v & 1
        elif csr == VXRM:
            self.vxrm = v & 3
        else:
            assert csr == VCSR, f"csr {csr:#x} is not a writable vector CSR"
            self.vxsat, self.vxrm = v & 1, (v >> 1) & 3
