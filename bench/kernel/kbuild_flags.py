"""What the kernel's C flags cost the generated string.c, cell by cell.

    python -m bench.kernel.kbuild_flags [FILE.copy ...] [--kcflags=FLAGS] [--kernel-build DIR]
        [--out FILE]

(FLAGS begin with a dash, so give them with `=`: --kcflags=-fomit-frame-pointer.)

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

With --kernel-build DIR (a Kbuild output directory in which
arch/riscv/lib/string.o was built, e.g. ~/.cache/copygen/build/
linux-source-6.12 after `copygen patch --test kunit`), each strategy's
string.c is also compiled with that build's own command line
(arch/riscv/lib/.string.o.cmd) and the instructions compared with
copygen's string.o: `kbuild_same` in the JSON.

Default files: the examples with string functions in C.  Writes
bench/kernel/results/kbuild_flags.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402
from copygen.gen import toolchain  # noqa: E402
from copygen.gen.build import build_cached  # noqa: E402
from copygen.gen.front.validate import load_file  # noqa: E402
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


def instructions(obj: Path) -> list[str]:
    """Mnemonic and operands of every instruction of an object file."""
    text = toolchain.run("objdump", ["-d", "--no-show-raw-insn", obj]).stdout
    return [" ".join(line.split("\t")[1:]) for line in text.splitlines()
            if re.match(r"^\s+[0-9a-f]+:\t", line)]


def kbuild_compile(build: Path, src: Path, obj: Path) -> None:
    """src compiled with the command line Kbuild used for string.o in build."""
    saved = (build / "arch/riscv/lib/.string.o.cmd").read_text().splitlines()[0]
    argv = shlex.split(saved.split(":=", 1)[1])
    argv = [a for a in argv if not a.startswith("-Wp,-MMD")]
    at = argv.index("-o")
    argv[at + 1] = str(obj)
    argv[-1] = str(src)
    subprocess.run(argv, cwd=build, check=True, capture_output=True, text=True)


def same_as_kbuild(path: Path, cache: Path, build: Path) -> bool:
    os.environ.pop("KCFLAGS", None)
    res = build_cached(path, cache)
    ours = res.outdir / "string.o"
    theirs = cache / f"{res.outdir.name}-kbuild-string.o"
    kbuild_compile(build, res.outdir / "string.c", theirs)
    mine, kbuild = instructions(ours), instructions(theirs)
    return bool(mine) and mine == kbuild


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path, default=[Path(f) for f in FILES])
    ap.add_argument("--kcflags", default=DEFAULT_KCFLAGS,
                    help=f"the KCFLAGS to compare with (default: {DEFAULT_KCFLAGS})")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "kernel" / "results" / "kbuild_flags.json")
    ap.add_argument("--kernel-build", type=Path,
                    help="a Kbuild output directory with arch/riscv/lib/.string.o.cmd: compare "
                         "copygen's string.o with that command line's")
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
            entry = {"file": str(path), "profile": profile, "kbuild": kbuild,
                     "with_kcflags": tuned}
            if args.kernel_build:
                entry["kbuild_same"] = same_as_kbuild(path, Path(tmp),
                                                      args.kernel_build.expanduser())
                print(f"  string.o the same as with {args.kernel_build}'s own command line: "
                      f"{'yes' if entry['kbuild_same'] else 'NO'}")
            results.append(entry)
    if saved is None:
        os.environ.pop("KCFLAGS", None)
    else:
        os.environ["KCFLAGS"] = saved
    args.out.write_text(json.dumps({
        "command": " ".join(["python", "bench/kernel/kbuild_flags.py"] + sys.argv[1:]),
        "kcflags": args.kcflags, "cells": "size:src:dst (memset: size:0:dst)",
        "results": results}, indent=1) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
