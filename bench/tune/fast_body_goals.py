"""The fast body of `copygen patch --fast-body` against the slow body it sits
beside, on the cores whose boot probe picks it (docs/speeds.md).

    python -m bench.tune.fast_body_goals
    python -m bench.tune.fast_body_goals --slow examples/u74tuned.copy \
        --fast examples/x60fast.copy --compare examples/c910fast.copy \
        --profile x60 --profile c920

Cells: __asm_copy_to_user (copy_from_user is the same code) per size and
alignment class, the class's mean over all its (src, dst) offset pairs
mod 8 (aligned: 1 pair, co-aligned: 7, mutually misaligned: 56), warm,
as bench/tune/tune_goals.py measures them; the sizes are the tuner's grid
(8 B to 8 KiB) and `copygen bench`'s default sizes (1 B to 32 KiB).

Goals, under the first profile (--goal-profile, default x60):
1. the fast body takes at most half the slow body's cycles for mutually
   misaligned copies of 512 B to 8 KiB;
2. it is nowhere slower than the slow body: no cell above the slow one's.
Under every profile the same figures are given (the slower cells named),
each body's expected cycles per call under the `network` and `fleet`
workloads, with all 64 offset pairs alike and with SPEC2017's alignment
mix (`copygen rank`'s measure), and the floor of any copy that loads a
misaligned word for each word it stores, for n bytes: out of order, the
load pipes' occupancy, n/8 * (1 + misaligned cost) / load pipes; in
order, where a misaligned access stalls the whole pipeline, n/8 *
misaligned cost + n/8 * 2 / memory pipes.  And, since no C920 or X60
measurement checks the profiles' misaligned cost, each body's mutually
misaligned cells of 512 B to 8 KiB with that cost at 0
(`misaligned_cost_0`).

Writes bench/tune/results/fast_body_goals.json (or --out) with the command.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from bench.tune.tune_goals import cell_class  # noqa: E402
from copygen.emu.timing.profile import load_profile  # noqa: E402
from copygen.gen.build import build_cached  # noqa: E402
from copygen.measure.bench import Bench, Case  # noqa: E402
from copygen.measure.rank import expected_cycles  # noqa: E402
from copygen.measure.workload import make_workload  # noqa: E402
from copygen.tune.evaluate import GRID_SIZES  # noqa: E402

ROUTINE = "__asm_copy_to_user"
# `copygen bench`'s default sizes beside the tuner's grid
BENCH_SIZES = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 1448, 2048, 4096, 8192, 16384, 32768)
SIZES = tuple(sorted(set(GRID_SIZES) | set(BENCH_SIZES)))
GOAL_SIZES = (512, 1024, 2048, 4096, 8192)
# (size workload, alignment mix): all 64 offset pairs alike, and SPEC2017's
# mix (89 % of offsets 8-byte aligned)
WORKLOADS = (("network", "all"), ("fleet", "all"), ("network", "spec"), ("fleet", "spec"))


def cells(elf: Path, profile: str) -> dict[str, dict[int, float]]:
    """{class: {size: mean cycles}} over every offset pair of each class."""
    runs: dict[str, dict[int, list[int]]] = {}
    for n in SIZES:
        bench = Bench(elf, profile, n)
        for src in range(8):
            for dst in range(8):
                cls = cell_class(ROUTINE, src, dst)
                runs.setdefault(cls, {}).setdefault(n, []).append(
                    bench.run(Case(ROUTINE, n, src, dst)).cycles)
    return {c: {n: round(sum(v) / len(v), 2) for n, v in row.items()} for c, row in runs.items()}


def expected(elf: Path, profile: str) -> dict[str, float]:
    out = {}
    for name, mix in WORKLOADS:
        wl = make_workload(name, mix)
        bench = Bench(elf, profile, max(s for s, _ in wl.sizes))
        out[f"{name}/{mix}"] = round(expected_cycles(bench, str(elf), ROUTINE, wl).expected_cycles, 1)
    return out


def floor(profile: str, n: int) -> float:
    """The fewest cycles of a copy of n bytes that loads a misaligned word
    for each word it stores (the module's docstring)."""
    p = load_profile(profile)
    words = n / 8
    if p.ooo:
        return round(words * (1 + p.misaligned_cost) / dict(p.ooo.ports)["load"], 1)
    return round(words * p.misaligned_cost + words * 2 / p.mem_pipes, 1)


def free_misaligned(elf: Path, profile: str) -> dict[int, float]:
    """Mutually misaligned cells with the profile's misaligned cost at 0:
    how much of a body's cycles that one estimate holds."""
    prof = dataclasses.replace(load_profile(profile), misaligned_cost=0)
    out = {}
    for n in GOAL_SIZES:
        bench = Bench(elf, prof, n)
        runs = [bench.run(Case(ROUTINE, n, s, d)).cycles
                for s in range(8) for d in range(8) if cell_class(ROUTINE, s, d) == "misaligned"]
        out[n] = round(sum(runs) / len(runs), 2)
    return out


def compare(fast: dict, slow: dict) -> dict:
    """The fast body's cells against the slow one's: the ratios (slow over
    fast) and the cells where the fast body takes more cycles."""
    ratio = {c: {n: round(slow[c][n] / fast[c][n], 3) for n in row} for c, row in fast.items()}
    slower = [{"class": c, "size": n, "cycles": fast[c][n], "slow_body": slow[c][n],
               "ratio": ratio[c][n]}
              for c, row in fast.items() for n in row if fast[c][n] > slow[c][n] + 1e-9]
    return {"ratio": ratio, "slower": slower}


def _table(profile: str, names: list[str], got: dict[str, dict]) -> None:
    slow = got[names[0]]["cells"]
    print(f"\n{profile}: cycles of {ROUTINE}; in brackets the slow body's cycles over each")
    for cls in slow:
        print(f"  {cls}")
        print("    size " + "".join(f"{Path(n).stem:>22s}" for n in names))
        for n in SIZES:
            line = f"  {n:6d} "
            for name in names:
                v = got[name]["cells"][cls][n]
                line += f"{v:>12.1f}" + (f" ({slow[cls][n] / v:5.2f}x)" if name != names[0]
                                         else " " * 10)
            print(line)
    print("  expected cycles per call (workload/alignment mix):\n" + "\n".join(
        f"    {w}: " + ", ".join(f"{Path(n).stem} {v:g}" for n in names
                                  for v in [got[n]['expected'][w]])
        for w in got[names[0]]["expected"]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slow", type=Path, default=ROOT / "examples" / "u74tuned.copy")
    ap.add_argument("--fast", type=Path, default=ROOT / "examples" / "x60fast.copy")
    ap.add_argument("--compare", type=Path, action="append",
                    help="another fast body to show beside (default: examples/c910fast.copy); "
                         "repeatable")
    ap.add_argument("--profile", action="append", help="default: x60 and c920; repeatable")
    ap.add_argument("--goal-profile", default=None,
                    help="the profile the goals are judged under (default: the first)")
    ap.add_argument("--out", type=Path,
                    default=ROOT / "bench" / "tune" / "results" / "fast_body_goals.json")
    args = ap.parse_args(argv)
    profiles = args.profile or ["x60", "c920"]
    goal_profile = args.goal_profile or profiles[0]
    others = args.compare if args.compare is not None else [ROOT / "examples" / "c910fast.copy"]
    bodies = [args.slow, args.fast, *others]
    names = [str(p.resolve().relative_to(ROOT)) if p.resolve().is_relative_to(ROOT) else str(p)
             for p in bodies]
    command = " ".join(["python", "-m", "bench.tune.fast_body_goals"]
                       + (sys.argv[1:] if argv is None else argv))
    result: dict = {"command": command, "routine": ROUTINE, "slow": names[0], "fast": names[1],
                    "sizes": list(SIZES), "goal_profile": goal_profile, "profiles": {}}
    with tempfile.TemporaryDirectory() as tmp:
        elfs = [build_cached(p, Path(tmp)).elf for p in bodies]
        for prof in profiles:
            got = {n: {"cells": cells(e, prof), "expected": expected(e, prof),
                       "misaligned_cost_0": free_misaligned(e, prof)}
                   for n, e in zip(names, elfs)}
            slow = got[names[0]]["cells"]
            for n in names[1:]:
                got[n].update(compare(got[n]["cells"], slow))
            result["profiles"][prof] = {
                "bodies": got,
                "misaligned_word_floor": {n: floor(prof, n) for n in GOAL_SIZES}}
            _table(prof, names, got)
    fast = result["profiles"][goal_profile]["bodies"][names[1]]
    twice = {n: fast["ratio"]["misaligned"][n] for n in GOAL_SIZES}
    result["goals"] = {
        "twice_as_fast_misaligned_512_to_8k": {"ratios": twice,
                                               "met": all(r >= 2 for r in twice.values())},
        "nowhere_slower": {"slower_cells": len(fast["slower"]), "met": not fast["slower"]}}
    print(f"\ngoals under {goal_profile}, {names[1]} against {names[0]}:")
    print("  mutually misaligned 512 B-8 KiB at least 2x: "
          + ", ".join(f"{n} B {r:.2f}x" for n, r in twice.items())
          + (": met" if result["goals"]["twice_as_fast_misaligned_512_to_8k"]["met"]
             else ": NOT met"))
    print(f"  nowhere slower: {len(fast['slower'])} cell(s) slower"
          + "".join(f"\n    {c['class']} {c['size']} B: {c['cycles']} > {c['slow_body']}"
                    for c in fast["slower"]))
    for prof in profiles:
        if prof == goal_profile:
            continue
        bad = result["profiles"][prof]["bodies"][names[1]]["slower"]
        print(f"  under {prof}: {len(bad)} cell(s) slower than {names[0]}"
              + "".join(f"\n    {c['class']} {c['size']} B: {c['cycles']} > {c['slow_body']} "
                        f"({c['ratio']:.2f}x)" for c in bad))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
