"""Does a fast-misaligned memcpy/memmove pay beside a `misaligned slow` one?

    python -m bench.tune.string_fast_pays
    python -m bench.tune.string_fast_pays --slow examples/u74tuned.copy \
        --fast examples/c910tuned.copy --profile x60 --profile c920 \
        --profile p550 --profile u74 [--kernel-tree LINUX]

The question behind a second string body chosen at boot by the kernel's
misaligned-speed probe (docs/speeds.md): on the cores whose probe says
fast (x60, c920), how much does the string block of a `misaligned fast`
strategy save against the `misaligned slow` one a kernel would otherwise
run, and on the cores whose probe says slow (p550, u74: misaligned
accesses trap to firmware) how much would running it there cost.

Cells: memcpy and memmove per size and alignment class, the class's mean
over all its (src, dst) offset pairs mod 8 (aligned: 1 pair, co-aligned:
7, mutually misaligned: 56), warm, disjoint buffers, as `copygen bench
--align all` runs them (memmove of disjoint buffers is its forward path);
the sizes are `copygen bench`'s defaults and the tuner's grid.  memmove's
backward path is measured apart (`overlap`): dst 1 to 15 bytes above src,
so that every size from 16 bytes copies overlapping buffers, each
(src, dst) offset pair mod 8 once.  Also each body's expected cycles per
call under the `network` and `fleet` workloads (all 64 offset pairs), and
with --kernel-tree the tree's own memcpy.S and memmove.S beside them.

A profile's verdict: `pays` when the fast body takes fewer cycles in the
sum of every cell, in the mutually misaligned cells from 512 bytes (the
copies a shift loop carries) and in the expected cycles per call of both
workloads; `harms` when it takes more in all four; `mixed` otherwise.

Writes bench/tune/results/string_fast_pays.json (or --out) with the command.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from bench.tune.tune_goals import kernel_string_elf  # noqa: E402
from copygen.gen.build import build_cached  # noqa: E402
from copygen.measure.bench import Bench, Case, align_class  # noqa: E402
from copygen.measure.rank import expected_cycles  # noqa: E402
from copygen.measure.workload import make_workload  # noqa: E402
from copygen.tune.evaluate import GRID_SIZES  # noqa: E402

ROUTINES = ("memcpy", "memmove")
BENCH_SIZES = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 1448, 2048, 4096, 8192, 16384, 32768)
SIZES = tuple(sorted(set(GRID_SIZES) | set(BENCH_SIZES)))
OVERLAP_SIZES = (16, 32, 64, 128, 256, 512, 1024, 4096)
BIG = 512
WORKLOADS = ("network", "fleet")


def cells(bench: dict[int, Bench], routine: str) -> dict[str, dict[int, float]]:
    """{class: {size: mean cycles}} over every offset pair of each class."""
    runs: dict[str, dict[int, list[int]]] = {}
    for n in SIZES:
        for src in range(8):
            for dst in range(8):
                runs.setdefault(align_class(src, dst), {}).setdefault(n, []).append(
                    bench[n].run(Case(routine, n, src, dst)).cycles)
    return {c: {n: round(sum(v) / len(v), 2) for n, v in row.items()} for c, row in runs.items()}


def overlap(bench: Bench) -> dict[str, dict[int, float]]:
    """memmove with dst 1..15 bytes above src (its backward path), per class."""
    m = bench.machine
    base = bench.base[False, "src"]
    pattern = bytes((i * 13 + 5) & 0xFF for i in range(251))
    runs: dict[str, dict[int, list[int]]] = {}
    for n in OVERLAP_SIZES:
        data = (pattern * (n // 251 + 2))[:n + 96]
        for s in range(8):
            for d in range(8):
                src = base + 64 + s
                dst = src + 8 + d - s
                m.reset_predictor(origin="memmove")
                for _ in range(bench.warm_calls + 1):
                    m.write(base, data)
                    m.call("memmove", dst, src, n)
                m.write(base, data)
                r = m.call("memmove", dst, src, n)
                want = data[64 + s:64 + s + n]
                if r.ret != dst or m.read(dst, n) != want:
                    raise SystemExit(f"memmove(dst=src+{8 + d - s}, n={n}) copied wrongly")
                runs.setdefault(align_class(s, d), {}).setdefault(n, []).append(r.cycles or 0)
    return {c: {n: round(sum(v) / len(v), 2) for n, v in row.items()} for c, row in runs.items()}


def expected(elf: Path, profile: str, routine: str) -> dict[str, float]:
    out = {}
    for name in WORKLOADS:
        wl = make_workload(name, "all")
        bench = Bench(elf, profile, max(s for s, _ in wl.sizes))
        out[name] = round(expected_cycles(bench, str(elf), routine, wl).expected_cycles, 1)
    return out


def measure(elf: Path, profile: str) -> dict:
    benches = {n: Bench(elf, profile, n) for n in SIZES}
    out = {r: {"cells": cells(benches, r), "expected": expected(elf, profile, r)}
           for r in ROUTINES}
    out["memmove"]["overlap"] = overlap(Bench(elf, profile, max(OVERLAP_SIZES) + 256))
    return out


def _sum(table: dict, only: str | None = None, from_size: int = 0) -> float:
    return sum(v for c, row in table.items() if only in (None, c)
               for n, v in row.items() if n >= from_size)


def verdict(fast: dict, slow: dict) -> dict:
    """Per routine: slow over fast for every cell, the sums, the cells where
    the fast body is slower, and the verdict."""
    out = {}
    for r in ROUTINES:
        f, s = fast[r]["cells"], slow[r]["cells"]
        ratio = {c: {n: round(s[c][n] / f[c][n], 3) for n in row} for c, row in f.items()}
        slower = [{"class": c, "size": n, "fast": f[c][n], "slow": s[c][n]}
                  for c, row in f.items() for n in row if f[c][n] > s[c][n] + 1e-9]
        total = round(_sum(s) / _sum(f), 3)
        big = round(_sum(s, "misaligned", BIG) / _sum(f, "misaligned", BIG), 3)
        entry = {"ratio": ratio, "sum_ratio": total, "misaligned_from_512_ratio": big,
                 "slower_cells": slower,
                 "expected_ratio": {w: round(slow[r]["expected"][w] / fast[r]["expected"][w], 3)
                                    for w in WORKLOADS}}
        if r == "memmove":
            fo, so = fast[r]["overlap"], slow[r]["overlap"]
            entry["overlap_ratio"] = {c: {n: round(so[c][n] / fo[c][n], 3) for n in row}
                                      for c, row in fo.items()}
            entry["overlap_sum_ratio"] = round(_sum(so) / _sum(fo), 3)
        every = [total, big, *entry["expected_ratio"].values()]
        entry["verdict"] = ("pays" if min(every) > 1 else "harms" if max(every) < 1 else "mixed")
        out[r] = entry
    return out


def _print(profile: str, names: list[str], got: dict, v: dict) -> None:
    slow, fast = names[0], names[1]
    for r in ROUTINES:
        print(f"\n{profile} {r}: cycles, slow {slow} / fast {fast} (slow over fast)")
        for cls, row in got[slow][r]["cells"].items():
            print(f"  {cls}: " + ", ".join(
                f"{n} B {row[n]:g}/{got[fast][r]['cells'][cls][n]:g} ({v[r]['ratio'][cls][n]:.2f}x)"
                for n in (8, 64, 256, 1024, 4096, 32768)))
        if r == "memmove":
            o = v[r]["overlap_ratio"]
            print("  overlapping: " + ", ".join(f"{c} " + "/".join(f"{x:.2f}" for x in row.values())
                                                for c, row in o.items()))
        print(f"  sum {v[r]['sum_ratio']:.3f}x, misaligned from 512 B "
              f"{v[r]['misaligned_from_512_ratio']:.3f}x, expected "
              + ", ".join(f"{w} {x:.3f}x" for w, x in v[r]["expected_ratio"].items())
              + f", {len(v[r]['slower_cells'])} cell(s) slower: {v[r]['verdict']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slow", type=Path, default=ROOT / "examples" / "u74tuned.copy")
    ap.add_argument("--fast", type=Path, default=ROOT / "examples" / "c910tuned.copy")
    ap.add_argument("--profile", action="append",
                    help="default: x60, c920 (probe fast), p550, u74 (probe slow); repeatable")
    ap.add_argument("--kernel-tree", type=Path,
                    help="a tree whose memcpy.S and memmove.S are measured beside")
    ap.add_argument("--out", type=Path,
                    default=ROOT / "bench" / "tune" / "results" / "string_fast_pays.json")
    args = ap.parse_args(argv)
    profiles = args.profile or ["x60", "c920", "p550", "u74"]
    bodies = [args.slow, args.fast]
    names = [str(p.resolve().relative_to(ROOT)) if p.resolve().is_relative_to(ROOT) else str(p)
             for p in bodies]
    command = " ".join(["python", "-m", "bench.tune.string_fast_pays"]
                       + (sys.argv[1:] if argv is None else argv))
    result: dict = {"command": command, "slow": names[0], "fast": names[1],
                    "sizes": list(SIZES), "overlap_sizes": list(OVERLAP_SIZES), "profiles": {}}
    with tempfile.TemporaryDirectory() as tmp:
        elfs = [build_cached(p, Path(tmp)).elf for p in bodies]
        if args.kernel_tree:
            names.append("kernel")
            elfs.append(kernel_string_elf(args.kernel_tree.expanduser(), Path(tmp)))
        for prof in profiles:
            got = {n: measure(e, prof) for n, e in zip(names, elfs)}
            v = verdict(got[names[1]], got[names[0]])
            result["profiles"][prof] = {"bodies": got, "fast_against_slow": v}
            _print(prof, names, got, v)
    result["verdicts"] = {p: {r: e["fast_against_slow"][r]["verdict"] for r in ROUTINES}
                          for p, e in result["profiles"].items()}
    print("\nverdicts: " + "; ".join(f"{p}: " + ", ".join(f"{r} {x}" for r, x in v.items())
                                     for p, v in result["verdicts"].items()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
