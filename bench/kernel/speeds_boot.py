"""Boot a `copygen patch --fast-body` kernel in QEMU with the misaligned
access probe's verdict forced slow and fast, without and with V, and show
which scalar copy ran (docs/speeds.md, "Booted").

It runs `copygen kunit --kernel-tree TREE REV --force-misaligned both
--json` (kernel.speedsuite: a test-only suite on top of the fault suite on
top of REV, the verdict forced on the kernel command line at each boot, one
build for the four boots) and records, per boot, every suite's results,
the probe's own verdict on QEMU, the key the suite found, its copies and
which copy they entered, and the seconds of the build and the boot.

Usage: python -m bench.kernel.speeds_boot --tree TREE --rev PATCHED [--from RUN.json]
(PATCHED: the patch's commit or branch; --from takes a saved `copygen
kunit ... --json` output instead of booting again).  Writes
bench/kernel/results/speeds_boot.json.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "bench" / "kernel" / "results" / "speeds_boot.json"


def boots(doc: dict) -> list[dict]:
    """One record per boot of a `copygen kunit --json` output."""
    out = []
    for r in doc.get("runs", []):
        sp = r.get("speeds", {})
        out.append({"forced": r.get("forced"), "vector": r["vector"],
                    "suites": {s["name"]: f"{s['passed']}/{s['total']}" for s in r["suites"]},
                    "probe": sp.get("probe"), "key_left_by_probe": sp.get("probed_key"),
                    "key": sp.get("key"), "copies": sp.get("copies"),
                    "slow_copy_entered": sp.get("slow_entered"),
                    "fast_copy_entered": sp.get("fast_entered"), "ran": sp.get("ran"),
                    "build_seconds": round(r["build_seconds"], 1),
                    "boot_and_tests_seconds": round(r["run_seconds"], 1),
                    "suite_seconds": r.get("suite_seconds", {}), "tested": r.get("tested")})
    return out


def forced_boots(tree: str, rev: str, saved: Path | None,
                 keep: Path | None = None) -> tuple[list[str], dict, int | None]:
    """(the command, its JSON, its exit status) of `copygen kunit REV
    --force-misaligned both --json`, run here or read from `saved` (status
    None); `keep`: where to leave the run's output for a later --from."""
    command = ["copygen", "kunit", "--kernel-tree", tree, rev, "--force-misaligned", "both", "--json"]
    if saved:
        return command, json.loads(saved.read_text()), None
    proc = subprocess.run([sys.executable, "-m", "copygen", *command[1:]], cwd=ROOT,
                          capture_output=True, text=True)
    sys.stderr.write(proc.stderr[-3000:])
    if keep:
        keep.write_text(proc.stdout)
        print(f"copygen kunit's output: {keep}", file=sys.stderr)
    return command, json.loads(proc.stdout), proc.returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--rev", required=True)
    ap.add_argument("--from", dest="saved", type=Path, default=None,
                    help="a saved `copygen kunit ... --json` output")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    command, doc, code = forced_boots(args.tree, args.rev, args.saved)
    rev = subprocess.run(["git", "-C", args.tree, "rev-parse", args.rev], capture_output=True,
                         text=True).stdout.strip()
    from copygen.kernel import kunit
    record = {"command": " ".join(command), "rev": rev, "ok": doc.get("ok"), "exit": code,
              "wall_seconds": None if args.saved else round(time.monotonic() - t0),
              "kunitconfig": kunit.kunitconfig(True, True).splitlines(), "boots": boots(doc)}
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["boots"], indent=1))
    return 0 if doc.get("ok") else 3


if __name__ == "__main__":
    sys.exit(main())
