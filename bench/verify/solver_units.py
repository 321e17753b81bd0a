"""Z3 resource units against seconds, per solver budget, over real proofs.

    python -m bench.verify.solver_units [EXAMPLE.copy ...] [--routine KIND] [-j N]

Runs `copygen verify --no-cache` on each example with every solver check
logged (its budget, its answer, the units it used and the seconds it took;
forked proof processes log too) and writes, per budget, how many queries
were answered, the most units and seconds an answered one took, and the
units per second over all of them: the figures that verify.solver.budget's
UNITS_PER_MS rests on.  Results: bench/verify/results/solver_units.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402

# Installed in the proving process (and inherited by its forked children):
# Solver.set remembers the limits, Solver.check appends one line per check.
HOOK = r'''
import os, sys, time, z3
_set, _check = z3.Solver.set, z3.Solver.check
LOG = os.environ["SOLVER_UNITS_LOG"]
def _units(s):
    st = s.statistics()
    return int(st.get_key_value("rlimit count")) if "rlimit count" in st.keys() else 0
def set_(self, *a, **k):
    if len(a) == 2:
        setattr(self, "_bench_" + a[0], a[1])
    return _set(self, *a, **k)
def check(self, *a):
    before, t = _units(self), time.perf_counter()
    r = _check(self, *a)
    took = time.perf_counter() - t
    with open(os.path.join(LOG, f"{os.getpid()}.tsv"), "a") as fh:
        fh.write(f"{getattr(self, '_bench_rlimit', 0)}\t{r}\t{_units(self) - before}\t{took:.4f}\n")
    return r
z3.Solver.set, z3.Solver.check = set_, check
from copygen.cli import main
sys.argv = ["copygen"] + sys.argv[1:]
main()
'''


def run(example: str, routines: list[str], jobs: int, log: Path) -> tuple[float, dict]:
    """Seconds and {routine: {clause: status, "seconds": s}} of one verify."""
    args = ["verify", example, "--no-cache", "--json", "-j", str(jobs),
            "--workdir", str(log / "work")]
    for r in routines:
        args += ["--routine", r]
    env = dict(os.environ, SOLVER_UNITS_LOG=str(log))
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", HOOK, *args], cwd=ROOT, env=env, check=False,
                         stdout=subprocess.PIPE, text=True)
    took = time.perf_counter() - t
    try:
        reports = json.loads(out.stdout)
    except json.JSONDecodeError:
        sys.exit(f"copygen verify {example} printed no JSON (exit {out.returncode})")
    return took, {f"{example}:{r['symbol']}": {**r["status"], "seconds": r["seconds"]}
                  for f in reports["files"] for r in f["reports"]}


def summary(log: Path) -> list[dict]:
    rows: dict[int, dict] = defaultdict(lambda: defaultdict(float))
    for f in log.glob("*.tsv"):
        for line in f.read_text().splitlines():
            budget, answer, units, secs = line.split("\t")
            r = rows[int(budget)]
            r["queries"] += 1
            r["units"] += int(units)
            r["seconds"] += float(secs)
            if answer == "unknown":
                r["gave_up"] += 1
            else:
                r["max_units_answered"] = max(r["max_units_answered"], int(units))
                r["max_seconds_answered"] = max(r["max_seconds_answered"], float(secs))
    out = []
    for budget, r in sorted(rows.items()):
        out.append({"budget_units": budget, "queries": int(r["queries"]),
                    "gave_up": int(r["gave_up"]),
                    "max_units_answered": int(r["max_units_answered"]),
                    "max_seconds_answered": round(r["max_seconds_answered"], 3),
                    "seconds": round(r["seconds"], 1),
                    "units_per_ms": round(r["units"] / max(r["seconds"], 1e-9) / 1000)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples", nargs="*", default=["examples/u74tuned.copy"])
    ap.add_argument("--routine", action="append", default=[])
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench/verify/results/solver_units.json"))
    a = ap.parse_args()
    verdicts: dict = {}
    wall = 0.0
    with tempfile.TemporaryDirectory() as d:
        log = Path(d)
        for e in a.examples:
            took, got = run(e, a.routine, a.jobs, log)
            wall += took
            verdicts.update(got)
        rows = summary(log)
    from copygen.verify.solver.budget import BACKSTOP, UNITS_PER_MS
    for r in rows:
        r["budget_ms"] = r["budget_units"] // UNITS_PER_MS
    result = {"command": "python -m bench.verify.solver_units " + " ".join(sys.argv[1:]),
              "examples": a.examples, "routines": a.routine, "jobs": a.jobs,
              "wall_seconds": round(wall, 1), "UNITS_PER_MS": UNITS_PER_MS,
              "BACKSTOP": BACKSTOP, "budgets": rows, "proofs": verdicts}
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'budget':>8} {'queries':>8} {'gave up':>8} {'max answered':>13} "
          f"{'max s':>7} {'units/ms':>9}")
    for r in rows:
        print(f"{r['budget_ms']:>6}ms {r['queries']:>8} {r['gave_up']:>8} "
              f"{r['max_units_answered']:>13} {r['max_seconds_answered']:>7} "
              f"{r['units_per_ms']:>9}")
    for name, st in verdicts.items():
        left = [c for c, s in st.items() if c != "seconds" and s != "proved"]
        print(f"{name}: {st['seconds']:.0f} s, not proved: {', '.join(left) or '-'}")
    print(f"wall {wall:.0f} s; {a.out}")


if __name__ == "__main__":
    sys.exit(exit_status(main))
