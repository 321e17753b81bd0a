"""The c910 profile against the C910 hardware figures it was not fitted to.

Run from the repository root (writes bench/calibration/results/c910_validation.json and
prints the table of docs/calibration.md, "c910: validation"):

    python -m bench.calibration.ooo_validate [--profile c910] [--old bench/calibration/reference/c910_inorder.toml]

The hardware figures are the ones issue 20 quotes for a TH1520 (C910): the
byte loop's and the shift copy's cycles per iteration, cycles per 128 bytes
of a 64 KiB co-aligned copy, and that an 8-word loop and a 16-word loop
differ.  Loop figures are slopes (two sizes, same path), so set-up cancels.
The old in-order profile is kept in bench/calibration/reference/c910_inorder.toml.
Imports: measure (Bench), gen (build), the standard library.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from bench.exits import exit_status  # noqa: E402
from copygen.gen.build import build_file  # noqa: E402
from copygen.measure.bench import Bench, Case  # noqa: E402

BUILD = ROOT / "build" / "validate"
ROUTINE = "__asm_copy_to_user"
# figure -> (C910 hardware value quoted in issue 20, what the old model gave there per the issue)
HARDWARE = {
    "byte loop, cycles/byte": (2.0, 3.0),
    "shift copy x1, cycles/word": (3.9, 7.0),
    "64 KiB co-aligned, cycles/128 B": (20.0, 137.0),
}


def cycles(bench: Bench, size: int, src: int) -> int:
    return bench.run(Case(ROUTINE, size, src, 0)).cycles


def figures(elfs: dict[str, Path], profile: str) -> dict[str, float]:
    k = Bench(elfs["kernel2021"], profile, 65536)
    out = {"byte loop, cycles/byte": (cycles(k, 64, 0) - cycles(k, 32, 0)) / 32,
           "shift copy x1, cycles/word": (cycles(k, 8192, 1) - cycles(k, 4096, 1)) / 512,
           "64 KiB co-aligned, cycles/128 B": cycles(k, 65536, 0) / 512}
    for name in ("c910fast", "c910tuned"):
        out[f"{name} 8 KiB co-aligned, cycles"] = cycles(Bench(elfs[name], profile, 8192), 8192, 0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="c910")
    ap.add_argument("--old", default=str(ROOT / "bench" / "calibration" / "reference" / "c910_inorder.toml"))
    ap.add_argument("--json", default=str(ROOT / "bench" / "calibration" / "results" / "c910_validation.json"))
    args = ap.parse_args(argv)
    elfs = {s: build_file(ROOT / "examples" / f"{s}.copy", BUILD).elf for s in ("kernel2021", "c910fast", "c910tuned")}
    new, old = figures(elfs, args.profile), figures(elfs, args.old)
    rows = []
    print("| figure | C910 (issue 20) | old model | new model | new error |\n|---|---|---|---|---|")
    for name, (hw, _) in HARDWARE.items():
        err = 100 * (new[name] / hw - 1)
        rows.append({"figure": name, "hardware": hw, "old": round(old[name], 2), "new": round(new[name], 2),
                     "error_pct": round(err, 1)})
        print(f"| {name} | {hw} | {old[name]:.2f} | {new[name]:.2f} | {err:+.1f} % |")
    for name in (k for k in new if k not in HARDWARE):
        rows.append({"figure": name, "old": old[name], "new": new[name]})
        print(f"| {name} | - | {old[name]:.0f} | {new[name]:.0f} | - |")
    Path(args.json).write_text(json.dumps({"command": "python -m bench.calibration.ooo_validate " + " ".join(argv or sys.argv[1:]),
                                           "profile": args.profile, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
