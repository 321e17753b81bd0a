"""copygen's fault suite on a real tree (issue 64): the u74tuned uaccess
patch made with `copygen patch --test kunit`, which boots the stock tree
and the patch, each with the fault suite on top, without and with the V
extension; and the suite as a patch of its own (`copygen kunit
--add-fault-suite`), checked by the tree's checkpatch.pl --strict.

Usage: python -m bench.kernel.fault_suite --tree DIR [--from PATCH.json]
--from takes a saved `copygen patch ... --test kunit --json` output instead
of running it again (about 20 minutes with an empty proof cache).  Writes
bench/kernel/results/fault_suite.json: the commands, per boot the KUnit
results of every suite, the fault suite's failing cases with their first
failing call, the seconds of the boot and of each suite, and checkpatch's
verdict on the suite's own patch.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402

OUT = ROOT / "bench" / "kernel" / "results" / "fault_suite.json"
PATCH = ["patch", "examples/u74tuned.copy", "--routine", "copy_user", "--routine", "clear_user",
         "--test", "kunit", "--branch", "copygen/u74tuned-uaccess"]


def _copygen(*args) -> tuple[int, dict, float]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "copygen", *args, "--json"], cwd=ROOT,
                          capture_output=True, text=True)
    sys.stderr.write(proc.stderr[-3000:])
    return proc.returncode, json.loads(proc.stdout), time.monotonic() - t0


def _boots(doc: dict) -> dict:
    out = {}
    for state, runs in doc.get("kunit", {}).items():
        for r in runs:
            fault = r.get("fault", {})
            out[f"{state}{' with V' if r['vector'] else ''}"] = {
                "commit": r["commit"], "tested": r.get("tested"),
                "suites": {s["name"]: f"{s['passed']}/{s['total']}" for s in r["suites"]},
                "fault_failing": {n: c["first"] for n, c in fault.items() if not c["ok"]},
                "build_seconds": r["build_seconds"], "boot_and_tests_seconds": round(r["run_seconds"], 1),
                "suite_seconds": r.get("suite_seconds", {})}
    return out


def _own_patch(tree: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        branch = "copygen/fault-suite-bench"
        subprocess.run(["git", "-C", tree, "branch", "-D", branch], capture_output=True)
        code, doc, _ = _copygen("kunit", "--kernel-tree", tree, "master", "--add-fault-suite", tmp,
                                "--branch", branch)
        subprocess.run(["git", "-C", tree, "branch", "-D", branch], capture_output=True)
    if code:
        return {"exit": code, "error": doc.get("error")}
    return {"files": doc["files"], "calls": doc["calls"],
            "checkpatch": [ln for ln in (doc.get("checkpatch") or "").splitlines()
                           if ln.startswith(("total:", "ERROR:", "WARNING:", "CHECK:"))]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--from", dest="saved", default=None, help="a saved `copygen patch --json` output")
    args = ap.parse_args()
    from copygen.kernel.tree import cache_dir
    proofs = ["--proof-cache", str(cache_dir() / "proofs")]      # outside the checkout
    cmd = ["copygen", *PATCH[:2], "--kernel-tree", args.tree, *PATCH[2:], *proofs, "--json"]
    if args.saved:
        doc, secs = json.loads(Path(args.saved).read_text()), None
    else:
        subprocess.run(["git", "-C", args.tree, "branch", "-D", PATCH[-1]], capture_output=True)
        with tempfile.TemporaryDirectory() as out:
            code, doc, secs = _copygen(*PATCH[:2], "--kernel-tree", args.tree, "-o", out, *PATCH[2:],
                                       *proofs)
        if code:
            print(doc.get("error"), file=sys.stderr)
            return code
    record = {"command": " ".join(cmd), "wall_seconds": secs and round(secs, 1),
              "branch": doc.get("branch"), "stages": doc.get("stages"), "boots": _boots(doc),
              "message_kunit": [ln for c in doc.get("commits", []) for ln in c["message"].splitlines()
                                if ln.startswith("  usercopy_fault")],
              "own_patch": _own_patch(args.tree)}
    OUT.write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
