"""Boot a `copygen patch --fast-body ... --routine string` kernel in QEMU
with the misaligned access probe's verdict forced slow and fast, without
and with V, and show which memcpy and memmove ran (docs/speeds.md, "The
string functions: memcpy and memmove", "Booted").

It runs `copygen kunit --kernel-tree TREE REV --force-misaligned both
--json` (kernel.speedsuite: a test-only suite on top of the fault suite on
top of REV, the verdict forced on the kernel command line at each boot, one
build for the four boots; its cases count with kprobes which body of
memcpy.S's __memcpy/__memcpy_fast and __memmove/__memmove_fast each call
entered) and records, per boot, every suite's results (the kernel's
memcpy and string suites run on the forced bodies), the probe's own
verdict on QEMU, the key the suite found, the calls each routine's case
checked and entered in each body, and the seconds of the build and the
boot.

Usage: python -m bench.kernel.speeds_string_boot --tree TREE --rev PATCHED --label NAME
[--from RUN.json] (PATCHED: a commit or branch with the string patch;
--from takes a saved `copygen kunit ... --json` output instead of booting
again).  Writes the run under NAME in
bench/kernel/results/speeds_string_boot.json, the other labels kept:
`alone` (the patch on the tree's base, whose uaccess.S fails 16 of the
fault suite's cases before any patch) and `on_uaccess` (the patch on the
one-body user copy patch, copygen/u74tuned-uaccess, which fixes those).
About 12 minutes a label (one incremental build, four boots); never part
of the test suite.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.kernel.speeds_boot import forced_boots

ROOT = Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "bench" / "kernel" / "results" / "speeds_string_boot.json"
ROUTINES = ("memcpy", "memmove")


def boots(doc: dict) -> list[dict]:
    """One record per boot of a `copygen kunit --json` output: the
    forced speed, the suites, the probe and the key, and per string
    routine its calls checked and entered in each body."""
    out = []
    for r in doc.get("runs", []):
        sp = r.get("speeds", {})
        string = sp.get("string", {})
        out.append({"forced": r.get("forced"), "vector": r["vector"],
                    "suites": {s["name"]: f"{s['passed']}/{s['total']}" for s in r["suites"]},
                    "probe": sp.get("probe"), "key_left_by_probe": sp.get("probed_key"),
                    "key": sp.get("key"), "ran": sp.get("ran"),
                    **{name: string.get(name) for name in ROUTINES},
                    # the user copy's, when the revision has two (the --fast-body user copy patch too)
                    "copy": None if "copies" not in sp else {
                        "calls": sp["copies"], "slow_entered": sp["slow_entered"],
                        "fast_entered": sp["fast_entered"]},
                    "missing": sp.get("missing", []),
                    "build_seconds": round(r["build_seconds"], 1),
                    "boot_and_tests_seconds": round(r["run_seconds"], 1),
                    "suite_seconds": r.get("suite_seconds", {}), "tested": r.get("tested")})
    return out


def ran_forced(record: dict) -> bool:
    """Every boot: each routine's calls entered the body forced, and none
    the other."""
    return bool(record["boots"]) and all(
        b["ran"] == b["forced"] and all(b[name] and b[name]["ran"] == b["forced"] for name in ROUTINES)
        for b in record["boots"])


def passed(record: dict) -> bool:
    """Every boot: every suite passed."""
    return bool(record["boots"]) and all(
        p == t for b in record["boots"] for p, t in (s.split("/") for s in b["suites"].values()))


def log(tree: str, rev: str) -> list[str]:
    """The revision's last commits, newest first: what was booted."""
    return subprocess.run(["git", "-C", tree, "log", "-3", "--format=%h %s", rev],
                          capture_output=True, text=True).stdout.splitlines()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--rev", required=True)
    ap.add_argument("--label", required=True, help="the run's name in the results file")
    ap.add_argument("--from", dest="saved", type=Path, default=None,
                    help="a saved `copygen kunit ... --json` output")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    command, doc, code = forced_boots(args.tree, args.rev, args.saved, Path(tempfile.gettempdir())
                                      / f"speeds_string_boot.{args.label}.kunit.json")
    git = ["git", "-C", args.tree]
    rev = subprocess.run([*git, "rev-parse", args.rev], capture_output=True, text=True).stdout.strip()
    subject = subprocess.run([*git, "log", "-1", "--format=%s", args.rev], capture_output=True,
                             text=True).stdout.strip()
    from copygen.kernel import kunit
    record = {"bench_command": " ".join(["python -m bench.kernel.speeds_string_boot",
                                         *(argv if argv is not None else sys.argv[1:])]),
              "command": " ".join(command), "rev": rev, "subject": subject, "ok": doc.get("ok"),
              "exit": code, "wall_seconds": None if args.saved else round(time.monotonic() - t0),
              "kunitconfig": kunit.kunitconfig(True, True).splitlines(), "boots": boots(doc)}
    record.update(every_boot_ran_the_forced_bodies=ran_forced(record),
                  every_suite_passed=passed(record))
    record["log"] = log(args.tree, args.rev)
    runs = json.loads(OUT.read_text()).get("runs", {}) if OUT.is_file() else {}
    runs[args.label] = record
    OUT.write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    print(json.dumps(record["boots"], indent=1))
    return 0 if doc.get("ok") and ran_forced(record) else 3


if __name__ == "__main__":
    sys.exit(main())
