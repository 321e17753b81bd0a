"""ISA cross-tests: small C programs (fixtures/isa_progs.c) compiled at -O0,
-O2 and -Os, run in the emulator (fast path and reference step) and under
qemu-riscv64 as a static Linux program; results must be equal."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from copygen import emu
from emu_build import CFLAGS, CROSS, FIXTURES, build_elf, needs_toolchain, run

M64 = (1 << 64) - 1
CASES = [
    ("checksum", 5, 100), ("checksum", 0x1234, 1024), ("checksum", 7, 0), ("checksum", 99, 3),
    ("sort_hash", 3, 60), ("sort_hash", 11, 96), ("sort_hash", 1, 1), ("sort_hash", 42, 2),
    ("squeeze", 1234, 50), ("squeeze", M64, 17), ("squeeze", 0, 1),
    ("widths", 9, 5), ("widths", 77, 1),
] + [("muldiv", a, b) for a, b in [
    (1 << 63, M64), (M64, M64), (0, 0), (5, 0), (1 << 63, 0), (0x80000000, 0xFFFFFFFF),
    (0xFFFFFFFF80000000, 0xFFFFFFFFFFFFFFFF), (123456789123, 1000), (M64 - 6, 7), (7, M64 - 6),
    (0xDEADBEEFCAFEBABE, 0x0123456789ABCDEF), (1, 1 << 32), (0x7FFFFFFF, 0x80000000),
]]

needs_qemu = pytest.mark.skipif(shutil.which("qemu-riscv64") is None, reason="qemu-riscv64 not installed")


def qemu_results(build_dir: Path, opt: str) -> dict[tuple[str, int, int], int]:
    obj = build_dir / f"progs{opt}.qemu.o"
    exe = build_dir / f"isa{opt}"
    run([CROSS + "gcc", "-c", opt, *CFLAGS, "-o", str(obj), str(FIXTURES / "isa_progs.c")])
    run([CROSS + "gcc", "-static", "-no-pie", "-O2", "-o", str(exe), str(FIXTURES / "isa_main.c"), str(obj)])
    stdin = "".join(f"{n} {a:x} {b:x}\n" for n, a, b in CASES)
    out = subprocess.run(["qemu-riscv64", str(exe)], input=stdin, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    results = {}
    for line in out.splitlines():
        name, a, b, r = line.split()
        results[(name, int(a, 16), int(b, 16))] = int(r, 16)
    assert len(results) == len(CASES)
    return results


@needs_toolchain
@needs_qemu
@pytest.mark.parametrize("opt", ["-O0", "-O2", "-Os"])
def test_programs_match_qemu(build_dir, opt):
    expected = qemu_results(build_dir, opt)
    elf = build_elf(build_dir, ["isa_progs.c"], opt=opt, name=f"progs{opt}.elf")
    for fast in (True, False):
        m = emu.Machine.from_elf(elf, profile="u74", stack_size=8 * 4096)
        for name, a, b in CASES:
            r = m.call(name, a, b, step_limit=5_000_000, fast=fast)
            assert r.ret == expected[(name, a, b)], (name, a, b, opt, fast)
            assert r.callee_saved_ok and not r.faults
