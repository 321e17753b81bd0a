"""How long the bounded exhaustive cross-check (`copygen verify --bounded N`)
takes: runs, seconds and runs per second for each routine of one example.

    python bench/verify_bounded.py [EXAMPLE] [N ...]   (default: kernel2021 16 32)

Writes bench/results/verify_bounded.json (merged with earlier runs, keyed by
example, routine and N) and prints a table.  One process: the runs are
sequential emulator calls.
"""
from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "bench" / "results" / "verify_bounded.json"


def measure(example: str, limits: list[int]) -> list[dict]:
    from gen.build import build_file
    from verify.bounded import check, scenarios
    from verify.inputs import routines
    elf = build_file(ROOT / "examples" / f"{example}.copy", ROOT / "build" / "bench_bounded").elf
    rows = []
    for sym, kind in routines(elf):
        for n in limits:
            runs = sum(1 for _ in scenarios(kind, n, random.Random(n)))
            t0 = time.time()
            bad = check(str(elf), sym, kind, n)
            dt = time.time() - t0
            rows.append({"example": example, "routine": sym, "N": n, "runs": runs,
                         "seconds": round(dt, 1), "runs_per_second": round(runs / dt),
                         "violated": sorted(bad)})
            print(f"{example:12s} {sym:22s} N={n:<4d} {runs:7d} runs {dt:7.1f} s "
                  f"{runs / dt:7.0f} runs/s  violated: {', '.join(sorted(bad)) or '-'}",
                  flush=True)
    return rows


def main(argv: list[str]) -> None:
    example = argv[0] if argv else "kernel2021"
    limits = [int(a) for a in argv[1:]] or [16, 32]
    rows = measure(example, limits)
    old = json.loads(OUT.read_text()) if OUT.exists() else {"rows": []}
    keep = [r for r in old["rows"] if (r["example"], r["routine"], r["N"]) not in
            {(x["example"], x["routine"], x["N"]) for x in rows}]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"command": "python bench/verify_bounded.py EXAMPLE N ...",
                               "rows": keep + rows}, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
