"""What the kernel's C flags cost the generated string.c, cell by cell.

    python bench/kbuild_flags.py [FILE.copy ...] [--kcflags FLAGS] [--out FILE]

copygen compiles string.c with the code-generation flags Kbuild gives
arch/riscv/lib/string.o in a portable kernel (gen/toolchain.py:
-mstrict-align, frame pointers).  This builds each strategy twice, with
those flags alone and with KCFLAGS added (default `-mno-strict-align
-mtune=thead-c906`, the flags of a NONPORTABLE kernel tuned for a core
that loads misaligned words in hardware, which a developer passes as
KCFLAGS), and runs every C string function of it on its target's
profile at sizes 8 B-8 KiB, aligned, co-aligned (3:3) and mutually
misaligned (src+1).  A strategy whose string functions are all in
assembly has nothing to compare and is skipped.

Default files: the examples with string functions in C.  Writes
bench/results/kbuild_flags.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from exits import exit_status  # noqa: E402
from copygen.gen.build import build_cached  # noqa: E402
from copygen.gen.validate import load_file  # noqa: E402
from copygen.measure.bench import Bench, Case  # noqa: E402

SIZES = (8, 64, 256, 1024, 8192)
ALIGNS = ((0, 0), (3, 3), (1, 0))
DEFAULT_KCFLAGS = "-mno-strict-align -mtune=thead-c906"
FILES = ("examples/c910fast.copy", "examples/string2021.copy", "examples/tune_c910.copy")


def c_functions(path: Path) -> tuple[str, list[str]]:
    """(profile, the string functions the strategy writes in C)."""
    lib = load_file(path).string
    if lib is None:
        return "", []
    fns = [] if lib.memcpy_asm else ["memcpy"]
    fns += [] if lib.memmove_asm else ["memmove"]
    fns += [] if lib.memset_asm else ["memset"]
    return lib.target.profile, fns


def cycles(path: Path, cache: Path, kcflags: str | None, profile: str, fns: list[str]) -> dict:
    if kcflags is None:
        os.environ.pop("KCFLAGS", None)
    else:
        os.environ["KCFLAGS"] = kcflags
    elf = build_cached(path, cache).elf
    bench = Bench(elf, profile, max(SIZES))
    out: dict = {}
    for fn in fns:
        for n in SIZES:
            for src, dst in ALIGNS:
                if fn == "memset" and src:
                    src, dst = 0, src
                out.setdefault(fn, {})[f"{n}:{src}:{dst}"] = bench.run(Case(fn, n, src, dst)).cycles
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path, default=[Path(f) for f in FILES])
    ap.add_argument("--kcflags", default=DEFAULT_KCFLAGS,
                    help=f"the KCFLAGS to compare with (default: {DEFAULT_KCFLAGS})")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "kbuild_flags.json")
    args = ap.parse_args()
    saved = os.environ.get("KCFLAGS")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.files:
            profile, fns = c_functions(path)
            if not fns:
                print(f"{path}: no string function in C, skipped")
                continue
            kbuild = cycles(path, Path(tmp), None, profile, fns)
            tuned = cycles(path, Path(tmp), args.kcflags, profile, fns)
            print(f"\n{path} (profile {profile}): cycles, Kbuild's flags / with KCFLAGS")
            for fn in fns:
                row = "  ".join(f"{cell} {kbuild[fn][cell]}/{tuned[fn][cell]}" for cell in kbuild[fn])
                print(f"  {fn:8s} {row}")
            results.append({"file": str(path), "profile": profile, "kbuild": kbuild,
                            "with_kcflags": tuned})
    if saved is None:
        os.environ.pop("KCFLAGS", None)
    else:
        os.environ["KCFLAGS"] = saved
    args.out.write_text(json.dumps({
        "command": " ".join(["python", "bench/kbuild_flags.py"] + sys.argv[1:]),
        "kcflags": args.kcflags, "cells": "size:src:dst (memset: size:0:dst)",
        "results": results}, indent=1) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
