"""Proof time of the vector routine's own contract (verify.vprove) per VLEN.

    python bench/vector_proof.py [--out bench/results/vector_proof.json]

Builds examples/x60vector.copy and proves __asm_vector_usercopy at VLEN
128, 256, 512 and 1024 (both directions each), one after the other in this
process; writes each VLEN's seconds and clause statuses.
"""
from __future__ import annotations

import argparse
import json
import platform
import tempfile
from pathlib import Path

from copygen.gen.build import build_file
from copygen.verify.vprove import prove_vector

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench/results/vector_proof.json"))
    ap.add_argument("--vlens", default="128,256,512,1024")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        elf = build_file(ROOT / "examples/x60vector.copy", Path(d)).elf
        rows = []
        for vlen in map(int, args.vlens.split(",")):
            rep = prove_vector(str(elf), vlen)
            rows.append({"vlen": vlen, "seconds": round(rep.seconds, 1),
                         "proved": sorted(c for c, s in rep.status.items() if s == "proved"),
                         "not_proved": {c: rep.detail[c] for c, s in rep.status.items()
                                        if s != "proved"}})
            print(f"VLEN {vlen}: {rep.seconds:.1f} s, "
                  f"{len(rows[-1]['proved'])}/{len(rep.status)} clauses proved")
    Path(args.out).write_text(json.dumps({"example": "examples/x60vector.copy",
                                          "python": platform.python_version(),
                                          "runs": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
