"""Workloads: what sizes and alignments callers pass, with probabilities.

Role: the data `copygen rank` weighs cycles by, and the parsers of the
`--sizes`/`--align` options of `copygen bench`.  A workload is a size
distribution times an alignment mix (independent).  Built-ins follow
docs/bench.md, "Workloads"; `load_llvm_csv` reads LLVM libc's distribution files
(one line of probabilities for sizes 0..N).  `size_grid` picks the sizes
actually run: all of a small support, else a quantile grid with linear
interpolation in between, so the expectation stays exact for piecewise-linear
cycle curves and the run time bounded.
Errors are `WorkloadError`s with a one-line message.
Imports: emu.errors, the standard library.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

from copygen.emu.errors import EmuError


class WorkloadError(EmuError):
    """A workload name, file or size/alignment spec that cannot be used."""


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    sizes: tuple[tuple[int, float], ...]         # (size, probability), sums to 1
    aligns: tuple[tuple[int, int, float], ...]   # (src offset, dst offset, probability)

    @property
    def mean_size(self) -> float:
        return sum(s * p for s, p in self.sizes)

    def as_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "mean_size": round(self.mean_size, 2),
                "sizes": len(self.sizes), "max_size": max(s for s, _ in self.sizes),
                "aligns": [[s, d, round(p, 5)] for s, d, p in self.aligns]}


def _normalise(pairs: dict, what: str) -> dict:
    total = sum(pairs.values())
    if total <= 0:
        raise WorkloadError(f"{what}: probabilities sum to {total}, need a positive total")
    return {k: v / total for k, v in pairs.items() if v > 0}


def _uniform(lo: int, hi: int) -> dict[int, float]:
    return {s: 1.0 for s in range(lo, hi + 1)}


def _fleet() -> dict[int, float]:
    # LLVM libc's fleet-wide figures (docs/bench.md, "Workloads"): 96 % of calls <= 128
    # bytes, 99 % <= 1024; spread uniformly inside each band (our assumption).
    d = {s: 0.96 / 129 for s in range(0, 129)}
    d.update({s: 0.03 / 896 for s in range(129, 1025)})
    d.update({s: 0.01 / 3072 for s in range(1025, 4097)})
    return d


SIZE_WORKLOADS = {
    "network": ("TCP segments of 1448 B (80 %), UDP datagrams of 6500 B and 50000 B (10 % each)",
                lambda: {1448: 0.8, 6500: 0.1, 50000: 0.1}),
    "tcp": ("TCP segments: 1448 B (MTU 1500)", lambda: {1448: 1.0}),
    "udp": ("UDP test datagrams: 6500 B and 50000 B, equally often", lambda: {6500: 0.5, 50000: 0.5}),
    "small": ("small strings and headers: uniform 0..64 B", lambda: _uniform(0, 64)),
    "fleet": ("fleet-wide memcpy sizes: 96 % <= 128 B, 99 % <= 1024 B, rest to 4096 B", _fleet),
}


def _mix(weights: dict[int, float]) -> dict[int, float]:
    return {off: weights.get(off, 0.0) for off in range(8)}


# SPEC2017 alignments (ARM optimized-routines; docs/bench.md): ~89 % of
# sources at least 8-byte aligned, ~1.8 % only byte-aligned.  The remaining
# 9.2 % we split 2:1:1 over offsets 4, 2 and 6; destinations get the same mix.
_SPEC = _mix({0: 0.89, 4: 0.046, 2: 0.023, 6: 0.023, 1: 0.0045, 3: 0.0045, 5: 0.0045, 7: 0.0045})

ALIGN_MIXES = {
    "spec": "SPEC2017-like: 89 % of offsets 8-byte aligned, 1.8 % odd (src and dst independent)",
    "aligned": "src and dst 8-byte aligned",
    "all": "all 64 (src, dst) offset pairs mod 8, equally often",
    "src-misaligned": "dst aligned, src offset 1..7 equally often (the set-up of the U74 measurements, docs/calibration.md)",
}


def align_mix(name: str, min_prob: float = 1e-3) -> tuple[tuple[int, int, float], ...]:
    """(src, dst, p) pairs of a named mix; pairs rarer than min_prob are dropped."""
    if name == "spec":
        pairs = {(s, d): _SPEC[s] * _SPEC[d] for s in range(8) for d in range(8)}
    elif name == "aligned":
        pairs = {(0, 0): 1.0}
    elif name == "all":
        pairs = {(s, d): 1.0 for s in range(8) for d in range(8)}
    elif name == "src-misaligned":
        pairs = {(s, 0): 1.0 for s in range(1, 8)}
    else:
        raise WorkloadError(f"unknown alignment mix {name!r}; known: {', '.join(ALIGN_MIXES)}")
    pairs = _normalise({k: v for k, v in pairs.items() if v >= min_prob * max(pairs.values())}, name)
    return tuple((s, d, p) for (s, d), p in sorted(pairs.items()))


def load_llvm_csv(path: str | Path) -> dict[int, float]:
    """LLVM libc's format: one line of comma-separated probabilities for sizes 0..N."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise WorkloadError(f"{path}: cannot read workload file: {e.strerror}") from None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) != 1:
        raise WorkloadError(f"{path}: expected one line of comma-separated probabilities "
                            f"(LLVM libc distribution format), found {len(lines)} lines")
    probs = {}
    for size, field in enumerate(lines[0].split(",")):
        try:
            p = float(field)
        except ValueError:
            raise WorkloadError(f"{path}: field {size + 1} ({field.strip()!r}) is not a number") from None
        if p < 0 or p != p:
            raise WorkloadError(f"{path}: field {size + 1} is {field.strip()}, probabilities must be >= 0")
        probs[size] = p
    return _normalise(probs, str(path))


def make_workload(spec: str, mix: str = "spec") -> Workload:
    """`network`, `tcp`, `udp`, `small`, `fleet`, `uniform:A-B`, or a path to an LLVM CSV file."""
    if spec in SIZE_WORKLOADS:
        desc, make = SIZE_WORKLOADS[spec]
        sizes = _normalise(make(), spec)
    elif spec.startswith("uniform:"):
        lo, hi = _range(spec[len("uniform:"):], spec)
        desc, sizes = f"uniform sizes {lo}..{hi} B", _normalise(_uniform(lo, hi), spec)
    elif spec.endswith(".csv") or Path(spec).is_file():
        desc, sizes = f"LLVM libc size distribution from {spec}", load_llvm_csv(spec)
    else:
        raise WorkloadError(f"unknown workload {spec!r}; built-ins: {', '.join(SIZE_WORKLOADS)}, "
                            f"uniform:A-B, or a .csv file in LLVM libc's distribution format")
    aligns = align_mix(mix)
    return Workload(f"{spec}+{mix}", f"{desc}; alignment: {ALIGN_MIXES[mix]}",
                    tuple(sorted(sizes.items())), aligns)


def _range(text: str, spec: str) -> tuple[int, int]:
    sep = ".." if ".." in text else "-"
    try:
        lo, hi = (int(x) for x in text.split(sep))
    except ValueError:
        raise WorkloadError(f"{spec!r}: expected A-B or A..B with integers A <= B") from None
    if not 0 <= lo <= hi:
        raise WorkloadError(f"{spec!r}: expected 0 <= A <= B")
    return lo, hi


def size_grid(sizes: tuple[tuple[int, float], ...], budget: int = 160) -> dict[int, float]:
    """Weights on a grid of sizes to run such that sum(w * cycles(grid)) is the
    expectation of cycles under linear interpolation between grid points."""
    if len(sizes) <= budget:
        return dict(sizes)
    support = [s for s, _ in sizes]
    cdf, acc = [], 0.0
    for _, p in sizes:
        acc += p
        cdf.append(acc)
    grid = {support[0], support[-1]} | {s for s, p in sizes if s <= 72 or p >= 0.005}
    n = max(budget - len(grid), 2)
    for k in range(1, n + 1):  # quantile points: the grid is dense where the mass is
        grid.add(support[min(bisect.bisect_left(cdf, k / (n + 1)), len(support) - 1)])
    pts = sorted(grid)
    weights = dict.fromkeys(pts, 0.0)
    for s, p in sizes:
        i = bisect.bisect_left(pts, s)
        if pts[i] == s:
            weights[s] += p
            continue
        lo, hi = pts[i - 1], pts[i]
        weights[lo] += p * (hi - s) / (hi - lo)
        weights[hi] += p * (s - lo) / (hi - lo)
    return weights


def parse_sizes(text: str) -> list[int]:
    """`8,64,1448`, ranges `0-64` or `0..64`, with a step `0-4096/512`."""
    out: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        step = 1
        if "/" in part:
            part, _, st = part.partition("/")
            step = _int(st, text)
        if "-" in part or ".." in part:
            lo, hi = _range(part, f"--sizes {text}")
            out.update(range(lo, hi + 1, max(step, 1)))
        else:
            out.add(_int(part, text))
    if not out or min(out) < 0:
        raise WorkloadError(f"--sizes {text!r}: need at least one size, all >= 0")
    return sorted(out)


def parse_aligns(text: str) -> list[tuple[int, int]]:
    """`S:D` offset pairs (0..63), comma-separated; `*` stands for every offset 0..7;
    or a mix name (`aligned`, `all`, `spec`, `src-misaligned`)."""
    if text in ALIGN_MIXES:
        return [(s, d) for s, d, _ in align_mix(text, min_prob=0.0)]
    out: list[tuple[int, int]] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        src, sep, dst = part.partition(":")
        if not sep:
            raise WorkloadError(f"--align {text!r}: {part!r} is not SRC:DST (e.g. 0:0,1:0,*:3)")
        for s in range(8) if src == "*" else [_int(src, text)]:
            for d in range(8) if dst == "*" else [_int(dst, text)]:
                if not (0 <= s < 64 and 0 <= d < 64):
                    raise WorkloadError(f"--align {text!r}: offsets must be in 0..63")
                if (s, d) not in out:
                    out.append((s, d))
    if not out:
        raise WorkloadError(f"--align {text!r}: no offset pairs")
    return out


def _int(text: str, whole: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise WorkloadError(f"{whole!r}: {text!r} is not an integer") from None
