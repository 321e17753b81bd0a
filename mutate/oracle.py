"""The qemu oracle: emitted routines run under qemu-riscv64 through
harness.c (real qemu, real page protections, our own trap emulation), an
oracle independent of copygen's emulator.

build_harness(objs, exe) links the harness with the routine objects;
run_cases(exe, cases) feeds cases and parses one Result per case;
run_cases(exe, cases, weighted=True) also asks for each case's `wsum`
(a digest of the destination arena that numpy can compute: `wsum_of`).

Role: the oracle's cases, harness and result parsing.  qemu and the cross
compiler run through copygen.gen.toolchain.  May import gen.toolchain,
copygen.errors, the standard library (numpy when present).
"""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from copygen.gen import toolchain

PAGE = 4096
ARENA = 4 * PAGE + 16384


@dataclass(frozen=True)
class Case:
    fn: str            # to | from | clear | memcpy | memmove | memset
    dst_off: int
    src_off: int
    n: int
    fault_side: str = "none"   # none | dst | src
    fault_at: int = 0          # arena offset, multiple of PAGE
    seed: int = 1

    def line(self) -> str:
        return (f"{self.fn} {self.dst_off} {self.src_off} {self.n} {self.fault_side} "
                f"{self.fault_at} {self.seed}")

    def exact_return(self) -> int:
        """Bytes not copied under `fault exact`: from the first byte of the
        inaccessible page to the end of the faulting buffer (0 without a
        fault); assumes the buffer starts before that page."""
        if self.fault_side == "none":
            return 0
        off = self.dst_off if self.fault_side == "dst" else self.src_off
        return off + self.n - self.fault_at

@dataclass(frozen=True)
class Result:
    ret: int
    sum_at_exit: bool
    prefix_ok: bool
    rest_untouched: bool
    digest: str
    wsum: int | None = None    # only with run_cases(..., weighted=True)


def harness_source() -> Path:
    """harness.c, package data of this folder."""
    return Path(str(files(__package__))) / "harness.c"


def build_harness(objs: list[Path], exe: Path) -> Path:
    toolchain.run("gcc", ["-O1", "-static", "-o", exe, harness_source(), *objs])
    return exe


def run_cases(exe: Path, cases: list[Case], weighted: bool = False) -> list[Result]:
    text = "".join(c.line() + "\n" for c in cases)
    proc = toolchain.run_user(exe, ["-w"] if weighted else [], text)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == len(cases), (
        f"harness exit {proc.returncode}: {proc.stderr.strip()} after {len(lines)} cases; "
        f"next case: {cases[len(lines)].line() if len(lines) < len(cases) else '-'}")
    out = []
    for ln in lines:
        ret, s, p, r, h, *w = ln.split()
        out.append(Result(int(ret), s == "1", p == "1", r == "1", h, int(w[0], 16) if w else None))
    return out


def _splitmix64(i: int) -> int:
    m = (1 << 64) - 1
    z = ((i + 1) * 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


WEIGHTS = [_splitmix64(i) | 1 for i in range(ARENA)]


def wsum_of(data: bytes) -> int:
    """The harness's WSUM of an arena's bytes (sum of byte * weight mod 2^64)."""
    assert len(data) == ARENA
    try:
        import numpy as np
    except ImportError:
        return sum(b * w for b, w in zip(data, WEIGHTS)) & ((1 << 64) - 1)
    return int((np.frombuffer(data, dtype=np.uint8).astype(np.uint64) * _np_weights()).sum(dtype=np.uint64))


@functools.lru_cache(maxsize=1)
def _np_weights():
    import numpy as np
    return np.array(WEIGHTS, dtype=np.uint64)


def _offset(rng: random.Random, n: int) -> int:
    """A buffer offset in the arena: any of the 8 alignments, often placed so
    that the buffer crosses a page boundary (where faults are injected)."""
    off = rng.randrange(8)
    coin = rng.random()
    if coin < 0.3 and n > 1:
        off = PAGE - rng.randrange(1, min(n, PAGE))      # straddles a page boundary
    elif coin < 0.6:
        off += 8 * rng.randrange(PAGE // 8)
    return off if off + n <= ARENA else rng.randrange(8)


def random_cases(fn: str, count: int, max_n: int = 9000, seed: int = 0,
                 faults: bool = True) -> list[Case]:
    """Sizes 0..max_n, all 64 alignment pairs, half with a fault in the user
    buffer at a random page boundary inside it."""
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        n = rng.choice([rng.randrange(0, 160), rng.randrange(0, max_n + 1)])
        d, s = _offset(rng, n), _offset(rng, n)
        if fn == "memmove":
            d, s = rng.randrange(0, 600), rng.randrange(0, 600)
        side, at = "none", 0
        user = {"to": "dst", "from": "src", "clear": "dst"}.get(fn)
        if faults and user and i % 2:
            off = d if user == "dst" else s
            pages = [p for p in range(1, ARENA // PAGE) if off < p * PAGE <= off + n]
            if pages:
                side, at = user, rng.choice(pages) * PAGE
        cases.append(Case(fn, d, s, n, side, at, rng.randrange(1 << 30)))
    return cases
