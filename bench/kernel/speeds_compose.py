"""The composed user copy of a vector kernel with two scalar bodies
(docs/speeds.md): the vector dispatch, the C glue, the vector loop, and as
the glue's fallback the scalar copy a static key dispatches to
u74tuned's or c910fast's body.

Linux 6.12's uaccess.S (read with `git show`) is patched in memory with
`--fast-body` (examples/u74tuned.copy, examples/c910fast.copy), built with
the probe and jump labels, key off and key on; both copy entry points are
proved in each state (through --proof-cache: a `copygen patch` of the same
files has proved them already), the site checked, the two states combined
(verify.compose.speeds.combine) and composed with a vector routine
(verify.compose.speeds.with_vector): the tree's own uaccess_vector.S and
examples/x60vector.copy's generated loop, each proved at VLEN 128..1024.

Usage: python -m bench.kernel.speeds_compose [--tree DIR] [--rev REV] [--proof-cache DIR]
Writes bench/kernel/results/speeds_compose.json.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
OUT = ROOT / "bench" / "kernel" / "results" / "speeds_compose.json"

from bench.kernel.speeds_dispatch import TREE, texts  # noqa: E402


def scalar_reports(plan, workdir: Path, cache) -> tuple[dict, dict, object]:
    """(key-off reports, key-on reports, the site) of the copy entry points."""
    from copygen.emu.elf import read_elf
    from copygen.patch.speeds import dispatch
    from copygen.patch.speeds import run as speeds_run
    from copygen.verify.compose import speeds as compose
    from copygen.verify.contract.inputs import routines
    from copygen.verify.solver.cache import prove_cached
    states = speeds_run._states(plan.text, workdir)
    syms = read_elf(states["off"].elf).symbols
    site = compose.check_site(states["off"].elf, dispatch.KEY, syms[plan.dispatcher], syms[plan.fast])
    out = []
    for key in ("off", "on"):
        elf = states[key].elf
        out.append({s: prove_cached(elf, s, k, cache) for s, k in routines(elf) if k in ("to", "from")})
    return out[0], out[1], site


def vector_report(source: Path, workdir: Path):
    from copygen.gen.build import shim_elf
    from copygen.verify.vector import vprove
    return vprove.prove_vectors(str(shim_elf(source, workdir)))


def generated_vector(workdir: Path) -> Path:
    from copygen.gen.build import build_file
    return build_file(ROOT / "examples" / "x60vector.copy", workdir).outdir / "uaccess_vector.S"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=TREE)
    ap.add_argument("--rev", default="ac483696f")
    ap.add_argument("--proof-cache", type=Path, default=ROOT / "build" / "proofs")
    args = ap.parse_args(argv)
    from copygen.verify.compose import speeds as compose
    from copygen.verify.solver.cache import ProofCache
    t0 = time.time()
    _, plan = texts(args.tree, args.rev)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        off, on, site = scalar_reports(plan, tmp, ProofCache(args.proof_cache))
        vsrc = tmp / "tree" / "uaccess_vector.S"
        vsrc.parent.mkdir()
        vsrc.write_text(subprocess.run(["git", "-C", str(args.tree), "show",
                                        f"{args.rev}:arch/riscv/lib/uaccess_vector.S"],
                                       capture_output=True, text=True, check=True).stdout)
        vectors = {"6.12 uaccess_vector.S": vector_report(vsrc, tmp / "tree"),
                   "examples/x60vector.copy": vector_report(generated_vector(tmp / "gen"), tmp / "genv")}
    record = {"command": "python -m bench.kernel.speeds_compose " + " ".join(argv or sys.argv[1:]),
              "tree": str(args.tree), "rev": args.rev, "seconds": round(time.time() - t0, 1),
              "site": {"code": hex(site.code), "target": hex(site.target), "holds": site.holds()},
              "scalar": {s: {"key off": off[s].status, "key on": on[s].status,
                             "combined": compose.combine(off[s], on[s]).status} for s in off},
              "vector": {}}
    for name, vec in vectors.items():
        record["vector"][name] = {"vector routine": vec.status}
        for s in off:
            rep = compose.with_vector(vec, off[s], on[s])
            record["vector"][name][rep.symbol] = {c: rep.status[c] for c in rep.status}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    for name, v in record["vector"].items():
        for sym, st in v.items():
            print(name, sym, {c: s for c, s in st.items() if s != "proved"} or "all proved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
