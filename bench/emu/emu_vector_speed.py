"""Emulator speed on vector code: the strip-mined e8/m8 copy loop of
tests/emu/fixtures/vector_copy.S (the kernel's vector usercopy shape) at
VLEN 128, 256, 512 and 1024, on the reference step and on the fast path
(which hands vector instructions to the reference step and translates the
scalar rest), with no cost profile (vector timing is not modelled yet).

Run from the repository root:

    python -m bench.emu.emu_vector_speed [--seconds 1] [--size 8192]
                                     [--json bench/emu/results/emu_vector_speed.json]

Reports emulated instructions per second and copied bytes per second.  Needs
the riscv64-linux-gnu toolchain.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from bench.exits import exit_status  # noqa: E402
from copygen import emu  # noqa: E402
from tests.emu.emu_build import build_elf  # noqa: E402

USER, KERN, PAGES = 0x1000_0000, 0x7000_0000, 8
VLENS = (128, 256, 512, 1024)


def measure(elf: Path, vlen: int, size: int, fast: bool, seconds: float) -> dict:
    m = emu.Machine.from_elf(elf, vlen=vlen)
    m.map(USER, PAGES * 4096, user=True)
    m.map(KERN, PAGES * 4096, user=False)
    m.write(KERN, random.Random(0).randbytes(PAGES * 4096))
    m.call("vcopy_user", USER, KERN, size, vector_at_entry=True, fast=fast)   # warm up
    instret = reps = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        r = m.call("vcopy_user", USER, KERN, size, vector_at_entry=True, fast=fast)
        assert r.ret == 0, "the copy must complete"
        instret += r.instret
        reps += 1
    dt = time.perf_counter() - t0
    assert m.read(USER, size) == m.read(KERN, size)
    return {"instructions": instret, "calls": reps, "seconds": dt, "insn_per_s": instret / dt,
            "bytes_per_s": reps * size / dt}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="time per VLEN and path")
    ap.add_argument("--size", type=int, default=8192, help="bytes per copy (at most 32768)")
    ap.add_argument("--json", default=str(ROOT / "bench" / "emu" / "results" / "emu_vector_speed.json"))
    args = ap.parse_args(argv)
    if not 0 < args.size <= PAGES * 4096 or args.seconds <= 0:
        print("error: --size must be in 1..32768 and --seconds positive", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        elf = build_elf(Path(tmp), ["vector_copy.S"], name="vcopy.elf", extra=["-march=rv64gcv"])
        for vlen in VLENS:
            row = {"vlen": vlen, "size": args.size}
            for path, fast in (("reference", False), ("fast", True)):
                row[path] = measure(elf, vlen, args.size, fast, args.seconds)
            rows.append(row)
            ref, fst = row["reference"], row["fast"]
            print(f"VLEN {vlen:4d}: reference {ref['insn_per_s'] / 1e3:7.1f} k insn/s "
                  f"{ref['bytes_per_s'] / 1e6:6.2f} MB/s | fast {fst['insn_per_s'] / 1e3:7.1f} k insn/s "
                  f"{fst['bytes_per_s'] / 1e6:6.2f} MB/s")
    out = {"command": "python -m bench.emu.emu_vector_speed " + " ".join(argv if argv is not None else sys.argv[1:]),
           "python": platform.python_version(), "machine": platform.machine(), "rows": rows}
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
