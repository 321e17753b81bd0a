"""Where the vector copy beats the scalar one, per vector core profile.

For each profile with a [vector] section (x60, x280), bench copy_to_user of
examples/x60vector.copy two ways at sizes 64 B .. 16 KiB, aligned,
co-aligned and misaligned:

* scalar: __asm_copy_to_user of the same strategy without its `vector` line;
* vector: __asm_vector_usercopy (the routine the dispatch would call above
  the threshold) plus what the kernel vector section around it costs,
  measured on the same profile from shim/vector_section.S: "clean"
  (the user has no vector state: VS on and off) and "dirty" (the user's
  vector state saved and restored too).  The dispatch's compare and the C
  glue's scalar work are not modelled.

The crossover of a column is the smallest size of the grid from which the
vector path is never slower than the scalar copy; a `vector ... above N`
line wants N there (at least the strategy's `small below`, which the
language requires).  The kernel's default is 768.

    python -m bench.tune.vector_threshold [--json bench/tune/results/vector_threshold.json]
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
EXAMPLE = ROOT / "examples" / "x60vector.copy"
PROFILES = ("x60", "x280")
SIZES = (64, 96, 128, 192, 256, 384, 512, 640, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
         12288, 16384)
ALIGNS = {"aligned": (0, 0), "co-aligned": (3, 3), "misaligned": (3, 0)}   # (src, dst) offsets
COLUMNS = ("routine", "clean", "dirty")   # the vector path without / with the section's cost
KERNEL_THRESHOLD = 768                    # RISCV_ISA_V_UCOPY_THRESHOLD's default


def build(work: Path) -> dict[str, Path]:
    """ELFs: the vector strategy, its scalar twin, and the section fixture."""
    text = EXAMPLE.read_text()
    scalar_src = work / "x60scalar.copy"
    scalar_src.write_text(re.sub(r"(?m)^\s*vector .*\n", "", text).replace("x60vector", "x60scalar"))
    vector = build_cached(EXAMPLE, work / "cache")
    scalar = build_cached(scalar_src, work / "cache")
    return {"vector": vector.elf, "scalar": scalar.elf, "section": build_vector_section(work)}


def measure(profile: str, elfs: dict[str, Path]) -> dict:
    scalar, vector = (Bench(elfs[k], profile, max(SIZES)) for k in ("scalar", "vector"))
    section = section_cycles(elfs["section"], profile)
    rows = []
    for align, (so, do) in ALIGNS.items():
        for n in SIZES:
            s = scalar.run(Case("__asm_copy_to_user", n, so, do)).cycles
            v = vector.run(Case("__asm_vector_usercopy", n, so, do)).cycles
            rows.append({"align": align, "size": n, "scalar": s, "routine": v,
                         "clean": v + section["clean"], "dirty": v + section["dirty"]})
    crossover = {a: {c: crossover_size([r for r in rows if r["align"] == a], c) for c in COLUMNS}
                 for a in ALIGNS}
    return {"vlen": vector.machine.hart.vlen, "section": section, "rows": rows, "crossover": crossover}


def crossover_size(rows: list[dict], column: str) -> int | None:
    """Smallest size from which `column` is never slower than scalar (None: never)."""
    best = None
    for r in sorted(rows, key=lambda r: r["size"], reverse=True):
        if r[column] > r["scalar"]:
            break
        best = r["size"]
    return best


def table(results: dict, small_below: int) -> str:
    lines = ["| core | VLEN | alignment | vector section clean / dirty (cycles) | crossover: routine only "
             "| with clean section | with dirty section | `above N` it wants (clean / dirty) |",
             "|---|---|---|---|---|---|---|---|"]
    for prof, res in results.items():
        for align, cross in res["crossover"].items():
            want = [_above(cross[c], small_below) for c in ("clean", "dirty")]
            lines.append(f"| {prof} | {res['vlen']} | {align} | {res['section']['clean']} / "
                         f"{res['section']['dirty']} | {_size(cross['routine'])} | {_size(cross['clean'])} "
                         f"| {_size(cross['dirty'])} | {want[0]} / {want[1]} |")
    return "\n".join(lines)


def _size(n: int | None) -> str:
    return "never" if n is None else str(n)


def _above(n: int | None, small_below: int) -> str:
    return "none (keep scalar)" if n is None else str(max(n, small_below))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", default=str(ROOT / "bench" / "tune" / "results" / "vector_threshold.json"))
    args = ap.parse_args(argv)
    small_below = int(re.search(r"small below (\d+)", EXAMPLE.read_text()).group(1))
    with tempfile.TemporaryDirectory() as tmp:
        elfs = build(Path(tmp))
        results = {p: measure(p, elfs) for p in PROFILES}
    out = {"command": "python -m bench.tune.vector_threshold " + " ".join(argv if argv is not None else sys.argv[1:]),
           "example": str(EXAMPLE.relative_to(ROOT)), "kernel_threshold": KERNEL_THRESHOLD,
           "small_below": small_below, "profiles": results}
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(table(results, small_below))
    return 0


if __name__ == "__main__":
    sys.exit(main())
