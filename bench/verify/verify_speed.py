"""How long a full proof of each example routine takes (issue 4: at most 60 s
per routine on this 2-core machine, 30 s the long-term goal).

Usage: python -m bench.verify.verify_speed [--jobs 2] [--out FILE] [EXAMPLE.copy ...]
Writes bench/verify/results/verify_speed.json, or --out (after every routine, so a killed
run keeps what it measured) and prints a line per routine.  Routines run one
after another, each spreading its queries over --jobs processes, as
`copygen verify` runs them.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402


def _one(elf, sym, kind, jobs):
    """One routine's proof as `copygen verify` runs it: a vector routine at
    every VLEN (verify.vector.vprove, in this process), the others over `jobs`."""
    from copygen.verify.checks.prove import prove_routine
    from copygen.verify.vector.vprove import prove_vectors
    from copygen.verify.contract.world import VECTOR_KINDS
    if kind in VECTOR_KINDS:
        rep = prove_vectors(elf, symbol=sym)
    else:
        rep = prove_routine(elf, sym, kind, jobs=jobs)
    return {"routine": sym, "kind": kind, "seconds": round(rep.seconds, 1),
            "status": rep.status,
            "not_proved": {c: rep.detail.get(c, "") for c, st in rep.status.items()
                           if st != "proved"}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples", nargs="*", default=sorted(str(p) for p in (ROOT / "examples").glob("*.copy")))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "verify" / "results" / "verify_speed.json",
                    help="the JSON to write (default: bench/verify/results/verify_speed.json)")
    args = ap.parse_args()
    from copygen.gen.build import build_file
    from copygen.verify.contract.inputs import routines
    work = ROOT / "build" / "verify_speed"
    jobs, names = [], []
    for ex in args.examples:
        res = build_file(ex, work)
        for sym, kind in routines(res.elf):
            jobs.append((str(res.elf), sym, kind))
            names.append(Path(ex).stem)
    t0 = time.time()
    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, (elf, sym, kind) in zip(names, jobs):
        row = _one(elf, sym, kind, args.jobs)
        row["example"] = name
        rows.append(row)
        bad = sorted(c for c, s in row["status"].items() if s != "proved")
        print(f"{name:14} {row['routine']:22} {row['seconds']:7.1f} s  "
              f"not proved: {', '.join(bad) or '-'}", flush=True)
        wall = time.time() - t0
        out.write_text(json.dumps({
            "command": " ".join(["python", "bench/verify/verify_speed.py", *sys.argv[1:]]), "jobs": args.jobs,
            "cores": os.cpu_count(), "wall_seconds": round(wall, 1),
            "max_seconds": max(r["seconds"] for r in rows), "routines": rows}, indent=2) + "\n")
    print(f"wall {wall:.0f} s for {len(rows)} routines, {args.jobs} processes each "
          f"({os.cpu_count()} cores); max {max(r['seconds'] for r in rows):.0f} s")


if __name__ == "__main__":
    sys.exit(exit_status(main))
