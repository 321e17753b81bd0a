"""The real-kernel loop end to end (issue 33): a Linux 6.12 tree from
Debian's linux-source-6.12, a u74tuned uaccess patch and a patch of the
string functions made with `copygen patch --test kunit`, each built by
Kbuild, booted in
qemu-system-riscv64 without and with the V extension, and tested with the
kernel's usercopy, memcpy and string KUnit suites before and after.

Usage: python -m bench.kernel.kernel_loop [--tree DIR] [--only uaccess|string]
Writes bench/kernel/results/kernel_loop.json (after each patch, so a killed run
keeps what it measured): per patch the KUnit results per suite (base and
patched, without and with V), the build and boot seconds, the seconds of
every stage (proofs after, proofs before, bench, Kbuild, KUnit) and the
wall time, and the patch files' size.  Takes about an hour with an empty
proof cache and a cold build directory; the build directory is kept.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402

OUT = ROOT / "bench" / "kernel" / "results" / "kernel_loop.json"
PATCHES = {
    "uaccess": ("examples/u74tuned.copy", ["--routine", "copy_user", "--routine", "clear_user",
                                           "--branch", "copygen/u74tuned-uaccess"]),
    "string": ("examples/u74tuned.copy", ["--routine", "string", "--branch", "copygen/u74tuned-string"]),
}


def _copygen(*args) -> tuple[int, dict, float]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "copygen", *args, "--json"], cwd=ROOT,
                          capture_output=True, text=True)
    seconds = time.monotonic() - t0
    sys.stderr.write(proc.stderr[-4000:])
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        doc = {"ok": False, "error": {"message": proc.stdout[-2000:]}}
    return proc.returncode, doc, seconds


def _summary(doc: dict) -> dict:
    runs = doc.get("kunit", {})
    return {"branch": doc.get("branch"), "layout": doc.get("layout"),
            "subjects": [c["subject"] for c in doc.get("commits", [])],
            "message_lines": [len(c["message"].splitlines()) for c in doc.get("commits", [])],
            "verdicts_after": {k: [p["verdict"] for p in v]
                               for c in doc.get("commits", []) for k, v in c["after"].items()},
            "kunit": {state: [{"vector": r["vector"], "build_seconds": r["build_seconds"],
                               "run_seconds": round(r["run_seconds"], 1),
                               "suites": {s["name"]: f"{s['passed']}/{s['total']}"
                                          for s in r["suites"]}} for r in rs]
                      for state, rs in runs.items()},
            "stages": doc.get("stages", {}), "patches": doc.get("patches", [])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", default=None, help="a tree from `copygen tree` [default: make it]")
    ap.add_argument("--only", choices=sorted(PATCHES), action="append")
    args = ap.parse_args()
    results = json.loads(OUT.read_text()) if OUT.is_file() else {}
    t0 = time.monotonic()
    code, doc, secs = _copygen("tree", *(["--dir", args.tree] if args.tree else []))
    if code:
        print(doc.get("error"), file=sys.stderr)
        return code
    tree = doc["tree"]
    results["tree"] = {"path": tree, "seconds": round(secs, 1)}
    for name in args.only or sorted(PATCHES, reverse=True):
        source, extra = PATCHES[name]
        subprocess.run(["git", "-C", tree, "branch", "-D", extra[-1]], capture_output=True)
        out = Path(tree).parent / "patches" / name
        code, doc, secs = _copygen("patch", source, "--kernel-tree", tree, "-o", str(out),
                                   "--test", "kunit", *extra)
        results[name] = {"exit": code, "wall_seconds": round(secs, 1),
                         **(_summary(doc) if doc.get("ok") else {"error": doc.get("error")})}
        OUT.write_text(json.dumps(results, indent=2) + "\n")
        print(f"{name}: exit {code} in {secs:.0f} s", file=sys.stderr)
    results["total_seconds"] = round(time.monotonic() - t0, 1)
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
