"""Where the test suite's time goes: per file and per test, from pytest's
own durations.

    python -m bench.suite.suite_time [--out FILE] [--note TEXT] [-- PYTEST ARGS]
    python -m bench.suite.suite_time --from-log LOG [--note TEXT] [--yardstick S]...
    python -m bench.suite.suite_time --yardstick-only

Without --from-log: runs `python3 -m pytest --durations=0 -q` (the README's
test command with every duration reported; PYTEST ARGS are added) and
reads its output.  With --from-log: reads the output of such a run (a
clean-clone run, say); --note records what else ran on the machine.
Writes the wall time, the tests passed, the
worker-seconds (the sum of every setup, call and teardown: on two xdist
workers about twice the wall time), the seconds per test file, and the 40
slowest steps; a run this script makes also records the CPU seconds of
every process of the run (pytest, its workers and what they ran), which
other load on the machine moves far less than the worker-seconds.  The
fast loop (`-- -m "not slow"`) is written to suite_time_fast.json unless
--out says otherwise.

The machines this runs on differ, and one machine's speed drifts within
an hour (CHANGELOG.md, "The test suite", has the figures; docs/testing.md
explains), so a
run's figures go with a yardstick: the CPU seconds of one fixed proof
in one process (YARDSTICK), measured before and after a run this script
makes; for --from-log, time it with --yardstick-only before and after
the clean-clone run and give both with --yardstick.  The run's
worker-seconds divided by the yardstick's mean is its cost in yardsticks:
the figure that compares across machines (a code change moves it, the
machine's speed does not); the run's CPU seconds divided by it are its
CPU cost in yardsticks.  The yardstick is a proof by the prover the
suite tests, so a change to the scalar prover moves the yardstick too:
measure such a change side by side (bench/verify/prover_ab.py), not by this cost.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS = ROOT / "bench" / "suite" / "results"
STEP = re.compile(r"^([\d.]+)s (setup|call|teardown)\s+(\S+)")
SUMMARY = re.compile(r"(\d+) passed.* in ([\d.]+)s")


YARDSTICK = ["-m", "copygen", "verify", "examples/kernel2021.copy", "--routine", "copy_to_user",
             "--no-cache", "-j", "1"]


def yardstick() -> float:
    """CPU seconds (user + system) of the YARDSTICK proof, no answer store."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as d:
        env = {**os.environ, "COPYGEN_ANSWERS": ""}
        r = subprocess.run([sys.executable, *YARDSTICK, "--workdir", d], cwd=ROOT, env=env,
                           capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"the yardstick proof failed (exit {r.returncode}):\n{r.stdout}{r.stderr}")
    return round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)


def parse(text: str) -> dict:
    steps = []
    for line in text.splitlines():
        m = STEP.match(line)
        if m:
            steps.append((float(m.group(1)), m.group(2), m.group(3)))
    per_file: collections.Counter = collections.Counter()
    for sec, _, node in steps:
        per_file[node.split("::", 1)[0]] += sec
    summary = SUMMARY.findall(text)
    passed, wall = (int(summary[-1][0]), float(summary[-1][1])) if summary else (None, None)
    steps.sort(reverse=True)
    return {"passed": passed, "wall_seconds": wall,
            "worker_seconds": round(sum(s for s, _, _ in steps), 2),
            "per_file": {f: round(s, 2) for f, s in per_file.most_common()},
            "slowest": [{"seconds": s, "step": k, "test": n} for s, k, n in steps[:40]]}


def default_out(pytest_args: list[str]) -> Path:
    """suite_time_fast.json for the fast loop (`-m "not slow"`), else
    suite_time.json."""
    marks = [b for a, b in zip(pytest_args, pytest_args[1:]) if a == "-m"]
    marks += [a[2:] for a in pytest_args if a.startswith("-m") and len(a) > 2]
    fast = any(" ".join(m.split()) == "not slow" for m in marks)
    return RESULTS / ("suite_time_fast.json" if fast else "suite_time.json")


def _cpu_of_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from-log", type=Path, help="read a finished run's output instead")
    ap.add_argument("--out", type=Path, default=None,
                    help="default: bench/suite/results/suite_time.json, or suite_time_fast.json "
                         "for the fast loop")
    ap.add_argument("--note", default="", help="what else ran on the machine, for the record")
    ap.add_argument("--yardstick-only", action="store_true",
                    help="only time the yardstick proof (CPU seconds) and print it")
    ap.add_argument("--yardstick", type=float, action="append", default=[],
                    help="with --from-log: a yardstick timed around that run (repeat for each)")
    ap.add_argument("pytest_args", nargs="*")
    args = ap.parse_args(argv)
    if args.yardstick_only:
        print(f"yardstick: {yardstick()} CPU s (python3 {' '.join(YARDSTICK)})")
        return 0
    sticks = list(args.yardstick)
    cpu = None
    if args.from_log:
        text = args.from_log.read_text()
        command = f"python3 -m pytest --durations=0 (log {args.from_log.name})"
    else:
        cmd = [sys.executable, "-m", "pytest", "--durations=0", "-q", *args.pytest_args]
        sticks.append(yardstick())
        t0, c0 = time.time(), _cpu_of_children()
        text = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True).stdout
        cpu = round(_cpu_of_children() - c0, 1)
        print(f"{time.time() - t0:.0f} s")
        command = " ".join(["python3", "-m", "pytest", "--durations=0", "-q", *args.pytest_args])
    out = {"command": command, "date": time.strftime("%Y-%m-%d"), "note": args.note, **parse(text)}
    if out["passed"] is None:
        print("no pytest summary line found", file=sys.stderr)
        return 2
    if cpu is not None:
        out["cpu_seconds"] = cpu
    if not args.from_log:
        sticks.append(yardstick())
    out["yardstick"] = {"command": "python3 " + " ".join(YARDSTICK), "cpu_seconds": sticks}
    if sticks:
        out["cost_in_yardsticks"] = round(out["worker_seconds"] * len(sticks) / sum(sticks), 1)
        if cpu is not None:
            out["cpu_cost_in_yardsticks"] = round(cpu * len(sticks) / sum(sticks), 1)
    target = args.out or default_out(args.pytest_args)
    target.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{out['passed']} passed in {out['wall_seconds']:.0f} s wall, "
          f"{out['worker_seconds']:.0f} worker-seconds"
          + (f", {cpu:.0f} CPU s" if cpu is not None else "") + f"; yardstick {sticks} CPU s"
          + (f" (cost {out['cost_in_yardsticks']} yardsticks)" if sticks else "") + f"; wrote {target}")
    for f, s in list(out["per_file"].items())[:10]:
        print(f"  {s:7.1f} s  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
