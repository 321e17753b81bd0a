"""Issue 18's per-cell goals for a tuned copy_user, under one cost profile.

    python bench/tune_goals.py examples/u74tuned.copy --profile u74 \
        --baseline examples/kernel2021.copy --baseline examples/pre2021.copy

Benches __asm_copy_to_user of each file at the tuner's 12 sizes (8 B to
8 KiB) and every one of the 64 (src, dst) offset pairs of `copygen bench
--align all`, warm L1; a cell is the mean over its class's pairs (aligned:
1, co-aligned: 7, misaligned: 56), as issue 18 defines it.  The tuner's
own grid samples 4 of the 56 misaligned pairs; this script measures them
all.  Reports, against each baseline, every cell where the tuned routine
is slower, and the smallest speed-up over each goal's range (ratios
against the first baseline), then the speed-up per size and class against
the first baseline.  Writes bench/results/tune_goals_<profile>.json, or the
file given by --out (for a trial that must not replace the recorded one).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from exits import exit_status  # noqa: E402
from copygen.gen.build import build_cached  # noqa: E402
from copygen.measure.bench import Bench, Case, align_class  # noqa: E402
from copygen.tune.evaluate import GRID_SIZES  # noqa: E402

# (name, class, smallest size, largest size, required speed-up)
GOALS = (("aligned 16-64 B", "aligned", 16, 64, 2.5),
         ("aligned 72 B-1 KiB", "aligned", 72, 1024, 1.15),
         ("misaligned 512 B-8 KiB", "misaligned", 512, 8192, 1.8))


def grid(path: Path, profile: str, cache: str) -> dict:
    """{class: {size: mean cycles over the class's offset pairs}}."""
    bench = Bench(build_cached(path, Path(cache)).elf, profile, max(GRID_SIZES))
    cells: dict[str, dict[str, list[int]]] = {}
    for src in range(8):
        for dst in range(8):
            row = cells.setdefault(align_class(src, dst), {})
            for n in GRID_SIZES:
                row.setdefault(str(n), []).append(
                    bench.run(Case("__asm_copy_to_user", n, src, dst)).cycles)
    return {cls: {n: sum(v) / len(v) for n, v in row.items()} for cls, row in cells.items()}


def compare(ours: dict, base: dict) -> dict:
    cells = {cls: {n: base[cls][n] / ours[cls][n] for n in ours[cls]} for cls in ours}
    slower = [(cls, int(n), round(r, 3)) for cls, row in cells.items() for n, r in row.items()
              if r < 1.0]
    return {"speedup": {c: {n: round(r, 3) for n, r in row.items()} for c, row in cells.items()},
            "slower_cells": slower}


def goals(cells: dict) -> list[dict]:
    out = []
    for name, cls, lo, hi, need in GOALS:
        ratios = {n: cells[cls][str(n)] for n in GRID_SIZES if lo <= n <= hi}
        worst = min(ratios, key=ratios.get)
        out.append({"goal": name, "required": need, "min": round(ratios[worst], 3),
                    "at": worst, "met": ratios[worst] >= need})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tuned", type=Path)
    ap.add_argument("--profile", default="u74")
    ap.add_argument("--baseline", type=Path, action="append", required=True)
    ap.add_argument("--out", type=Path, help="where to write the JSON (default: "
                    "bench/results/tune_goals_<profile>.json)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        ours = grid(args.tuned, args.profile, cache)
        result = {"tuned": str(args.tuned), "profile": args.profile, "cycles": ours,
                  "command": " ".join(["python", "bench/tune_goals.py"] + sys.argv[1:]),
                  "baselines": {}}
        for b in args.baseline:
            theirs = grid(b, args.profile, cache)
            result["baselines"][str(b)] = {"cycles": theirs, **compare(ours, theirs)}
    first = result["baselines"][str(args.baseline[0])]
    result["goals"] = goals(first["speedup"])
    for g in result["goals"]:
        print(f"{g['goal']:24s} >= {g['required']}x {args.baseline[0].stem}: "
              f"min {g['min']}x at {g['at']} B  {'met' if g['met'] else 'NOT met'}")
    for b, r in result["baselines"].items():
        cells = ", ".join(f"{c} {n} B {x}x" for c, n, x in r["slower_cells"]) or "none"
        print(f"slower than {Path(b).stem} in: {cells}")
    print(f"\nspeed-up against {args.baseline[0].stem} (cycles of {args.tuned.stem}):")
    classes = list(first["speedup"])
    print("  size  " + "".join(f"{c:>22s}" for c in classes))
    for n in GRID_SIZES:
        print(f"{n:6d}  " + "".join(f"{first['speedup'][c][str(n)]:>13.3f}x ({ours[c][str(n)]:6.1f})"
                                    for c in classes))
    out = args.out or ROOT / "bench" / "results" / f"tune_goals_{args.profile}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
