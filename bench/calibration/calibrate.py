"""Calibration of a cost profile against the U74 board figures of docs/calibration.md.

Builds examples/pre2021.copy and examples/kernel2021.copy (gen.build, into
build/calibrate/) and bench/calibration/reference/ref2021.S (the 2021 algorithm with the
measured routine's loop shapes), runs `__asm_copy_to_user` warm on 8, 16 and
32 KiB with src offset 0 and 1..7 (dst aligned), and prints the model beside
the measurements as Markdown tables; writes bench/results/calibration.json.

Run from the repository root:

    python -m bench.calibration.calibrate [--profile u74] [--clock-ghz 1.2]

"misaligned" is the mean cycles over src offsets 1..7 turned into one
throughput (the bytes of the seven copies over their total time).
Imports: emu, gen (build and toolchain driver), the standard library.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from copygen.measure.bench import Bench, Case  # noqa: E402
from copygen.gen import toolchain  # noqa: E402
from copygen.gen.build import build_file  # noqa: E402

RESULTS = ROOT / "bench" / "calibration" / "results" / "calibration.json"
BUILD = ROOT / "build" / "calibrate"
SIZES = (8192, 16384, 32768)
MIB = 1 << 20

# docs/calibration.md, "What is measured" (MiB/s on a U74 board, copy_to_user, dst aligned).
MEASURED = {
    ("pre2021", 8192, "aligned"): 1800, ("pre2021", 8192, "misaligned"): 227,
    ("kernel2021", 8192, "aligned"): 4151, ("kernel2021", 8192, "misaligned"): 1785,
    ("kernel2021", 32768, "aligned"): 1517, ("kernel2021", 32768, "misaligned"): 1027,
}
# The four ratios docs/calibration.md asks a cost model to reproduce.
RATIOS = (
    ("2021 / pre-2021, aligned", ("new", "aligned"), ("old", "aligned"), 2.31),
    ("2021 / pre-2021, misaligned", ("new", "misaligned"), ("old", "misaligned"), 7.86),
    ("2021 aligned / misaligned", ("new", "aligned"), ("new", "misaligned"), 2.33),
    ("pre-2021 aligned / misaligned", ("old", "aligned"), ("old", "misaligned"), 7.93),
)


def build_reference(build: Path) -> Path:
    """Assemble and link bench/calibration/reference/ref2021.S with the generator's shim and layout."""
    ref = build / "ref2021"
    ref.mkdir(parents=True, exist_ok=True)
    obj, elf = ref / "ref2021.o", ref / "ref2021.elf"
    toolchain.assemble(ROOT / "bench" / "calibration" / "reference" / "ref2021.S", ROOT / "shim" / "include", obj)
    toolchain.link([obj], ROOT / "shim" / "copygen.ld", elf)
    return elf


def build_elfs() -> dict[str, tuple[str, Path]]:
    """name -> (what it is, linked ELF)."""
    out = {}
    for stem in ("pre2021", "kernel2021"):
        res = build_file(ROOT / "examples" / f"{stem}.copy", BUILD)
        out[stem] = (f"examples/{stem}.copy", res.elf)
    out["ref2021"] = ("bench/calibration/reference/ref2021.S", build_reference(BUILD))
    return out


def measure(elf: Path, profile: str) -> dict[tuple[int, str], float]:
    """(size, class) -> cycles of one warm __asm_copy_to_user call."""
    bench = Bench(elf, profile, max(SIZES))
    got = {}
    for size in SIZES:
        run = [bench.run(Case("__asm_copy_to_user", size, off, 0)).cycles for off in range(8)]
        got[size, "aligned"] = float(run[0])
        got[size, "misaligned"] = sum(run[1:]) / 7
    return got


def rows_for(name: str, source: str, cycles: dict, clock: float) -> list[dict]:
    rows = []
    measured_as = "kernel2021" if name == "ref2021" else name
    for (size, cls), cyc in cycles.items():
        mib = size / cyc * clock / MIB
        meas = MEASURED.get((measured_as, size, cls))
        rows.append({"routine": name, "source": source, "size": size, "class": cls,
                     "cycles": round(cyc, 1), "bytes_per_cycle": round(size / cyc, 3),
                     "model_mib_s": round(mib), "measured_mib_s": meas,
                     "error_pct": round(100 * (mib / meas - 1), 1) if meas else None})
    return rows


def ratios(old: dict, new: dict) -> list[dict]:
    tput = {("old", c): 8192 / old[8192, c] for c in ("aligned", "misaligned")}
    tput.update({("new", c): 8192 / new[8192, c] for c in ("aligned", "misaligned")})
    out = []
    for name, num, den, want in RATIOS:
        model = tput[num] / tput[den]
        err = 100 * (model / want - 1)
        out.append({"ratio": name, "model": round(model, 2), "measured": want,
                    "error_pct": round(err, 1), "within_10pct": abs(err) <= 10})
    return out


def markdown(rows: list[dict], ratio_sets: dict[str, list[dict]], clock: float) -> str:
    lines = [f"Throughput (model at {clock:g} GHz vs the board, docs/calibration.md), warm L1, dst aligned:", "",
             "| routine | size | src | cycles | B/cycle | model MiB/s | measured MiB/s | error |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        meas = r["measured_mib_s"] if r["measured_mib_s"] else "-"
        err = f"{r['error_pct']:+.1f} %" if r["error_pct"] is not None else "-"
        lines.append(f"| {r['routine']} | {r['size']} | {r['class']} | {r['cycles']:g} | "
                     f"{r['bytes_per_cycle']:.3f} | {r['model_mib_s']} | {meas} | {err} |")
    for title, rs in ratio_sets.items():
        lines += ["", f"Ratios at 8 KiB, {title}:", "",
                  "| ratio | model | measured | error | within 10 % |", "|---|---|---|---|---|"]
        lines += [f"| {r['ratio']} | {r['model']:.2f} | {r['measured']:.2f} | {r['error_pct']:+.1f} % | "
                  f"{'yes' if r['within_10pct'] else 'NO'} |" for r in rs]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="u74_spec")
    ap.add_argument("--clock-ghz", type=float, default=1.2,
                    help="core clock for MiB/s (HiFive Unmatched FU740: 1.2 GHz)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    clock = args.clock_ghz * 1e9
    cycles, rows = {}, []
    for name, (source, elf) in build_elfs().items():
        cycles[name] = measure(elf, args.profile)
        rows += rows_for(name, source, cycles[name], clock)
    ratio_sets = {
        "examples/pre2021.copy vs examples/kernel2021.copy": ratios(cycles["pre2021"], cycles["kernel2021"]),
        "examples/pre2021.copy vs bench/calibration/reference/ref2021.S": ratios(cycles["pre2021"], cycles["ref2021"]),
    }
    print(markdown(rows, ratio_sets, args.clock_ghz))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "profile": args.profile, "clock_ghz": args.clock_ghz,
        "command": "python -m bench.calibration.calibrate", "rows": rows,
        "ratios": [{"pair": k, **r} for k, rs in ratio_sets.items() for r in rs]}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
