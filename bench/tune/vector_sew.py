"""What the element width of the vector routines costs, per vector core
profile: __asm_vector_usercopy and __asm_vector_clear_user at e8, e16, e32
and e64 (LMUL 8, plain loads), routine only (no vector section: it is the
same for every width), sizes 7 B .. 16 KiB, buffers aligned (offsets 0:0)
and misaligned (3:5; the clear's dst at 3).

The cost profiles time a unit-stride access by the DLEN beats its bytes
span, whatever its element width (emu/timing/vcost.py; LLVM's X60 and SiFive7
models give unit-stride loads and stores one occupancy per LMUL, the same
for every EEW), so a wide loop moves a chunk in the same cycles as e8 and
pays its extra instructions (the element count, the byte count, a
constant, an e8 tail) instead.

    python -m bench.tune.vector_sew [--json bench/tune/results/vector_sew.json]
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from copygen.gen.build import build_file
from copygen.measure.bench import Bench, Case

PROFILES = ("x60", "x280")
SEWS = (8, 16, 32, 64)
SIZES = (7, 64, 255, 1024, 4095, 16384)
OFFSETS = {"aligned": (0, 0), "misaligned": (3, 5)}
TEXT = """target f {{
    xlen 64
    misaligned fast
}}
copy_user c for f {{
    small below 71
    words unroll 8
    tail bytes
    fault exact
    vector e{sew} m8 above 128 loads plain
}}
clear_user z for f {{
    small below 16
    words unroll 1
    tail bytes
    fault exact
    vector e{sew} m8 above 128
}}
"""


def _elf(d: Path, sew: int) -> str:
    src = d / f"e{sew}.copy"
    src.write_text(TEXT.format(sew=sew))
    return str(build_file(src, d / f"e{sew}").elf)


def measure() -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        elfs = {sew: _elf(Path(tmp), sew) for sew in SEWS}
        for prof in PROFILES:
            for sew, elf in elfs.items():
                bench = Bench(elf, prof, max(SIZES) + 64)
                for routine in ("__asm_vector_usercopy", "__asm_vector_clear_user"):
                    for align, (so, do) in OFFSETS.items():
                        for n in SIZES:
                            s = bench.run(Case(routine, n, so, do))
                            rows.append({"profile": prof, "sew": sew, "routine": routine,
                                         "align": align, "size": n, "cycles": s.cycles,
                                         "instret": s.instret})
    return {"command": "python -m bench.tune.vector_sew --json bench/tune/results/vector_sew.json",
            "rows": rows}


def table(res: dict) -> str:
    out = ["| profile | routine | align | size | " + " | ".join(f"e{s}" for s in SEWS) + " |",
           "|---|---|---|---|" + "---|" * len(SEWS)]
    keys = dict.fromkeys((r["profile"], r["routine"], r["align"], r["size"]) for r in res["rows"])
    for k in keys:
        cyc = {r["sew"]: r["cycles"] for r in res["rows"]
               if (r["profile"], r["routine"], r["align"], r["size"]) == k}
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " +
                   " | ".join(str(cyc[s]) for s in SEWS) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    args = ap.parse_args()
    res = measure()
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
    print(table(res))


if __name__ == "__main__":
    main()
