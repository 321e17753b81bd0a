"""Throughput of the tuner from a cold store (issue 18: at least 1,500
variants built and benched per hour on this 2-core machine, plus the top 5
proved).

Usage: python -m bench.tune.tune_speed [--jobs 2] [--sweep FILE.copy] [--name SWEEP]
                                  [--workload W] [--align-mix M] [--max-text B]
                                  [--out F.json]
Runs `copygen tune` on the sweep (default: bench/tune/tune_speed.copy; --name
picks one of a file's several sweeps, as `copygen tune --sweep` does) with an
empty store, build cache and proof cache in a temporary directory, and
times the evaluation (build + bench of every distinct routine) and the
proofs of the top 5 apart.  Writes bench/tune/results/tune_speed.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402


def _tune(args: list[str], cwd: str) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "copygen", "tune", *args], capture_output=True,
                       text=True, cwd=cwd)
    if r.returncode:
        sys.exit(f"copygen tune failed ({r.returncode}):\n{r.stderr}")
    return time.monotonic() - t0, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sweep", default=str(ROOT / "bench" / "tune_speed.copy"))
    ap.add_argument("--name", default=None, help="which sweep of the file (copygen tune --sweep)")
    ap.add_argument("--workload", default="network")
    ap.add_argument("--align-mix", default=None, help="copygen tune --align-mix")
    ap.add_argument("--max-text", default=None, help="copygen tune --max-text")
    ap.add_argument("--out", default=str(ROOT / "bench" / "tune" / "results" / "tune_speed.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="copygen-tune-speed-") as d:
        common = [args.sweep, "--db", f"{d}/t.db", "--build-cache", f"{d}/cache",
                  "--proof-cache", f"{d}/proofs", "--workload", args.workload, "-j", str(args.jobs),
                  "--json"]
        common += ["--sweep", args.name] if args.name else []
        common += ["--align-mix", args.align_mix] if args.align_mix else []
        common += ["--max-text", args.max_text] if args.max_text else []
        evaluate_s, r = _tune(common + ["--top", "0"], ROOT)
        counts = re.search(r"(\d+) points \(\d+ pruned\), (\d+) distinct", r.stderr)
        points, distinct = int(counts.group(1)), int(counts.group(2))
        prove_s, r = _tune(common + ["--top", "5"], ROOT)
        rows = json.loads(r.stdout)["rows"]
    result = {
        "command": "python -m bench.tune.tune_speed " + " ".join(sys.argv[1:]),
        "sweep": os.path.relpath(args.sweep, ROOT), "name": args.name, "workload": args.workload,
        "align_mix": args.align_mix or "spec", "max_text": args.max_text, "jobs": args.jobs,
        "points": points, "distinct_routines": distinct,
        "evaluate_seconds": round(evaluate_s, 1),
        "variants_per_hour": round(3600 * distinct / evaluate_s),
        "points_per_hour": round(3600 * points / evaluate_s),
        "prove_top5_seconds": round(prove_s, 1),
        "top5": [{k: row[k] for k in ("rank", "point", "expected_cycles", "proof")} for row in rows[:5]],
        "cpus": os.cpu_count(),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(exit_status(main))
