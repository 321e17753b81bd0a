"""The harness.c experiment replayed in copygen's emulator, for comparison with qemu.

Role: for one linked ELF, run a `qemu.Case` exactly as tests/oracle/harness.c
does (same arena size, same pseudo-random fill of both arenas from the case's
seed, the same side made inaccessible from `fault_at` on, the same call and
return-value convention) but in `emu.Machine`, with the user side mapped as
user pages, so that SUM gates it.  Returns the return value, SUM at exit and
the harness's WSUM digest of the destination arena.
Imports: numpy, emu, tests.oracle.qemu.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from copygen import emu
from copygen.mutate.oracle import ARENA, PAGE, Case, wsum_of

USER_ARENA, KERNEL_ARENA = 0x1000_0000, 0x7000_0000
# harness.c fill(): seed = seed * 1103515245 + 12345 (mod 2^32); byte = seed >> 16.
_A, _C, _M = 1103515245, 12345, (1 << 32) - 1


def _lcg_tables() -> tuple[np.ndarray, np.ndarray]:
    """x_{i+1} = A_i * x_0 + C_i (mod 2^32) for i in 0..ARENA-1, as uint32:
    numpy's uint32 products wrap mod 2^32 as the harness's do."""
    a_pow, c_sum, mul, add = [], [], 1, 0
    for _ in range(ARENA):
        mul, add = (mul * _A) & _M, (add * _A + _C) & _M
        a_pow.append(mul)
        c_sum.append(add)
    return np.array(a_pow, dtype=np.uint32), np.array(c_sum, dtype=np.uint32)


_APOW, _CSUM = _lcg_tables()


def fill(seed: int) -> bytes:
    """The bytes harness.c's fill(p, ARENA, seed) writes."""
    x = _APOW * np.uint32(seed & _M)
    x += _CSUM
    return (x >> np.uint32(16)).astype(np.uint8).tobytes()


@dataclass(frozen=True)
class EmuResult:
    ret: int
    sum_at_exit: bool
    wsum: int


_USER_SIDE = {"to": "dst", "from": "src", "clear": "dst"}
_SYMBOL = {"to": "__asm_copy_to_user", "from": "__asm_copy_from_user", "clear": "__clear_user"}


class EmuHarness:
    """One machine for one ELF; `run(case)` mirrors harness.c's run_case()."""

    def __init__(self, elf: str | Path) -> None:
        self.m = emu.Machine.from_elf(elf)
        self._mapped: dict[str, tuple[int, bool]] = {}     # side -> (base, user) as mapped
        syms = self.m.image.symbols
        self.symbol = dict(_SYMBOL)
        for fn in ("memcpy", "memmove", "memset"):   # harness.c calls the __ aliases
            self.symbol[fn] = f"__{fn}" if f"__{fn}" in syms else fn

    def _arenas(self, case: Case) -> dict[str, tuple[int, bool]]:
        user = _USER_SIDE.get(case.fn)
        return {side: (USER_ARENA if user == side else KERNEL_ARENA + (0 if side == "dst" else 2 * ARENA),
                       user == side) for side in ("dst", "src")}

    def _map_arenas(self, arenas: dict) -> None:
        """Both arenas mapped whole with the case's permissions; only what
        differs from the last case's mapping is mapped again."""
        for side, (base, user) in arenas.items():
            if self._mapped.get(side) != (base, user):
                self.m.map(base, ARENA, user=user)
                self._mapped[side] = (base, user)

    def run(self, case: Case) -> EmuResult:
        m, arenas = self.m, self._arenas(case)
        self._map_arenas(arenas)
        (dbase, _), (sbase, _) = arenas["dst"], arenas["src"]
        m.write(sbase, fill(case.seed))
        m.write(dbase, fill(case.seed ^ 0x5A5A5A5A))
        if case.fn == "memmove":        # overlap: both pointers in the source arena
            dbase = sbase
        d, s = dbase + case.dst_off, sbase + case.src_off
        if case.fault_side != "none":
            assert case.fault_at % PAGE == 0 and case.fault_at < ARENA
            base, user = arenas[case.fault_side]
            m.map(base + case.fault_at, ARENA - case.fault_at, user=user, readable=False, writable=False)
            self._mapped.pop(case.fault_side)
        args = {"clear": (d, case.n), "memset": (d, 0xA5, case.n)}.get(case.fn, (d, s, case.n))
        r = m.call(self.symbol[case.fn], *args)
        self._map_arenas(arenas)
        ret = r.ret
        if case.fn in ("memcpy", "memmove", "memset"):
            ret = int(ret != d)
        return EmuResult(ret, r.sum_at_exit, wsum_of(m.read(dbase, ARENA)))
