"""What the static branch of `copygen patch --fast-body` costs the slow
copy (issue 63 item 2: at most 2 cycles on the aligned path), and what
each core's body gives (docs/speeds.md).

Linux 6.12's uaccess.S, read from a tree at a commit (read only: `git
show`), is patched three ways in memory and linked with the shim:
* `today`: `copygen patch examples/u74tuned.copy` as it is (the slow copy
  alone, no dispatch);
* `off`: `--fast-body examples/c910fast.copy`, built with the probe and jump
  labels, the key off (the nop, then u74tuned's copy);
* `on`: the same with the key on (the jump, then c910fast's copy).
__asm_copy_to_user is benched (measure.bench, warm, every result checked)
at the patch tables' sizes, aligned (src and dst at a page) and over the
four misaligned pairs, under u74_spec and u74 (off against today: the
dispatch's cost) and under x60 and c920 (on against today: what the fast
copy gives there).

Usage: python -m bench.kernel.speeds_dispatch [--tree DIR] [--rev REV]
Writes bench/kernel/results/speeds_dispatch.json.
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
OUT = ROOT / "bench" / "kernel" / "results" / "speeds_dispatch.json"
TREE = Path.home() / ".cache" / "copygen" / "linux-source-6.12"
SLOW, FAST = ROOT / "examples" / "u74tuned.copy", ROOT / "examples" / "c910fast.copy"
PROFILES = {"u74_spec": "off", "u74": "off", "x60": "on", "c920": "on"}


def texts(tree: Path, rev: str) -> tuple[str, object]:
    """(6.12's uaccess.S, the speeds plan of u74tuned + c910fast on it)."""
    from copygen.emu.timing.profile import available
    from copygen.gen.front.validate import load_file
    from copygen.patch.speeds import dispatch
    text = subprocess.run(["git", "-C", str(tree), "show", f"{rev}:arch/riscv/lib/uaccess.S"],
                          capture_output=True, text=True, check=True).stdout
    slow, fast = load_file(SLOW, available()), load_file(FAST, available())
    return text, dispatch.plan(slow, fast, text, "arch/riscv/lib/uaccess.S", ("copy_user",))


def today(text: str) -> str:
    """The file as `copygen patch examples/u74tuned.copy --routine copy_user` makes it."""
    from copygen.emu.timing.profile import available
    from copygen.gen.front.validate import load_file
    from copygen.patch import bodies, kernelfile
    from copygen.patch.splice import splice
    st = load_file(SLOW, available())
    lines = text.splitlines(keepends=True)
    _, places = kernelfile.places(lines, "uaccess.S", ("copy_user",))
    return splice(text, bodies.bodies(st, lines, places), "uaccess.S").text


def cycles(elf: Path, profile: str) -> dict[str, float]:
    from copygen.measure.bench import Bench, Case
    from copygen.patch.evidence import COPY_PAIRS, SIZES
    b = Bench(elf, profile, max(SIZES))
    out = {}
    for n in SIZES:
        for cls, pairs in COPY_PAIRS.items():
            runs = [b.run(Case("__asm_copy_to_user", n, s, d)).cycles for s, d in pairs]
            out[f"{n} {cls}"] = sum(runs) / len(runs)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=TREE)
    ap.add_argument("--rev", default="ac483696f")
    args = ap.parse_args(argv)
    from copygen.patch import evidence
    from copygen.patch.speeds import run as speeds_run
    t0 = time.time()
    text, plan = texts(args.tree, args.rev)
    with tempfile.TemporaryDirectory() as tmp:
        states = speeds_run._states(plan.text, Path(tmp))
        base = evidence.build("today", today(text), Path(tmp))
        result = {}
        for prof, state in PROFILES.items():
            old, new = cycles(base.elf, prof), cycles(states[state].elf, prof)
            result[prof] = {"body": {"off": "slow (u74tuned)", "on": "fast (c910fast)"}[state],
                            "cells": {k: {"today": old[k], "speeds": new[k], "delta": new[k] - old[k]}
                                      for k in old}}
    aligned = [c["delta"] for k, c in result["u74_spec"]["cells"].items() if k.endswith(" aligned")]
    record = {"command": "python -m bench.kernel.speeds_dispatch " + " ".join(argv or sys.argv[1:]),
              "tree": str(args.tree), "rev": args.rev, "slow": "examples/u74tuned.copy",
              "fast": "examples/c910fast.copy", "seconds": round(time.time() - t0, 1),
              "dispatch_cost_u74_spec_aligned": {"min": min(aligned), "max": max(aligned)},
              "profiles": result}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["dispatch_cost_u74_spec_aligned"]))
    for prof, r in result.items():
        print(prof, r["body"], " ".join(f"{k}:{c['delta']:+.0f}" for k, c in r["cells"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
