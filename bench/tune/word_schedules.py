"""Word-loop schedules against each other on one copy_user, per call.

    python -m bench.tune.word_schedules examples/u74tuned.copy --profile u74

Builds the file's copy_user twice, with both word loops (`words`, `then
words`) scheduled `loads_first` and `paired`, and runs __asm_copy_to_user
of each on every size 0-1099 B and every 37th from 1100 to 8192 B, at the
eight co-aligned offset pairs (src = dst mod 8, where the word loops run),
warm L1.  Reports how many calls each schedule wins, the mean difference
and the worst case for paired.  Writes bench/tune/results/word_schedules_<profile>.json.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from copygen.gen.build import build_cached  # noqa: E402
from copygen.measure.bench import Bench, Case  # noqa: E402

SIZES = list(range(0, 1100)) + list(range(1100, 8193, 37))
WORD_LINE = re.compile(r"^(\s*(?:then )?words unroll \d+)( schedule \w+)?\s*$", re.M)


def with_schedule(text: str, schedule: str) -> str:
    return WORD_LINE.sub(lambda m: f"{m.group(1)} schedule {schedule}", text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--profile", default="u74")
    args = ap.parse_args()
    text = args.file.read_text()
    t0 = time.monotonic()
    benches = {}
    with tempfile.TemporaryDirectory() as tmp:
        for sched in ("loads_first", "paired"):
            src = Path(tmp) / f"{sched}.copy"
            src.write_text(with_schedule(text, sched))
            benches[sched] = Bench(build_cached(src, Path(tmp) / "cache").elf, args.profile,
                                   max(SIZES))
        rows = []
        for off in range(8):
            for n in SIZES:
                a, b = (benches[s].run(Case("__asm_copy_to_user", n, off, off)).cycles
                        for s in ("loads_first", "paired"))
                rows.append((n, off, a, b))
    diffs = [b - a for _, _, a, b in rows]
    worst = max(rows, key=lambda r: r[3] - r[2])
    result = {
        "command": " ".join(["python", "bench/tune/word_schedules.py"] + sys.argv[1:]),
        "file": str(args.file), "profile": args.profile, "calls": len(rows),
        "paired_faster": sum(d < 0 for d in diffs), "same": sum(d == 0 for d in diffs),
        "paired_slower": sum(d > 0 for d in diffs),
        "mean_difference_cycles": round(sum(diffs) / len(diffs), 3),
        "worst_for_paired": {"size": worst[0], "offset": worst[1], "loads_first": worst[2],
                             "paired": worst[3]},
        "seconds": round(time.monotonic() - t0, 1),
    }
    print(f"{result['calls']} calls: paired faster in {result['paired_faster']}, same in "
          f"{result['same']}, slower in {result['paired_slower']}; mean difference "
          f"{result['mean_difference_cycles']} cycles (paired - loads_first)")
    out = ROOT / "bench" / "tune" / "results" / f"word_schedules_{args.profile}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
