"""Emulator speed: emulated instructions per second with a cost model on, per
profile, against two Unicorn baselines running the same machine code: one
with a Python hook that only counts instructions, one with hooks that run our
cost model (issue #3 item 8, issue #20 item 4).

Run from the repository root:

    python -m bench.emu.emu_speed [--seconds 2] [--profiles u74,x60,c910,c920,p550]
                              [--json bench/emu/results/emu_speed.json]

Workloads call `copy_words` (tests/emu/fixtures/copy_words.S, a 2021-shaped
copy_to_user) on 8 KiB co-aligned, 8 KiB misaligned (shift copy), and a mix
of small copies (0..128 bytes, random alignments).  The Unicorn run with the
cost model feeds the profile's engine (emu.timing.cost.CostModel or
emu.timing.ooo.OooCostModel) from a code hook and a memory hook, so its cycle total
is also a check of ours.  Needs the riscv64-linux-gnu toolchain and the
`unicorn` package (pip install copygen[bench]).
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
from copygen.emu.api import _cost_model  # noqa: E402
from copygen.emu.insn.decode import decode  # noqa: E402
from tests.emu.emu_build import build_elf  # noqa: E402

USER, KERN, PAGES = 0x1000_0000, 0x7000_0000, 8


def workloads(rng: random.Random) -> dict[str, list[tuple[int, int, int]]]:
    """name -> list of (dst, src, n) calls (copy_to_user: kernel src, user dst)."""
    small = [(USER + rng.randrange(8), KERN + rng.randrange(8), rng.randrange(129)) for _ in range(200)]
    return {"8KiB aligned": [(USER, KERN, 8192)], "8KiB misaligned src": [(USER, KERN + 1, 8192)],
            "small mix 0..128": small}


def run_ours(elf: Path, profile: str, calls, seconds: float) -> dict:
    m = emu.Machine.from_elf(elf, profile=profile)
    m.map(USER, PAGES * 4096, user=True)
    m.map(KERN, PAGES * 4096, user=False)
    m.write(KERN, random.Random(0).randbytes(PAGES * 4096))
    for dst, src, n in calls:  # warm up: translation, cost memo, cache
        m.call("copy_words", dst, src, n)
    instret = reps = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        cycles = 0  # of the last repetition: a predictor may still be learning in the first
        for dst, src, n in calls:
            r = m.call("copy_words", dst, src, n)
            instret += r.instret
            cycles += r.cycles
        reps += 1
    dt = time.perf_counter() - t0
    return {"instructions": instret, "seconds": dt, "mips": instret / dt / 1e6, "cycles_per_rep": cycles}


class UnicornRun:
    """The same code under Unicorn, accounting through Python hooks
    (`profile` None: a hook that only counts instructions)."""

    def __init__(self, elf: Path, profile: str | None) -> None:
        import unicorn
        from unicorn import riscv_const as rc

        self.uc_mod, self.rc = unicorn, rc
        image = emu.Machine.from_elf(elf).image
        uc = self.uc = unicorn.Uc(unicorn.UC_ARCH_RISCV, unicorn.UC_MODE_RISCV64)
        for seg in image.segments:
            base = seg.vaddr & ~0xFFF
            size = (seg.vaddr + seg.memsz - base + 0xFFF) & ~0xFFF
            uc.mem_map(base, size)
            uc.mem_write(seg.vaddr, seg.data)
        uc.mem_map(USER, PAGES * 4096)
        uc.mem_map(KERN, PAGES * 4096)
        uc.mem_write(KERN, random.Random(0).randbytes(PAGES * 4096))
        uc.mem_map(emu.STACK_TOP - 16384, 16384)
        uc.mem_map(emu.RETURN_SENTINEL, 4096)  # Unicorn fetches at `until` before stopping
        self.entry = image.symbols["copy_words"]
        self.cost = _cost_model(emu.load_profile(profile)) if profile else None
        if self.cost is not None and self.cost.kind == "ooo":
            self.cost.hart = self  # the predictor reads `pc`: the previous instruction's
        self.decoded: dict[int, object] = {}
        self.prev = None
        self.prev_next = self.pc = 0
        self.instret = 0
        if self.cost is None:
            uc.hook_add(unicorn.UC_HOOK_CODE, self._count)
            return
        uc.hook_add(unicorn.UC_HOOK_CODE, self._on_code)
        uc.hook_add(unicorn.UC_HOOK_MEM_READ | unicorn.UC_HOOK_MEM_WRITE, self._on_mem)

    def _count(self, uc, addr, size, _):
        self.instret += 1

    def _on_code(self, uc, addr, size, _):
        if self.prev is not None:
            self.cost.on_insn(self.prev, addr != self.prev_next)
        insn = self.decoded.get(addr)
        if insn is None:
            insn = self.decoded[addr] = decode(int.from_bytes(uc.mem_read(addr, size), "little"), addr)
        self.prev, self.prev_next, self.pc = insn, addr + size, addr
        self.instret += 1

    def _on_mem(self, uc, access, addr, size, value, _):
        self.cost.access(addr, size, int(access == self.uc_mod.UC_MEM_WRITE))

    def call(self, dst: int, src: int, n: int) -> tuple[int, int]:
        rc, uc = self.rc, self.uc
        for reg, v in ((rc.UC_RISCV_REG_A0, dst), (rc.UC_RISCV_REG_A1, src), (rc.UC_RISCV_REG_A2, n),
                       (rc.UC_RISCV_REG_RA, emu.RETURN_SENTINEL), (rc.UC_RISCV_REG_SP, emu.STACK_TOP)):
            uc.reg_write(reg, v)
        self.prev, start = None, self.instret
        if self.cost is None:
            uc.emu_start(self.entry, emu.RETURN_SENTINEL)
            return self.instret - start, 0
        self.cost.reset()
        uc.emu_start(self.entry, emu.RETURN_SENTINEL)
        self.cost.on_insn(self.prev, True)  # the final ret
        return self.instret - start, self.cost.cycles


def run_unicorn(elf: Path, profile: str | None, calls, seconds: float) -> dict:
    u = UnicornRun(elf, profile)
    for call in calls:
        u.call(*call)
    instret = reps = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        cycles = 0
        for call in calls:
            n, c = u.call(*call)
            instret += n
            cycles += c
        reps += 1
    dt = time.perf_counter() - t0
    return {"instructions": instret, "seconds": dt, "mips": instret / dt / 1e6, "cycles_per_rep": cycles}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="time per workload and engine")
    ap.add_argument("--profiles", default="u74,x60,c910,c920,p550")
    ap.add_argument("--json", default=str(ROOT / "bench" / "emu" / "results" / "emu_speed.json"))
    args = ap.parse_args(argv)
    profiles = args.profiles.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        elf = build_elf(Path(tmp), ["copy_words.S"], name="copy_words.elf")
        rows = []
        for name, calls in workloads(random.Random(42)).items():
            count = run_unicorn(elf, None, calls, args.seconds)
            print(f"{name:22s} unicorn, counting hook only: {count['mips']:6.2f} M insn/s")
            for profile in profiles:
                rows.append(_row(elf, name, calls, profile, count, args.seconds))
    result = {"command": "python -m bench.emu.emu_speed " + " ".join(argv or sys.argv[1:]),
              "profiles": profiles, "python": platform.python_version(), "machine": platform.machine(),
              "rows": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


def _row(elf: Path, name: str, calls, profile: str, count: dict, seconds: float) -> dict:
    ours = run_ours(elf, profile, calls, seconds)
    uni = run_unicorn(elf, profile, calls, seconds)
    row = {"workload": name, "profile": profile, "emu": ours, "unicorn_hook": uni,
           "unicorn_count_only": count, "speedup": ours["mips"] / uni["mips"],
           "cycles_agree": ours["cycles_per_rep"] == uni["cycles_per_rep"]}
    print(f"{name:22s} {profile:5s} emu {ours['mips']:6.2f} M insn/s   unicorn+cost {uni['mips']:5.2f}   "
          f"x{row['speedup']:5.1f}   cycles/rep {ours['cycles_per_rep']} vs {uni['cycles_per_rep']}")
    return row


if __name__ == "__main__":
    sys.exit(exit_status(main))
