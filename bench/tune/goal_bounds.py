"""How fast a goal cell of issue 18 can be under a cost profile, by any routine.

    python -m bench.tune.goal_bounds --profile u74 --baseline examples/kernel2021.copy

A cell is a size and an alignment class (bench/tune/tune_goals.py); its cycles
are the mean over the class's (src, dst) offset pairs.  For every pair of
the cells below this writes a copy_to_user specialised to that one call:
straight-line code with no size or alignment test, no loop and no
exception table, SUM set before and cleared after the copy as every
copy_user must.  Aligned calls move words with ld/sd; the others store dst
in natural-alignment pieces up to the first aligned word, then aligned
words, then pieces, each value built from aligned loads of src with
constant shift amounts (the shift copy, 5 instructions a word: the u74
traps misaligned loads and stores).  Several load leads and store
placements are tried and the fastest kept.

The memory bound is strict under the profile: every byte goes through
a load and a store of at most 8 bytes (RV64GC has no wider access), one
slot each on the profile's memory pipes, and the two accesses to
sstatus (SUM on, SUM off) each keep the pipeline empty for the profile's
`serial_cost` cycles.  No routine can take fewer cycles than
2 * ceil(n / 8) / mem_pipes + 2 * serial_cost; a cell whose baseline
cycles over that bound stay under the goal cannot meet it, whatever the
routine.  The argument is the in-order issue model's: for a profile with
the out-of-order engine the bound is not given.  The specialised routine shows how close straight-line code
comes to the bound; each cell's best speed-up is the baseline's cycles
over the specialised routine's.  Writes
bench/tune/results/goal_bounds_<profile>.json.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from copygen.emu.timing.profile import load_profile  # noqa: E402
from copygen.gen import toolchain  # noqa: E402
from copygen.gen.build import build_cached  # noqa: E402
from copygen.measure.bench import Bench, Case, align_class  # noqa: E402

# (class, sizes): the whole range of the aligned 72 B-1 KiB goal, and the
# two smallest sizes of the misaligned 512 B-8 KiB goal.
CELLS = (("aligned", (72, 128, 256, 512, 1024)),
         ("misaligned", (512, 1024)))
WORD_REGS = ("a4", "a5", "a6", "a7", "t0", "t1", "t2", "a2")   # aligned src words, in turn
VALUE_REGS = ("t3", "t4", "t5")                              # values to store, in turn
SPARE = "a3"                                                 # the second shift's result
PLACES = ("now", "inside", "after")
STORE = {1: "sb", 2: "sh", 4: "sw", 8: "sd"}
HEADER = """#include <linux/linkage.h>
#include <asm/asm.h>
#include <asm/csr.h>

	.text
SYM_FUNC_START(__asm_copy_to_user)
	li	t6, SR_SUM
	csrs	CSR_STATUS, t6
"""
FOOTER = """	csrc	CSR_STATUS, t6
	li	a0, 0
	ret
SYM_FUNC_END(__asm_copy_to_user)
"""


def pieces(dst: int, n: int) -> list[tuple[int, int]]:
    """(offset, size) of the stores that write n bytes at dst mod 8 = `dst`,
    each naturally aligned: pieces up to the first aligned word, words, pieces."""
    out, pos = [], 0
    while pos < n:
        at = (dst + pos) % 8
        size = 8 if at == 0 and n - pos >= 8 else next(
            z for z in (4, 2, 1) if at % z == 0 and z <= n - pos)
        out.append((pos, size))
        pos += size
    return out


def groups(dst: int, n: int) -> list[list[tuple[int, int]]]:
    """The stores of pieces() in groups that share one value: each word alone,
    the pieces before the first word together, and those after the last."""
    out: list[list[tuple[int, int]]] = []
    for p in pieces(dst, n):
        if p[1] == 8 or not out or out[-1][-1][1] == 8:
            out.append([p])
        else:
            out[-1].append(p)
    return out


def routine(n: int, src: int, dst: int, lead: int, place: str) -> str:
    """copy_to_user of exactly n bytes from src mod 8 = `src` to dst mod 8 =
    `dst`: aligned src words loaded `lead` words ahead of their use, each
    group's stores placed right after its value (`place` "now"), or among
    the next group's instructions: before its `or` ("inside"), after it
    ("after")."""
    lines = ["\tandi\ta1, a1, -8"] if src else []
    loaded = 0                       # aligned src words loaded so far (word k at 8k(a1))

    def load_through(k: int) -> None:
        nonlocal loaded
        while loaded <= min(k, (src + n - 1) // 8):
            lines.append(f"\tld\t{WORD_REGS[loaded % len(WORD_REGS)]}, {8 * loaded}(a1)")
            loaded += 1

    pending: list[str] = []
    for g, group in enumerate(groups(dst, n)):
        first, length = group[0][0], sum(z for _, z in group)
        k, b = divmod(src + first, 8)
        spans = b + length > 8
        load_through(k + int(spans) + lead)
        word = WORD_REGS[k % len(WORD_REGS)]
        value = word if b == 0 and len(group) == 1 else VALUE_REGS[g % len(VALUE_REGS)]
        if b or value != word:
            lines.append(f"\tsrli\t{value}, {word}, {8 * b}")
        if spans:
            lines.append(f"\tslli\t{SPARE}, {WORD_REGS[(k + 1) % len(WORD_REGS)]}, {64 - 8 * b}")
            if place == "inside":
                lines += pending
                pending = []
            lines.append(f"\tor\t{value}, {value}, {SPARE}")
        stores = []
        for i, (off, size) in enumerate(group):
            if i:
                stores.append(f"\tsrli\t{value}, {value}, {8 * group[i - 1][1]}")
            stores.append(f"\t{STORE[size]}\t{value}, {off}(a0)")
        if place != "now":
            lines += pending
            pending = stores
        else:
            lines += stores
    lines += pending
    return HEADER + "".join(line + "\n" for line in lines) + FOOTER


def specialised(n: int, src: int, dst: int, profile: str, work: Path) -> int:
    """Cycles of the fastest routine() variant for this one call."""
    best = None
    for lead, place in itertools.product(range(5), PLACES):
        if n == 0 and (lead or place != PLACES[0]):
            break
        stem = work / f"n{n}_s{src}_d{dst}_l{lead}_{place}"
        stem.with_suffix(".S").write_text(routine(n, src, dst, lead, place))
        toolchain.assemble(stem.with_suffix(".S"), ROOT / "shim" / "include", stem.with_suffix(".o"))
        toolchain.link([stem.with_suffix(".o")], ROOT / "shim" / "copygen.ld", stem.with_suffix(".elf"))
        cycles = Bench(stem.with_suffix(".elf"), profile, max(n, 8)).run(
            Case("__asm_copy_to_user", n, src, dst)).cycles
        best = cycles if best is None else min(best, cycles)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="u74")
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--out", type=Path, help="where to write the JSON (default: "
                    "bench/tune/results/goal_bounds_<profile>.json)")
    args = ap.parse_args()
    return measure(args)


def measure(args) -> int:
    prof = load_profile(args.profile)
    need = {"aligned": 1.15, "misaligned": 1.8}
    result = {"profile": args.profile, "baseline": str(args.baseline), "cells": [],
              "command": " ".join(["python", "bench/tune/goal_bounds.py"] + sys.argv[1:])}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        empty = specialised(0, 0, 0, args.profile, work)
        base = Bench(build_cached(args.baseline, work / "cache").elf, args.profile, 8192)
        print(f"{args.profile}: {prof.mem_pipes} memory pipe(s), sstatus accesses "
              f"{prof.serial_cost} cycles each; the empty specialised routine (SUM on and off, "
              f"return) takes {empty} cycles")
        print(f"{'cell':>18s} {'baseline':>9s} {'bound':>7s} {'straight':>8s} "
              f"{'max x':>6s} {'goal':>5s}")
        for cls, sizes in CELLS:
            pairs = [(s, d) for s in range(8) for d in range(8) if align_class(s, d) == cls]
            for n in sizes:
                theirs = [base.run(Case("__asm_copy_to_user", n, s, d)).cycles for s, d in pairs]
                ours = [specialised(n, s, d, args.profile, work) for s, d in pairs]
                bound = (None if prof.engine == "ooo" else
                         2 * -(-n // 8) / prof.mem_pipes + 2 * prof.serial_cost)
                mean_base, mean_ours = sum(theirs) / len(pairs), sum(ours) / len(pairs)
                cell = {"class": cls, "size": n, "pairs": len(pairs), "baseline": mean_base,
                        "memory_bound": bound, "specialised": mean_ours,
                        "max_speedup_bound": bound and round(mean_base / bound, 3),
                        "max_speedup_specialised": round(mean_base / mean_ours, 3),
                        "goal": need[cls]}
                result["cells"].append(cell)
                beyond = bound and mean_base / bound < need[cls]
                print(f"{cls + ' ' + str(n) + ' B':>18s} {mean_base:9.1f} "
                      f"{'-' if bound is None else f'{bound:.1f}':>7s} "
                      f"{mean_ours:8.1f} {mean_base / mean_ours:5.3f}x {need[cls]:4.2f}x"
                      f"{'  beyond the memory bound' if beyond else ''}")
    result["empty_routine"] = empty
    out = args.out or ROOT / "bench" / "tune" / "results" / f"goal_bounds_{args.profile}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
