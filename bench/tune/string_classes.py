"""An assembly memcpy's second size classes against Linux's mem*.S, memmove too.

    python -m bench.tune.string_classes examples/u74tuned.copy --profile u74 \
        --kernel-tree ~/.cache/copygen/linux-source-6.12 \
        [--then-words 4,2] [--then-shift 4,2,1] [--out FILE]

For each pair of second-class unrolls (`then words unroll W`, `then shift
unroll S`, schedules kept) the strategy's memcpy is built again and its
memcpy and memmove measured on bench/tune/tune_goals.py's grid (every offset
pair of each class, 8 B to 8 KiB, warm): the cells slower than the tree's
memcpy.S and memmove.S, and the sum of all cells.  memmove copies
disjoint buffers with this memcpy, so its cells move with memcpy's; the
tuner's guard (`--guard-kernel-tree`) holds memcpy's cells only.

Writes bench/tune/results/string_classes_<profile>.json (or --out).
"""
from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from bench.tune.tune_goals import grid, kernel_string_elf, slower_cells  # noqa: E402
from copygen.gen.build import build_file  # noqa: E402

ROUTINES = ("memcpy", "memmove")


def variant(text: str, words: int, shift: int) -> str:
    """The strategy with its memcpy block's second classes set."""
    start = text.index("memcpy {")
    end = text.index("}", start)
    block = text[start:end]
    for what, k in (("words", words), ("shift", shift)):
        block, n = re.subn(rf"then {what} unroll \d+", f"then {what} unroll {k}", block)
        if not n:
            raise SystemExit(f"the memcpy block has no `then {what}` line to vary")
    return text[:start] + block + text[end:]


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("strategy", type=Path)
    ap.add_argument("--profile", default="u74")
    ap.add_argument("--kernel-tree", type=Path, required=True)
    ap.add_argument("--then-words", type=_ints, default=[4, 2])
    ap.add_argument("--then-shift", type=_ints, default=[4, 2, 1])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    text = args.strategy.read_text()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        kernel = grid(kernel_string_elf(args.kernel_tree, Path(tmp)), args.profile, ROUTINES)
        for w, s in itertools.product(args.then_words, args.then_shift):
            work = Path(tmp) / f"w{w}s{s}"
            work.mkdir()
            src = work / args.strategy.name
            src.write_text(variant(text, w, s))
            ours = grid(build_file(src, work).elf, args.profile, ROUTINES)
            slow = {r: slower_cells(ours[r], kernel[r]) for r in ROUTINES}
            rows.append({"then_words": w, "then_shift": s,
                         "slower": {r: len(v) for r, v in slow.items()},
                         "slower_cells": slow,
                         "sum_of_cells": {r: round(sum(v for row in ours[r].values()
                                                       for v in row.values()), 1)
                                          for r in ROUTINES}})
    print(f"memcpy classes of {args.strategy} on {args.profile}: cells slower than the tree's "
          "mem*.S, and the sum of all cells")
    print("  then words  then shift  memcpy  memmove  sum memcpy  sum memmove")
    for r in rows:
        print(f"  {r['then_words']:10d}  {r['then_shift']:10d}  {r['slower']['memcpy']:6d}  "
              f"{r['slower']['memmove']:7d}  {r['sum_of_cells']['memcpy']:10.1f}  "
              f"{r['sum_of_cells']['memmove']:11.1f}")
    out = args.out or ROOT / "bench" / "tune" / "results" / f"string_classes_{args.profile}.json"
    out.write_text(json.dumps({
        "strategy": str(args.strategy), "profile": args.profile,
        "command": " ".join(["python", "bench/tune/string_classes.py"] + sys.argv[1:]),
        "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
