"""Proof time of the vector routine's own contract (verify.vector.vprove) per VLEN.

    python -m bench.verify.vector_proof [--vlens 128,256] [--line "vector e8 m8 above 768 loads ff"]
                                 [--out bench/verify/results/vector_proof.json]
    python -m bench.verify.vector_proof --kernel-tree ~/.cache/copygen/linux-source-6.12
                                 [--out bench/verify/results/vector_proof_kernel.json]

Without --line: builds examples/x60vector.copy.  With --line: a copy_user
block of x60 with that vector line (and the scalar phases the vector tests
use) instead; x60 is `misaligned fast` for a line of e16..e64 elements.  Proves __asm_vector_usercopy at each VLEN (both directions
each), one after the other in this process, and writes each VLEN's seconds
and clause statuses.  Runs of other examples or lines already in the
results file are kept; a run of the same one is replaced.

With --kernel-tree: the tree's own arch/riscv/lib/uaccess_vector.S,
unedited, assembled against the shim; every vector entry point it defines
(__asm_vector_usercopy, and mainline's _sum_enabled loop) is proved at
each VLEN, and each VLEN's seconds, clauses proved and clauses violated
(with the replayed counterexample) are written, with the tree's version
and the file's hash.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import platform
import subprocess
import tempfile
from pathlib import Path

from copygen.emu.elf import read_elf
from copygen.gen.build import build_file, shim_elf
from copygen.verify.vector.vprove import SUM_HELD_SYMBOL, SYMBOL, prove_vector

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = "examples/x60vector.copy"
SCALAR = "    small below 71\n    words unroll 8\n    tail bytes\n    fault exact\n"


def _source(line: str | None, d: Path) -> Path:
    if line is None:
        return ROOT / EXAMPLE
    src = d / "v.copy"
    # elements wider than a byte need a core with fast misaligned access
    speed = "slow" if line.split()[1] == "e8" else "fast"
    src.write_text(f"target x60 {{\n    xlen 64\n    misaligned {speed}\n}}\n"
                   f"copy_user v for x60 {{\n{SCALAR}    {line}\n}}\n")
    return src


def _previous(out: Path) -> list[dict]:
    if not out.is_file():
        return []
    doc = json.loads(out.read_text())
    if "sets" in doc:
        return doc["sets"]
    return [{"example": doc["example"], "runs": doc["runs"]}]


def _tree_version(tree: Path) -> str:
    r = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h %s"],
                       capture_output=True, text=True)
    return r.stdout.strip() or str(tree)


def kernel(tree: Path, vlens: list[int], out: Path) -> None:
    """The tree's uaccess_vector.S, every vector entry point at each VLEN."""
    src = tree / "arch/riscv/lib/uaccess_vector.S"
    doc = {"python": platform.python_version(), "tree": _tree_version(tree),
           "file": "arch/riscv/lib/uaccess_vector.S",
           "sha256": hashlib.sha256(src.read_bytes()).hexdigest(), "routines": []}
    with tempfile.TemporaryDirectory() as d:
        elf = shim_elf(src, Path(d))
        symbols = [s for s in (SYMBOL, SUM_HELD_SYMBOL) if s in read_elf(elf).symbols]
        for sym in symbols:
            rows = []
            doc["routines"].append({"symbol": sym, "runs": rows})
            for vlen in vlens:
                rep = prove_vector(str(elf), vlen, symbol=sym)
                rows.append({"vlen": vlen, "seconds": round(rep.seconds, 1),
                             "proved": sorted(c for c, s in rep.status.items() if s == "proved"),
                             "violated": {c: {"detail": rep.detail[c], "replay": rep.examples.get(c)}
                                          for c, s in rep.status.items() if s == "violated"},
                             "unknown": {c: rep.detail[c] for c, s in rep.status.items()
                                         if s not in ("proved", "violated")}})
                print(f"{sym}, VLEN {vlen}: {rep.seconds:.1f} s, {len(rows[-1]['proved'])}/"
                      f"{len(rep.status)} proved, violated: {sorted(rows[-1]['violated'])}", flush=True)
                out.write_text(json.dumps(doc, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--vlens", default="128,256,512,1024")
    ap.add_argument("--line", default=None,
                    help="a vector phase to prove instead of the example's")
    ap.add_argument("--kernel-tree", default=None,
                    help="prove this Linux tree's own arch/riscv/lib/uaccess_vector.S instead")
    args = ap.parse_args()
    if args.kernel_tree:
        kernel(Path(args.kernel_tree).expanduser(), list(map(int, args.vlens.split(","))),
               Path(args.out or ROOT / "bench/verify/results/vector_proof_kernel.json"))
        return
    args.out = args.out or str(ROOT / "bench/verify/results/vector_proof.json")
    name = args.line or EXAMPLE
    out = Path(args.out)
    sets = [s for s in _previous(out) if s.get("line", s["example"]) != name]
    with tempfile.TemporaryDirectory() as d:
        elf = build_file(_source(args.line, Path(d)), Path(d)).elf
        rows = []
        for vlen in map(int, args.vlens.split(",")):
            rep = prove_vector(str(elf), vlen)
            rows.append({"vlen": vlen, "seconds": round(rep.seconds, 1),
                         "proved": sorted(c for c, s in rep.status.items() if s == "proved"),
                         "not_proved": {c: rep.detail[c] for c, s in rep.status.items()
                                        if s != "proved"}})
            print(f"{name}, VLEN {vlen}: {rep.seconds:.1f} s, "
                  f"{len(rows[-1]['proved'])}/{len(rep.status)} clauses proved", flush=True)
            entry = {"example": EXAMPLE if args.line is None else "x60 copy_user",
                     "line": name, "runs": rows}
            out.write_text(json.dumps({"python": platform.python_version(),
                                       "sets": sets + [entry]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
