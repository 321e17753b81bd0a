"""Helpers of the emulator tests: build small RV64 ELFs from tests/emu/fixtures
(sources only are committed; binaries are built into pytest tmp dirs)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FIXTURES = Path(__file__).with_name("fixtures")
CROSS = "riscv64-linux-gnu-"
CFLAGS = ["-march=rv64gc", "-mabi=lp64d", "-mcmodel=medany", "-ffreestanding", "-fno-builtin",
          "-fno-pic", "-fno-asynchronous-unwind-tables", "-fno-stack-protector", "-nostdlib"]


def have_toolchain() -> bool:
    return all(shutil.which(CROSS + t) for t in ("gcc", "ld", "objdump"))


needs_toolchain = pytest.mark.skipif(not have_toolchain(), reason="riscv64-linux-gnu toolchain not installed")


def run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return proc.stdout


def build_elf(out_dir: Path, sources: list[str | Path], opt: str = "-O2", name: str = "t.elf",
              extra: list[str] | None = None) -> Path:
    """Compile fixture sources (names under fixtures/ or paths) and link with kernel.ld."""
    objs = []
    for i, src in enumerate(sources):
        src = Path(src) if Path(src).is_absolute() else FIXTURES / src
        obj = out_dir / f"{src.stem}.{i}.o"
        run([CROSS + "gcc", "-c", opt, *CFLAGS, *(extra or []), "-I", str(FIXTURES), "-o", str(obj), str(src)])
        objs.append(str(obj))
    elf = out_dir / name
    run([CROSS + "ld", "-T", str(FIXTURES / "kernel.ld"), "-o", str(elf), *objs])
    return elf


