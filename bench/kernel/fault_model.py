"""The fault suite's calls run in copygen's emulator: the same sizes,
offsets and cut points as arch/riscv/lib/tests/usercopy_fault_kunit.c
(kernel.faultsuite), the same patterns, the same checks and the same
digest, so that a class's digest from the booted kernel and from the
emulator agree exactly when the two ran the same code the same way.

The model calls the scalar entry points of a linked uaccess.S
(__asm_copy_to_user, __asm_copy_from_user, __clear_user), as a kernel
without the V extension does; copy_from_user's zeroing of what was not
copied (lib/usercopy.c) is done here, as the kernel's C does it.  With
`vector` (the ELF linked with the tree's uaccess_vector.S too) a copy of
the threshold or more goes as 6.12's dispatch and glue send it:
__asm_vector_usercopy with the vector unit on, then the scalar copy for
what it left (riscv_v_helpers.c's enter_vector_usercopy); clear_user has
no vector path in 6.12.  User
pages are mapped in [lo, hi) with the page on either side unmapped; the
kernel buffer is at an 8-aligned address plus the class's offset.

Role: the model behind bench/kernel/fault_agreement.py and its test.  May
import emu.api, gen.toolchain, gen.resources, kernel.faultsuite and the
standard library.
"""
from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

from pathlib import Path

from copygen.emu.api import Machine
from copygen.gen import toolchain
from copygen.gen.resources import shim_dir
from copygen.kernel import faultsuite

PAGE = 4096
FNV_OFFSET, FNV_PRIME, MASK = 0xcbf29ce484222325, 0x100000001b3, (1 << 64) - 1
USER_LO = 0x0000_0040_0000_0000          # first mapped user byte
KERN = 0xffff_ffd8_0000_0000             # the kernel buffer's page
ENTRY = {"copy_to_user": "__asm_copy_to_user", "copy_from_user": "__asm_copy_from_user",
         "clear_user": "__clear_user"}
WHERE = {"whole": 0, "after": 1, "before": 2}


def src_byte(i: int, seed: int) -> int:
    return (i * 13 + seed) & 0xff


def fill_byte(i: int, seed: int) -> int:
    return (src_byte(i, seed) ^ 0x5a) | 1


@functools.lru_cache(maxsize=None)
def _row(seed: int, fill: bool) -> bytes:
    """One period (256 bytes from offset 0) of the source or fill pattern:
    both depend on i only through i mod 256."""
    return bytes(fill_byte(i, seed) if fill else src_byte(i, seed) for i in range(256))


def pattern(a: int, b: int, seed: int, fill: bool) -> bytes:
    """src_byte (or fill_byte) of every i in [a, b), as one bytes object."""
    if b <= a:
        return b""
    start = a % 256
    return (_row(seed, fill) * ((start + b - a) // 256 + 1))[start:start + b - a]


def seed_of(n: int, cut: int, where: str) -> int:
    return (n * 3 + cut * 5 + WHERE[where] * 7) & 0xff


def fold(h: int, data: bytes) -> int:
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


@dataclass
class ClassResult:
    routine: str
    user: int
    kern: int
    calls: int = 0
    failed: int = 0
    digest: int = FNV_OFFSET
    first: str = ""


def linked(sources: list[Path], workdir: Path) -> Path:
    """The .S files assembled against copygen's shim and linked into one ELF."""
    workdir.mkdir(parents=True, exist_ok=True)
    objs = []
    for src in sources:
        objs.append(workdir / (src.stem + ".o"))
        toolchain.assemble(src, shim_dir() / "include", objs[-1], vector=True)   # raises on failure
    elf = workdir / "fault_model.elf"
    toolchain.link(objs, shim_dir() / "copygen.ld", elf)
    return elf


class Model:
    """A machine holding one uaccess.S's ELF, with the suite's memory;
    `vector`: (the threshold, VLEN) of a kernel booted with V."""

    def __init__(self, elf, p: faultsuite.Params = faultsuite.DEFAULT,
                 vector: tuple[int, int] | None = None):
        self.p, self.vector = p, vector
        self.m = Machine.from_elf(str(elf), vlen=vector[1] if vector else None)
        self.pages = -(-(p.sizes[-1] + 2 * p.guard + 64) // PAGE) + 1
        self.lo, self.hi = USER_LO, USER_LO + self.pages * PAGE
        self.m.map(self.lo, self.hi - self.lo, user=True)
        self.m.map(KERN, -(-(p.sizes[-1] + 2 * p.guard + 8) // PAGE) * PAGE + PAGE, user=False)

    def user_start(self, where: str, cut: int, user: int) -> int:
        if where == "after":
            return self.hi - cut
        if where == "before":
            return self.lo - cut
        return self.lo + 64 + user

    def user_window(self, n: int, u: int) -> tuple[int, int]:
        g = self.p.guard
        return max(-g, self.lo - u), min(n + g, self.hi - u)

    def run_class(self, routine: str, user: int, kern: int) -> ClassResult:
        """Every call of one test case, as uf_run_class() makes them."""
        res = ClassResult(routine, user, kern)
        for n, where, cut in faultsuite.calls(self.p, user):
            self.one(res, n, where, cut)
        return res

    def one(self, res: ClassResult, n: int, where: str, cut: int) -> None:
        g, seed = self.p.guard, seed_of(n, cut, where)
        u = self.user_start(where, cut, res.user)
        k = KERN + g + res.kern
        ulo, uhi = self.user_window(n, u)
        lo, hi = (-g, n + g) if res.routine == "copy_from_user" else (ulo, uhi)
        if res.routine == "copy_from_user":
            self.m.write(k + lo, pattern(lo, hi, seed, True))
            a, b = max(ulo, 0), min(uhi, n)
            if b > a:
                self.m.write(u + a, pattern(a, b, seed, False))
            ret = self.copy(ENTRY[res.routine], k, u, n)
            if 0 < ret <= n:
                self.m.write(k + n - ret, bytes(ret))
            seen = self.m.read(k + lo, hi - lo)
        else:
            if n:
                self.m.write(k, pattern(0, n, seed, False))
            if hi > lo:
                self.m.write(u + lo, pattern(lo, hi, seed, True))
            ret = (self.m.call(ENTRY[res.routine], u, n).ret if res.routine == "clear_user"
                   else self.copy(ENTRY[res.routine], u, k, n))
            seen = self.m.read(u + lo, hi - lo) if hi > lo else b""
        res.digest = fold(res.digest, struct.pack("<QQQ", n | WHERE[where] << 32, cut, ret))
        res.digest = fold(res.digest, seen)
        res.calls += 1
        why = judge(res.routine, n, where, cut, ret, seen, lo, seed)
        if why:
            res.failed += 1
            res.first = res.first or f"n={n} {where} cut={cut}: returned {ret}: {why}"


    def copy(self, entry: str, dst: int, src: int, n: int) -> int:
        """A user copy as the kernel's entry point dispatches it."""
        if self.vector is None or n < self.vector[0]:
            return self.m.call(entry, dst, src, n).ret
        remain = self.m.call("__asm_vector_usercopy", dst, src, n, vector_at_entry=True).ret
        if not remain:
            return 0
        done = n - remain
        return self.m.call(entry, dst + done, src + done, remain).ret


def reachable(n: int, where: str, cut: int) -> int:
    return min(cut, n) if where == "after" else 0 if where == "before" else n


def expected(routine: str, n: int, ret: int, i: int, seed: int) -> int:
    if i < 0 or i >= n:
        return fill_byte(i, seed)
    if i < n - ret:
        return 0 if routine == "clear_user" else src_byte(i, seed)
    return 0 if routine == "copy_from_user" else fill_byte(i, seed)


def judge(routine: str, n: int, where: str, cut: int, ret: int, seen: bytes, lo: int,
          seed: int) -> str | None:
    """uf_judge(): why a call broke the rule, or None."""
    reach = reachable(n, where, cut)
    if ret > n:
        return "returned more than the size"
    if reach == n and ret:
        return "nothing faulted, yet it returned nonzero"
    if ret == n and reach:
        return "returned the size although a byte could be copied"
    if n - ret > reach:
        return "counted bytes past the fault as copied"
    want = expected_bytes(routine, n, ret, lo, lo + len(seen), seed)
    if seen != want:
        j = next(j for j, (a, b) in enumerate(zip(seen, want)) if a != b)
        return f"wrong destination byte at dst{lo + j:+d}"
    return None


def expected_bytes(routine: str, n: int, ret: int, lo: int, hi: int, seed: int) -> bytes:
    """expected() of every i in [lo, hi), as one bytes object."""
    def part(a: int, b: int, kind: str) -> bytes:
        a, b = max(a, lo), min(b, hi)
        if b <= a:
            return b""
        return bytes(b - a) if kind == "zero" else pattern(a, b, seed, kind == "fill")
    done = "zero" if routine == "clear_user" else "src"
    rest = "zero" if routine == "copy_from_user" else "fill"
    return (part(lo, 0, "fill") + part(0, n - ret, done) + part(n - ret, n, rest)
            + part(n, hi, "fill"))
