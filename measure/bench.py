"""Measure the copy routines of a linked ELF: cycles per (routine, size, alignment).

Role: the measuring core of `copygen bench` / `copygen rank` and of
bench/calibration/calibrate.py.  Knows each kernel routine's calling convention and which
side of the copy is user memory; places the buffers at the requested offsets
from a page boundary, runs every case warm (a first call fills the modelled
L1 D-cache, as a benchmark loop over the same buffers does; on an
out-of-order profile as many as its branch predictor needs to reach the
steady state of such a loop, with the routine's branches indexed by
their distance from its entry, so that unrelated code linked before it
does not move its cells), and checks the
result of every measured call (return value and destination bytes), so a
number is never reported for a wrong copy.
Imports: emu (TIMING_MODULES, api, errors, profile), the standard library.  Never gen or verify.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import asdict, dataclass
from importlib.resources import files
from pathlib import Path

from copygen.emu.api import Machine
from copygen.emu.errors import EmuError, ProfileError
from copygen.emu import TIMING_MODULES
from copygen.emu.timing.profile import PROFILE_DIR, Profile

PAGE = 4096
USER_BASE = 0x1000_0000     # user arenas: dst, then src
KERNEL_BASE = 0x7000_0000   # kernel arenas: dst, then src
MAX_SIZE = 1 << 24          # 16 MiB: the arenas are host memory
# warm-up calls at most, however long the branch history takes to repeat
WARM_CALLS_MAX = 16
FILL_DST = 0xEE             # what the destination holds before a call
MEMSET_BYTE = 0x5A


class BenchError(EmuError):
    """A routine returned a wrong result, or a bench request is impossible."""


@dataclass(frozen=True)
class Kind:
    """How to call one routine: argument form and which sides are user memory."""

    name: str
    form: str           # "copy" (dst, src, n), "clear" (dst, n), "set" (dst, c, n)
    dst_user: bool
    src_user: bool = False
    vector: bool = False    # called inside a kernel vector section (sstatus.VS on)


KINDS = {
    "__asm_copy_to_user": Kind("copy_to_user", "copy", dst_user=True),
    "__asm_copy_from_user": Kind("copy_from_user", "copy", dst_user=False, src_user=True),
    "__clear_user": Kind("clear_user", "clear", dst_user=True),
    "memcpy": Kind("memcpy", "copy", dst_user=False),
    "memmove": Kind("memmove", "copy", dst_user=False),
    "memset": Kind("memset", "set", dst_user=False),
    # either side may be user memory; benched as copy_to_user uses it
    "__asm_vector_usercopy": Kind("vector_usercopy", "copy", dst_user=True, vector=True),
    # the vector path of clear_user (uaccess_vector.S)
    "__asm_vector_clear_user": Kind("vector_clear_user", "clear", dst_user=True, vector=True),
}


@dataclass(frozen=True)
class Case:
    routine: str        # symbol
    size: int
    src_align: int      # byte offset from a page boundary (0..63)
    dst_align: int


@dataclass(frozen=True)
class Sample:
    routine: str
    kind: str
    size: int
    src_align: int
    dst_align: int
    cycles: int
    instret: int
    cache_misses: int
    misaligned: int

    @property
    def bytes_per_cycle(self) -> float:
        return self.size / self.cycles if self.cycles else 0.0

    @property
    def align_class(self) -> str:
        return align_class(self.src_align, self.dst_align, KINDS[self.routine].form)

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(bytes_per_cycle=round(self.bytes_per_cycle, 4), align_class=self.align_class)
        return d


def align_class(src: int, dst: int, form: str = "copy") -> str:
    """`aligned` (both 8-byte aligned), `co-aligned` (same offset mod 8), or
    `misaligned` (a shift copy's case); routines without a source only look at dst."""
    if form != "copy":
        return "aligned" if dst % 8 == 0 else "misaligned"
    if src % 8 == dst % 8:
        return "aligned" if src % 8 == 0 else "co-aligned"
    return "misaligned"


def routines_in(elf_symbols: dict[str, int]) -> list[str]:
    """The routines bench knows how to call that this ELF defines, in KINDS order."""
    return [s for s in KINDS if s in elf_symbols]


def _arena(max_size: int) -> int:
    return (max_size + 64 + 2 * PAGE + PAGE - 1) // PAGE * PAGE


@functools.lru_cache(maxsize=None)
def timing_fingerprint(profile: str) -> str:
    """A short hash of what a bench's cycles depend on besides the code: the
    profile's file (a name in emu/profiles or a path), the emulator's timing
    models and this package (warm-up, workloads, dispatch).  The tuner keys
    its stored evaluations by it, so a changed model measures again."""
    path = Path(profile) if profile.endswith(".toml") else PROFILE_DIR / f"{profile}.toml"
    h = hashlib.sha256(path.read_bytes() if path.is_file() else profile.encode())
    emu = Path(str(files("copygen.emu")))
    for name in sorted(TIMING_MODULES | {"api.py"}):
        h.update(name.encode() + b"\0" + (emu / name).read_bytes())
    for f in sorted(files("copygen.measure").iterdir(), key=lambda f: f.name):
        if f.name.endswith(".py"):
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:12]


class Bench:
    """One machine with user and kernel arenas large enough for `max_size`."""

    def __init__(self, elf: str | Path, profile: str | Profile, max_size: int, warm: bool = True,
                 vlen: int | None = None) -> None:
        if max_size > MAX_SIZE:
            raise BenchError(f"size {max_size} is too large for the bench arenas (at most {MAX_SIZE})")
        self.machine = Machine.from_elf(elf, profile, vlen=vlen)
        self.warm = warm
        # An out-of-order profile's branch predictor keeps its counters and
        # global history across calls: each case starts it afresh (so a
        # case's cycles do not depend on the cases run before it on this
        # machine: gshare entries of other paths alias) and trains it to
        # the steady state of a loop calling the routine (warm_up)
        ooo = self.machine.profile is not None and self.machine.profile.engine == "ooo"
        self.warm_calls = 2 if ooo else 1
        self.arena = arena = _arena(max_size)
        self.max_size = max_size
        self.base = {}
        for user, start in ((True, USER_BASE), (False, KERNEL_BASE)):
            self.machine.map(start, 2 * arena, user=user)
            self.base[user, "dst"], self.base[user, "src"] = start, start + arena
            pattern = bytes((i * 7 + 3) & 0xFF for i in range(251))
            self.machine.write(start + arena, (pattern * (arena // 251 + 1))[:arena])

    def routines(self) -> list[str]:
        return routines_in(self.machine.image.symbols)

    def run(self, case: Case) -> Sample:
        kind = _kind(case.routine)
        prof = self.machine.profile
        if kind.vector and prof is not None and prof.vector is None:
            raise ProfileError(f"{case.routine} runs vector code, and profile {prof.name} has no [vector] "
                               "section to time it; choose a vector profile (x60, x280) with --profile")
        if not 0 <= case.size <= self.max_size:
            raise BenchError(f"size {case.size} outside 0..{self.max_size}")
        if not (0 <= case.src_align < 64 and 0 <= case.dst_align < 64):
            raise BenchError(f"alignment offsets must be in 0..63, got {case.src_align}:{case.dst_align}")
        dst = self.base[kind.dst_user, "dst"] + case.dst_align
        src = self.base[kind.src_user, "src"] + case.src_align
        args = {"copy": (dst, src, case.size), "clear": (dst, case.size),
                "set": (dst, MEMSET_BYTE, case.size)}[kind.form]
        m = self.machine
        m.write(dst, bytes([FILL_DST]) * case.size)
        if self.warm:
            self._warm_up(case.routine, args, kind.vector)
        else:
            m.reset_cache()
        r = m.call(case.routine, *args, vector_at_entry=kind.vector)
        self._check(case, kind, r.ret, dst, src)
        return Sample(case.routine, kind.name, case.size, case.src_align, case.dst_align,
                      r.cycles or 0, r.instret, r.cache_misses, r.misaligned)

    def _warm_up(self, routine: str, args: tuple, vector: bool) -> None:
        """Calls that fill the modelled caches and train the branch predictor
        as a loop of calls would: at least warm_calls, and on until the
        global history at entry repeats (a call with few branches leaves
        outcomes of the calls before it in the history, so its branches
        meet untrained counters until then), then one more, so the
        measured call's path has been trained twice from its own history
        (a counter a transient call moved the other way needs two)."""
        m = self.machine
        m.reset_predictor(origin=routine)
        seen = m.predictor_history()
        for i in range(WARM_CALLS_MAX):
            m.call(routine, *args, vector_at_entry=vector)
            now = m.predictor_history()
            if i + 1 >= self.warm_calls and (now is None or now == seen):
                if now is not None:
                    m.call(routine, *args, vector_at_entry=vector)
                return
            seen = now

    def _check(self, case: Case, kind: Kind, ret: int, dst: int, src: int) -> None:
        n = case.size
        want_ret = dst if case.routine in ("memcpy", "memmove", "memset") else 0
        where = f"{case.routine}(size {n}, src+{case.src_align}, dst+{case.dst_align})"
        if ret != want_ret:
            raise BenchError(f"{where} returned {ret:#x}, expected {want_ret:#x}")
        want = {"copy": lambda: self.machine.read(src, n), "clear": lambda: bytes(n),
                "set": lambda: bytes([MEMSET_BYTE]) * n}[kind.form]()
        got = self.machine.read(dst, n)
        if got != want:
            k = next(i for i in range(n) if got[i] != want[i])
            raise BenchError(f"{where} left a wrong destination: byte {k} is {got[k]:#04x}, "
                             f"expected {want[k]:#04x}")


def _kind(symbol: str) -> Kind:
    try:
        return KINDS[symbol]
    except KeyError:
        raise BenchError(f"don't know how to call {symbol!r}; known: {', '.join(KINDS)}") from None
