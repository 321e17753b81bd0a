"""The vector oracle's experiment in copygen's emulator, and the qemu side's runner.

Role: build driver.c + tramp.S + cases.S for qemu-user and cases.S alone
(linked with tests/emu/fixtures/kernel.ld) for the emulator; run a case list
on both and return one comparable `Outcome` per case, as driver.c prints it.
The emulator side mirrors driver.c: arena and v0-v31 filled from the seed,
vl/vtype as `vsetvli zero, a2, e8, m1` leaves them, a fault is an oops whose
pc, address, registers and vector state are read after it.
Imports: emu, tests.oracle.emu_side (the LCG fill), the standard library.
"""

from __future__ import annotations

import subprocess
import zlib
from pathlib import Path
from typing import NamedTuple

from copygen import emu
from tests.oracle.emu_side import fill
from tests.oracle.vector.cases import ARENA, DATA, PAGE, assembly, bodies

HERE = Path(__file__).parent
KERNEL_LD = HERE.parent.parent / "emu" / "fixtures" / "kernel.ld"
CROSS = "riscv64-linux-gnu-"
ABI = ["-mabi=lp64d"]


class Outcome(NamedTuple):
    fault: int
    pc_offset: int
    addr: int
    vstart: int
    vl: int
    vtype: int
    t0: int
    a0: int
    a1: int
    a2: int
    crc_v: int
    crc_mem: int


def _run(cmd: list) -> None:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{proc.stderr}")


def build(out: Path) -> tuple[Path, Path]:
    """(qemu executable, emulator ELF) of the current case bodies."""
    src = out / "cases.S"
    src.write_text(assembly(bodies()))
    objs = {}
    for name, path, march in (("driver", HERE / "driver.c", "rv64gc"), ("tramp", HERE / "tramp.S", "rv64gcv"),
                              ("cases", src, "rv64gcv")):
        objs[name] = out / f"{name}.o"
        _run([CROSS + "gcc", "-c", "-O1", f"-march={march}", *ABI, "-o", objs[name], path])
    exe = out / "vdriver"
    _run([CROSS + "gcc", "-static", "-o", exe, *objs.values()])
    elf = out / "cases.elf"
    _run([CROSS + "ld", "-T", KERNEL_LD, "-o", elf, objs["cases"]])
    return exe, elf


def _line(case: tuple) -> str:
    k, *regs, seed = case
    return f"{k} " + " ".join(f"{r & ((1 << 64) - 1):x}" for r in regs) + f" {seed}\n"


def run_qemu(exe: Path, vlen: int, cases: list[tuple]) -> list[Outcome]:
    proc = subprocess.run(["qemu-riscv64", "-cpu", f"rv64,v=true,vlen={vlen},elen=64,vext_spec=v1.0",
                           str(exe), str(vlen // 8)], input="".join(map(_line, cases)),
                          capture_output=True, text=True, timeout=600)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == len(cases), (proc.returncode, proc.stderr[-500:], len(lines))
    return [Outcome(*(int(w, 16) for w in line.split()[1:])) for line in lines]


class EmuSide:
    """One machine per VLEN; `run(case)` mirrors driver.c's loop body."""

    def __init__(self, elf: Path, vlen: int) -> None:
        self.m = emu.Machine.from_elf(elf, vlen=vlen)
        self.m.map(DATA, ARENA, user=False)
        self.entry = [self.m.symbol(f"case_{k}") for k in range(len(bodies()))]

    def run(self, case: tuple) -> Outcome:
        k, a0, a1, a2, a3, a4, seed = case
        m, v = self.m, self.m.hart.v
        m.write(DATA, fill(seed)[:ARENA])
        v.regs[:] = fill(seed ^ 0x5A5A5A5A)[:len(v.regs)]
        v.vtype, v.vl, v.vstart = 0, min(a2 & ((1 << 64) - 1), v.vlenb), 0
        fault = pc = addr = 0
        try:
            m.call(self.entry[k], a0, a1, a2, a3, a4, vector_at_entry=True, step_limit=1000)
        except emu.Oops as e:
            fault, pc, addr = 1, e.pc - self.entry[k], e.addr
        x = m.hart.x
        return Outcome(fault, pc, addr, v.vstart, v.vl, v.vtype, x[5], x[10], x[11], x[12],
                       zlib.crc32(bytes(v.regs)), zlib.crc32(m.read(DATA, ARENA)))
