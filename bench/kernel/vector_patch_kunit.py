"""The vector patch through the whole loop on a real tree (docs/patching.md,
8a): `copygen patch examples/x60vector.copy --routine vector_usercopy
--test kunit`, which proves the new loop and the old at every VLEN, benches
copy_to_user before and after under the vector profiles, builds the tree at
HEAD and at the patch with the fault suite on top, boots each in QEMU
without and with V, and writes the commit and the patch.

Usage: python -m bench.kernel.vector_patch_kunit --tree DIR [--branch B] [--from PATCH.json]
       [--record NAME.json]
--branch: the throwaway branch the patch goes on (deleted afterwards, so a
second run can make it again; the checkout is never touched); --from takes
a saved `copygen patch ... --json` output instead of running it again.
The patch is made on the tree's HEAD (recorded).  Writes
bench/kernel/results/vector_patch_kunit.json (or --record): the command, the wall
time and each stage's, per boot every suite's results and seconds, the
message, the table's rows and checkpatch's verdict.
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

from bench.kernel.fault_suite import _boots  # noqa: E402

OUT = ROOT / "bench" / "kernel" / "results" / "vector_patch_kunit.json"
PATCH = ["patch", "examples/x60vector.copy", "--routine", "vector_usercopy", "--test", "kunit"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--branch", default="copygen/x60vector-vector-bench")
    ap.add_argument("--proof-cache", default=None)
    ap.add_argument("--from", dest="saved", type=Path, default=None)
    ap.add_argument("--record", default=OUT.name,
                    help="the results file's name in bench/kernel/results/")
    args = ap.parse_args(argv)
    command = ["copygen", *PATCH, "--kernel-tree", args.tree, "--branch", args.branch]
    t0 = time.monotonic()
    if args.saved:
        doc, code = json.loads(args.saved.read_text()), None
    else:
        with tempfile.TemporaryDirectory() as tmp:
            cache = args.proof_cache or str(Path(tmp) / "proofs")
            run = command[1:] + ["-o", str(Path(tmp) / "out"), "--proof-cache", cache, "--json"]
            proc = subprocess.run([sys.executable, "-m", "copygen", *run], cwd=ROOT,
                                  capture_output=True, text=True)
        sys.stderr.write(proc.stderr[-3000:])
        doc, code = json.loads(proc.stdout), proc.returncode
        subprocess.run(["git", "-C", args.tree, "branch", "-D", args.branch], capture_output=True)
    (commit,) = doc.get("commits") or [{}]
    head = subprocess.run(["git", "-C", args.tree, "log", "-1", "--format=%h %s"],
                          capture_output=True, text=True).stdout.strip()
    record = {"command": " ".join(command) + " -o DIR --json", "head": head, "exit": code,
              "ok": doc.get("ok"),
              "wall_seconds": None if args.saved else round(time.monotonic() - t0),
              "stages": doc.get("stages"), "boots": _boots(doc),
              "proofs": {state: {p["symbol"]: p["verdict"] for p in commit.get(state, {}).get(
                  "vector_usercopy", [])} for state in ("before", "after")},
              "rows": commit.get("rows"), "message": (commit.get("message") or "").splitlines(),
              "checkpatch": (doc.get("checkpatch") or "").splitlines()[-3:]}
    (OUT.parent / args.record).write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k not in ("rows", "message")}, indent=1))
    return 0 if doc.get("ok") else 3


if __name__ == "__main__":
    sys.exit(main())
