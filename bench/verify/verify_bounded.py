"""How long the bounded exhaustive cross-check (`copygen verify --bounded N`)
takes: runs, seconds and runs per second for each routine of one example.

    python -m bench.verify.verify_bounded [EXAMPLE] [N ...] [--jobs J] [--routine R]
    (default: kernel2021 16 32, one process, every routine)

Writes bench/verify/results/verify_bounded.json after every routine and N (merged
with earlier runs, keyed by example, routine and N: a killed run keeps
what it measured) and prints a line for each.  The sizes are spread over
J processes (verify.counterexamples.bounded.check).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402

OUT = ROOT / "bench" / "verify" / "results" / "verify_bounded.json"


def measure(example: str, limits: list[int], jobs: int, only: str | None) -> None:
    from copygen.gen.build import build_file
    from copygen.verify.counterexamples.bounded import check, scenarios
    from copygen.verify.contract.inputs import routines
    elf = build_file(ROOT / "examples" / f"{example}.copy", ROOT / "build" / "bench_bounded").elf
    for sym, kind in routines(elf):
        if only and sym != only:
            continue
        for n in limits:
            runs = sum(1 for _ in scenarios(kind, n, random.Random(n)))
            t0 = time.time()
            bad = check(str(elf), sym, kind, n, jobs)
            dt = time.time() - t0
            _save({"example": example, "routine": sym, "N": n, "runs": runs, "jobs": jobs,
                   "seconds": round(dt, 1), "runs_per_second": round(runs / dt),
                   "violated": sorted(bad)})
            print(f"{example:12s} {sym:22s} N={n:<4d} {runs:7d} runs {dt:7.1f} s "
                  f"{runs / dt:7.0f} runs/s ({jobs} processes)  "
                  f"violated: {', '.join(sorted(bad)) or '-'}", flush=True)


def _save(row: dict) -> None:
    old = json.loads(OUT.read_text()) if OUT.exists() else {"rows": []}
    key = (row["example"], row["routine"], row["N"])
    keep = [r for r in old["rows"] if (r["example"], r["routine"], r["N"]) != key]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"command": "python -m bench.verify.verify_bounded EXAMPLE N ... "
                                          "[--jobs J]",
                               "rows": keep + [row]}, indent=2) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("example", nargs="?", default="kernel2021")
    ap.add_argument("limits", nargs="*", type=int, default=[16, 32])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--routine", default=None)
    args = ap.parse_args()
    measure(args.example, args.limits, max(1, args.jobs), args.routine)


if __name__ == "__main__":
    sys.exit(exit_status(main))
