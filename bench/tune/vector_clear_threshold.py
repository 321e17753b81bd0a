"""Does vector help clear_user?  Where the vector clear beats the scalar
ones, per vector core profile.

For each profile with a [vector] section (x60, x280), bench clear_user at
sizes 16 B .. 16 KiB with dst aligned (offset 0) and misaligned (3):

* vector: __asm_vector_clear_user (e8, the LMUL of VECTOR_LINES), what the
  dispatch at the top of __clear_user would call from its threshold on,
  plus the kernel vector section around it, measured on the same profile
  from shim/vector_section.S: "clean" (no user vector state: VS on and
  off) and "dirty" (the user's vector state saved and restored too).  The
  dispatch's compare and the glue's scalar work are not modelled;
* scalar: __clear_user of every example with a clear_user routine
  ("best": the fastest of them at each size and alignment), and of
  examples/kernel2021.copy (the kernel's 2021 clear) on its own.

The crossover of a column is the smallest size of the grid from which the
vector path is never slower than that scalar clear; a clear_user `vector
... above N` line wants N there (at least its `small below`).

    python -m bench.tune.vector_clear_threshold [--json bench/tune/results/vector_clear_threshold.json]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from copygen.gen.build import build_cached, build_vector_section
from copygen.measure.bench import Bench, Case
from copygen.measure.dispatch import section_cycles

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "examples"
KERNEL = "kernel2021"
PROFILES = ("x60", "x280")
SIZES = (16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144,
         8192, 12288, 16384)
ALIGNS = {"aligned": 0, "misaligned": 3}     # dst offset from a page boundary
VECTOR_LINES = {"m8": "vector e8 m8 above 16", "m2": "vector e8 m2 above 16"}
# the vector side's scalar phases: examples/x60vector.copy's clear (unused
# by the vector routine itself, which the bench calls directly)
CLEAR_PHASES = "small below 16\n    align dst\n    words unroll 1\n    tail bytes\n    fault exact"
STATES = ("clean", "dirty")


def _vector_source(work: Path, lmul: str) -> Path:
    src = work / f"vclear_{lmul}.copy"
    src.write_text("target x60 {\n    xlen 64\n    misaligned slow\n}\n"
                   f"clear_user vclear_{lmul} for x60 {{\n    {CLEAR_PHASES}\n    "
                   f"{VECTOR_LINES[lmul]}\n}}\n")
    return src


def scalar_examples() -> list[Path]:
    return sorted(p for p in EXAMPLES.glob("*.copy") if re.search(r"(?m)^clear_user ", p.read_text()))


def build(work: Path) -> dict:
    cache = work / "cache"
    return {"vector": {k: build_cached(_vector_source(work, k), cache).elf for k in VECTOR_LINES},
            "scalar": {p.stem: build_cached(p, cache).elf for p in scalar_examples()},
            "section": build_vector_section(work)}


def measure(profile: str, elfs: dict) -> dict:
    top = max(SIZES)
    vec = {k: Bench(e, profile, top) for k, e in elfs["vector"].items()}
    scal = {k: Bench(e, profile, top) for k, e in elfs["scalar"].items()}
    section = section_cycles(elfs["section"], profile)
    rows = []
    for align, off in ALIGNS.items():
        for n in SIZES:
            s = {k: b.run(Case("__clear_user", n, 0, off)).cycles for k, b in scal.items()}
            best = min(s, key=s.get)
            row = {"align": align, "size": n, "scalar": s, "best": best, "best_cycles": s[best],
                   "kernel2021": s[KERNEL]}
            for lmul, b in vec.items():
                v = b.run(Case("__asm_vector_clear_user", n, 0, off)).cycles
                row[f"vector_{lmul}"] = {"routine": v, **{st: v + section[st] for st in STATES}}
            rows.append(row)
    cross = {a: {lmul: {base: {c: crossover_size([r for r in rows if r["align"] == a], lmul, c, base)
                               for c in ("routine", *STATES)}
                        for base in ("best_cycles", KERNEL)}
                 for lmul in VECTOR_LINES} for a in ALIGNS}
    return {"vlen": next(iter(vec.values())).machine.hart.vlen, "section": section, "rows": rows,
            "crossover": cross}


def crossover_size(rows: list[dict], lmul: str, column: str, base: str) -> int | None:
    """Smallest size from which the vector column is never slower than
    `base` (None: never)."""
    best = None
    for r in sorted(rows, key=lambda r: r["size"], reverse=True):
        if r[f"vector_{lmul}"][column] > r[base]:
            break
        best = r["size"]
    return best


def _size(n: int | None) -> str:
    return "never" if n is None else str(n)


def table(results: dict) -> str:
    lines = ["| core | VLEN | dst | LMUL | vs | routine only | clean section | dirty section |",
             "|---|---|---|---|---|---|---|---|"]
    for prof, res in results.items():
        for align, by_lmul in res["crossover"].items():
            for lmul, by_base in by_lmul.items():
                for base, cross in by_base.items():
                    name = "best example" if base == "best_cycles" else base
                    lines.append(f"| {prof} | {res['vlen']} | {align} | {lmul} | {name} | "
                                 + " | ".join(_size(cross[c]) for c in ("routine", *STATES)) + " |")
    return "\n".join(lines)


def cycles_table(results: dict, sizes=(64, 256, 1024, 4096, 16384)) -> str:
    lines = ["| core | dst | size | best scalar (example) | kernel2021 | vector m8 | + clean | + dirty |",
             "|---|---|---|---|---|---|---|---|"]
    for prof, res in results.items():
        for r in res["rows"]:
            if r["size"] in sizes:
                v = r["vector_m8"]
                lines.append(f"| {prof} | {r['align']} | {r['size']} | {r['best_cycles']} ({r['best']}) | "
                             f"{r['kernel2021']} | {v['routine']} | {v['clean']} | {v['dirty']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", default=str(ROOT / "bench" / "tune" / "results" / "vector_clear_threshold.json"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        elfs = build(Path(tmp))
        results = {p: measure(p, elfs) for p in PROFILES}
    out = {"command": "python -m bench.tune.vector_clear_threshold " + " ".join(argv if argv is not None else sys.argv[1:]),
           "examples": [str(p.relative_to(ROOT)) for p in scalar_examples()],
           "vector_lines": VECTOR_LINES, "profiles": results}
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(table(results))
    print()
    print(cycles_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
