"""Issue 36's goals for a tuned strategy, cell by cell, under one cost profile.

    python -m bench.tune.tune_goals examples/u74tuned.copy --profile u74 \
        --baseline examples/kernel2021.copy --baseline examples/pre2021.copy \
        --kernel-tree ~/.cache/copygen/linux-source-6.12

A cell is a routine, a size of the tuner's grid (8 B to 8 KiB) and an
alignment class; its cycles are the mean over the class's (src, dst)
offset pairs, warm L1, every pair of `copygen bench --align all`:
copy_to_user, copy_from_user, memcpy and memmove by class (aligned: 1
pair, co-aligned: 7, misaligned: 56); clear_user and memset by dst offset
(dst+0 .. dst+7, each its own class).

Goals:
1. never slower: no cell of the tuned routine above the same cell of any
   baseline that has the routine (the uaccess baselines given: .copy files
   or a kernel's own uaccess.S; for memcpy,
   memmove and memset the kernel's own memcpy.S, memmove.S and memset.S of
   the tree given, assembled by the real toolchain as Kbuild does);
2. at the bound (copy_to_user and copy_from_user): aligned 128 B-8 KiB at
   most B(n) + 10, mutually misaligned 512 B-8 KiB at most S(n) + 40,
   co-aligned from 64 B at most 20 cycles above the aligned cell, with
     B(n) = 2 * ceil(n / 8) / mem_pipes + 2 * serial_cost   (every byte
            through one load and one store of at most 8 bytes; SUM on, off)
     S(n) = max(2 / mem_pipes, 5 / issue_width) * n / 8 + 2 * serial_cost
            (a shift-copy word: a load, a store, three ALU operations)
   taken from the profile (u74: B = 2 ceil(n/8) + 8, S = 2.5 n/8 + 8).  For
   an out-of-order profile these are throughput bounds of its issue and
   memory pipes, not the in-order model's exact floor.

Prints each failing cell with its figures and a table per routine; writes
bench/tune/results/tune_goals_<profile>.json (or --out), with every baseline's
cells beside the tuned routine's (`baselines`).  With --routine (a
symbol; repeatable) only those routines are measured, and their entries
replace theirs in the JSON already there, the others kept as they were:

    python -m bench.tune.tune_goals examples/u74tuned.copy --profile u74 \
        --baseline examples/kernel2021.copy --baseline examples/pre2021.copy \
        --routine __clear_user

Each routine's entry names the command that measured it.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from copygen.emu.elf import read_elf  # noqa: E402
from copygen.emu.timing.profile import load_profile  # noqa: E402
from copygen.gen.build import build_assembly, build_cached  # noqa: E402
from copygen.measure.bench import KINDS, Bench, Case, align_class  # noqa: E402
from copygen.tune.evaluate import GRID_SIZES  # noqa: E402

UACCESS = ("__asm_copy_to_user", "__asm_copy_from_user", "__clear_user")
STRING = ("memcpy", "memmove", "memset")
KERNEL_STRING = ("memcpy.S", "memmove.S", "memset.S")


def cell_class(routine: str, src: int, dst: int) -> str | None:
    """The class a (src, dst) pair counts in; None: the pair is not one of
    the routine's (a routine without a source only varies dst)."""
    if KINDS[routine].form == "copy":
        return align_class(src, dst)
    return f"dst+{dst}" if src == 0 else None


def grid(elf: Path, profile: str, routines: tuple[str, ...]) -> dict:
    """{routine: {class: {size: mean cycles}}} of the routines the ELF has;
    an alias of a routine already measured reuses its cells."""
    image = read_elf(elf)
    out: dict[str, dict] = {}
    by_addr: dict[int, str] = {}
    for r in routines:
        if r not in image.symbols:
            continue
        addr = image.address_of(r)
        if addr in by_addr and KINDS[by_addr[addr]].form == KINDS[r].form:
            out[r] = out[by_addr[addr]]
            continue
        by_addr[addr] = r
        cells: dict[str, dict[int, list[int]]] = {}
        for src in range(8):
            for dst in range(8):
                cls = cell_class(r, src, dst)
                if cls is None:
                    continue
                for n in GRID_SIZES:
                    # a machine per call, its arenas sized for this call
                    bench = Bench(elf, profile, n)
                    cells.setdefault(cls, {}).setdefault(n, []).append(
                        bench.run(Case(r, n, src, dst)).cycles)
        out[r] = {c: {n: sum(v) / len(v) for n, v in row.items()} for c, row in cells.items()}
    return out


def _baseline_elf(path: Path, work: Path) -> Path:
    """A baseline's ELF: a .copy built, or a kernel's own uaccess.S (a
    tree's arch/riscv/lib/uaccess.S) assembled as Kbuild would."""
    if path.suffix == ".S":
        if not path.is_file():
            raise SystemExit(f"{path}: not found")
        return build_assembly([path], work / f"baseline-{path.stem}", path.stem)
    return build_cached(path, work).elf


def kernel_string_elf(tree: Path, work: Path) -> Path:
    """The tree's memcpy.S, memmove.S and memset.S, assembled and linked."""
    sources = [tree / "arch" / "riscv" / "lib" / name for name in KERNEL_STRING]
    for src in sources:
        if not src.is_file():
            raise SystemExit(f"{src}: not found (give --kernel-tree the top of a 6.12 tree)")
    return build_assembly(sources, work / "kernel-string", "kernel-string")


def bounds(profile: str) -> tuple:
    p = load_profile(profile)
    pipes, width, serial = p.mem_pipes, p.issue_width, p.serial_cost

    def B(n: int) -> float:
        return 2 * math.ceil(n / 8) / pipes + 2 * serial

    def S(n: int) -> float:
        return max(2 / pipes, 5 / width) * n / 8 + 2 * serial
    return B, S


def bound_goals(cells: dict, B, S) -> list[dict]:
    """Goal 2 for one copy routine's cells: one entry per goal cell."""
    out = []
    for n in GRID_SIZES:
        if n >= 128:
            out.append(_goal("aligned", n, cells["aligned"][n], B(n) + 10, f"B+10 = {B(n) + 10:g}"))
        if n >= 512:
            out.append(_goal("misaligned", n, cells["misaligned"][n], S(n) + 40,
                             f"S+40 = {S(n) + 40:g}"))
        if n >= 64:
            limit = cells["aligned"][n] + 20
            out.append(_goal("co-aligned", n, cells["co-aligned"][n], limit,
                             f"aligned+20 = {limit:g}"))
    return out


def _goal(cls: str, n: int, got: float, limit: float, says: str) -> dict:
    return {"class": cls, "size": n, "cycles": round(got, 2), "limit": round(limit, 2),
            "says": says, "met": got <= limit + 1e-9}


def slower_cells(ours: dict, theirs: dict) -> list[dict]:
    return [{"class": c, "size": n, "cycles": round(ours[c][n], 2), "baseline": round(t, 2),
             "ratio": round(t / ours[c][n], 3)}
            for c, row in theirs.items() for n, t in row.items() if ours[c][n] > t + 1e-9]


def _table(routine: str, ours: dict, bases: dict[str, dict]) -> None:
    classes = list(ours)
    print(f"\n{routine}: cycles of the tuned routine (slowest baseline's ratio, x)")
    print("  size  " + "".join(f"{c:>20s}" for c in classes))
    for n in GRID_SIZES:
        line = f"{n:6d}  "
        for c in classes:
            ratios = [b[c][n] / ours[c][n] for b in bases.values() if c in b]
            worst = f"{min(ratios):.2f}x" if ratios else "-"
            line += f"{ours[c][n]:>12.1f} ({worst:>5s})"
        print(line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tuned", type=Path)
    ap.add_argument("--profile", default="u74")
    ap.add_argument("--baseline", type=Path, action="append", default=[],
                    help="a .copy whose uaccess (and string) routines are baselines, "
                         "or a kernel's uaccess.S; repeatable")
    ap.add_argument("--kernel-tree", type=Path,
                    help="a kernel tree whose memcpy.S, memmove.S, memset.S are the string baselines")
    ap.add_argument("--out", type=Path, help="the JSON to write (default: "
                    "bench/tune/results/tune_goals_<profile>.json)")
    ap.add_argument("--routine", action="append", default=[], choices=UACCESS + STRING,
                    help="measure only this routine and update its entry in the JSON; "
                         "repeatable")
    args = ap.parse_args(argv)
    B, S = bounds(args.profile)
    every = tuple(args.routine) or UACCESS + STRING
    command = " ".join(["python", "-m", "bench.tune.tune_goals"] + (sys.argv[1:] if argv is None else argv))
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        ours = grid(build_cached(args.tuned, cache).elf, args.profile, every)
        bases = {str(b): grid(_baseline_elf(b, cache), args.profile,
                              tuple(r for r in every if r in UACCESS)) for b in args.baseline}
        if args.kernel_tree and any(r in STRING for r in every):
            elf = kernel_string_elf(args.kernel_tree.expanduser(), cache)
            bases[f"{args.kernel_tree.name}: mem*.S"] = grid(
                elf, args.profile, tuple(r for r in every if r in STRING))
    out = args.out or ROOT / "bench" / "tune" / "results" / f"tune_goals_{args.profile}.json"
    result = {"tuned": str(args.tuned), "profile": args.profile, "command": command,
              "routines": {}}
    if args.routine and out.is_file():
        result = json.loads(out.read_text())
        if (result.get("tuned"), result.get("profile")) != (str(args.tuned), args.profile):
            raise SystemExit(f"{out} measures {result.get('tuned')} under "
                             f"{result.get('profile')}: give --out a file of its own")
    for r, cells in ours.items():
        mine = {b: g[r] for b, g in bases.items() if r in g}
        entry = {"command": command, "cycles": cells,
                 "never_slower": {b: slower_cells(cells, t) for b, t in mine.items()},
                 "baselines": {b: {c: {n: round(v, 2) for n, v in row.items()}
                                   for c, row in t.items()} for b, t in mine.items()}}
        if r in ("__asm_copy_to_user", "__asm_copy_from_user"):
            entry["bound"] = bound_goals(cells, B, S)
        result["routines"][r] = entry
        _report(r, entry, mine)
    failing = sum(failing_cells(e) for e in result["routines"].values())
    result["failing_cells"] = failing
    print(f"\n{failing} goal cell(s) not met" + (" (every routine in the JSON)" if args.routine
                                                  else ""))
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


def failing_cells(entry: dict) -> int:
    """The goal cells one routine's entry misses."""
    return (sum(len(bad) for bad in entry["never_slower"].values())
            + sum(not g["met"] for g in entry.get("bound", [])))


def _report(r: str, entry: dict, mine: dict) -> None:
    cells = entry["cycles"]
    _table(r, cells, mine)
    total = sum(len(row) for row in cells.values())
    for b, bad in entry["never_slower"].items():
        worst = min(bad, key=lambda c: c["ratio"], default=None)
        print(f"  never slower than {b}: " + (
            f"{len(bad)} of {total} cells slower, worst {worst['ratio']}x at "
            f"{worst['class']} {worst['size']} B ({worst['cycles']} vs {worst['baseline']})"
            if bad else f"met in all {total} cells"))
    missed = [g for g in entry.get("bound", []) if not g["met"]]
    if "bound" in entry:
        print(f"  at the bound: {len(entry['bound']) - len(missed)} of {len(entry['bound'])} "
              f"goal cells met" + "".join(f"\n    {g['class']} {g['size']} B: {g['cycles']} > "
                                          f"{g['says']}" for g in missed))


if __name__ == "__main__":
    sys.exit(exit_status(main))
