"""Where an assembly memcpy's short path stops paying: `bytes below T unroll K`.

    python -m bench.tune.short_bytes examples/u74tuned.copy --profile u74 \
        [--sizes 8-24] [--out bench/tune/results/short_bytes_u74_spec.json]

Builds the strategy's memcpy without the line and with `bytes below 64
unroll K` for each K (2, 4, 8): a call shorter than 64 bytes with a
misaligned dst then takes the blocks, so one build gives their cost at
every size below 64.  For each size, the mean cycles over the 56 (src, dst)
pairs whose dst is misaligned (warm L1, as `copygen bench --align all`),
without the line and with each K.  The best threshold for a K is the one
that minimises the cycles summed over the sizes measured, each size
weighted alike; the calls with an aligned dst never reach the head, so
they cost the same either way.

Writes bench/tune/results/short_bytes_<profile>.json (or --out).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from copygen.gen.build import build_file  # noqa: E402
from copygen.measure.bench import Bench, Case  # noqa: E402
from copygen.measure.workload import parse_sizes  # noqa: E402

UNROLLS = (2, 4, 8)
LINE = re.compile(r"^\s*bytes below \d+ unroll \d+\s*\n", re.M)


def variant(text: str, unroll: int | None) -> str:
    """The strategy with its memcpy's `bytes below` line removed, or set
    to cover every size below 64 with blocks of `unroll` bytes."""
    text = LINE.sub("", text)
    if unroll is None:
        return text
    block = re.search(r"memcpy\s*\{[^}]*?small below \d+[;\n]", text)
    if not block:
        raise SystemExit("the file has no memcpy block with a `small below` line")
    at = block.end()
    return text[:at] + f" bytes below 64 unroll {unroll}\n" + text[at:]


def means(elf: Path, profile: str, sizes: list[int]) -> dict[int, float]:
    bench = Bench(elf, profile, max(sizes))
    pairs = [(s, d) for s in range(8) for d in range(1, 8)]
    return {n: sum(bench.run(Case("memcpy", n, s, d)).cycles for s, d in pairs) / len(pairs)
            for n in sizes}


def threshold(base: dict[int, float], short: dict[int, float]) -> int:
    """The `bytes below` that minimises the cycles summed over the sizes
    measured, each size weighted alike (the smallest such)."""
    sizes = sorted(base)
    cost = {t: sum(short[n] for n in sizes if n < t) + sum(base[n] for n in sizes if n >= t)
            for t in [*sizes, sizes[-1] + 1]}
    return min(cost, key=lambda t: (round(cost[t], 6), t))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("strategy", type=Path)
    ap.add_argument("--profile", default="u74")
    ap.add_argument("--sizes", default="8-24", help="sizes below 64 (default 8-24)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sizes = parse_sizes(args.sizes)
    if not sizes or max(sizes) >= 64 or min(sizes) < 8:
        raise SystemExit("--sizes: give sizes from 8 to 63 (the short path's range)")
    text = args.strategy.read_text()
    rows: dict[str, dict[int, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in (None, *UNROLLS):
            name = "pieces" if k is None else f"unroll {k}"
            work = Path(tmp) / name.replace(" ", "")
            work.mkdir()
            src = work / args.strategy.name
            src.write_text(variant(text, k))
            rows[name] = means(build_file(src, work).elf, args.profile, sizes)
    base = rows["pieces"]
    best = {k: threshold(base, rows[f"unroll {k}"]) for k in UNROLLS}
    print(f"memcpy of {args.strategy}, {args.profile}: mean cycles over the 56 pairs "
          "with a misaligned dst")
    print("  size " + "".join(f"{name:>11s}" for name in rows))
    for n in sizes:
        print(f"{n:6d} " + "".join(f"{row[n]:11.1f}" for row in rows.values()))
    for k, t in best.items():
        print(f"unroll {k}: best `bytes below {t}`")
    out = args.out or ROOT / "bench" / "tune" / "results" / f"short_bytes_{args.profile}.json"
    out.write_text(json.dumps({
        "strategy": str(args.strategy), "profile": args.profile,
        "command": " ".join(["python", "bench/tune/short_bytes.py"] + sys.argv[1:]),
        "what": "memcpy mean cycles over the 56 misaligned-dst pairs, warm; "
                "'pieces': without `bytes below`; 'unroll K': blocks at every size shown",
        "cycles": {name: {str(n): round(v, 2) for n, v in row.items()} for name, row in rows.items()},
        "best_below": {str(k): t for k, t in best.items()}}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
