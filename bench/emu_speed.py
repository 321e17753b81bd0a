"""Emulator speed: emulated instructions per second with the u74 cost model on,
against Unicorn running the same machine code with a Python per-instruction
hook doing the same accounting (issue #3, item 8).

Run from the repository root:

    python bench/emu_speed.py [--seconds 2] [--profile u74] [--json bench/results/emu_speed.json]

Workloads call `copy_words` (tests/emu/fixtures/copy_words.S, a 2021-shaped
copy_to_user) on 8 KiB co-aligned, 8 KiB misaligned (shift copy), and a mix
of small copies (0..128 bytes, random alignments).  The Unicorn run uses the
same `emu.cost.CostModel` (schedule of each instruction from a code hook,
cache/misalignment from a memory hook), so its cycle total is also a check of
ours.  Needs the riscv64-linux-gnu toolchain and the `unicorn` package.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "emu")]

from copygen import emu  # noqa: E402
from copygen.emu.cost import CostModel  # noqa: E402
from copygen.emu.decode import decode  # noqa: E402
from emu_build import build_elf  # noqa: E402

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
    instret = cycles = reps = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for dst, src, n in calls:
            r = m.call("copy_words", dst, src, n)
            instret += r.instret
            cycles += r.cycles
        reps += 1
    dt = time.perf_counter() - t0
    return {"instructions": instret, "seconds": dt, "mips": instret / dt / 1e6, "cycles_per_rep": cycles // reps}


class UnicornRun:
    """The same code under Unicorn, accounting through Python hooks."""

    def __init__(self, elf: Path, profile: str) -> None:
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
        self.cost = CostModel(emu.load_profile(profile))
        self.decoded: dict[int, object] = {}
        self.prev = None
        self.prev_next = 0
        self.instret = 0
        uc.hook_add(unicorn.UC_HOOK_CODE, self._on_code)
        uc.hook_add(unicorn.UC_HOOK_MEM_READ | unicorn.UC_HOOK_MEM_WRITE, self._on_mem)

    def _on_code(self, uc, addr, size, _):
        if self.prev is not None:
            self.cost.on_insn(self.prev, addr != self.prev_next)
        insn = self.decoded.get(addr)
        if insn is None:
            insn = self.decoded[addr] = decode(int.from_bytes(uc.mem_read(addr, size), "little"), addr)
        self.prev, self.prev_next = insn, addr + size
        self.instret += 1

    def _on_mem(self, uc, access, addr, size, value, _):
        self.cost.access(addr, size, int(access == self.uc_mod.UC_MEM_WRITE))

    def call(self, dst: int, src: int, n: int) -> tuple[int, int]:
        rc, uc = self.rc, self.uc
        for reg, v in ((rc.UC_RISCV_REG_A0, dst), (rc.UC_RISCV_REG_A1, src), (rc.UC_RISCV_REG_A2, n),
                       (rc.UC_RISCV_REG_RA, emu.RETURN_SENTINEL), (rc.UC_RISCV_REG_SP, emu.STACK_TOP)):
            uc.reg_write(reg, v)
        self.cost.reset()
        self.prev, start = None, self.instret
        uc.emu_start(self.entry, emu.RETURN_SENTINEL)
        self.cost.on_insn(self.prev, True)  # the final ret
        return self.instret - start, self.cost.cycles


def run_unicorn(elf: Path, profile: str, calls, seconds: float) -> dict:
    u = UnicornRun(elf, profile)
    for call in calls:
        u.call(*call)
    instret = cycles = reps = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for call in calls:
            n, c = u.call(*call)
            instret += n
            cycles += c
        reps += 1
    dt = time.perf_counter() - t0
    return {"instructions": instret, "seconds": dt, "mips": instret / dt / 1e6, "cycles_per_rep": cycles // reps}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="time per workload and engine")
    ap.add_argument("--profile", default="u74")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "emu_speed.json"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        elf = build_elf(Path(tmp), ["copy_words.S"], name="copy_words.elf")
        rows = []
        for name, calls in workloads(random.Random(42)).items():
            ours = run_ours(elf, args.profile, calls, args.seconds)
            uni = run_unicorn(elf, args.profile, calls, args.seconds)
            rows.append({"workload": name, "emu": ours, "unicorn_hook": uni,
                         "speedup": ours["mips"] / uni["mips"],
                         "cycles_agree": ours["cycles_per_rep"] == uni["cycles_per_rep"]})
            print(f"{name:22s} emu {ours['mips']:6.2f} M insn/s   unicorn+hook {uni['mips']:5.2f} M insn/s   "
                  f"x{rows[-1]['speedup']:5.1f}   cycles/rep {ours['cycles_per_rep']} vs {uni['cycles_per_rep']}")
    result = {"command": "python bench/emu_speed.py " + " ".join(argv or sys.argv[1:]),
              "profile": args.profile, "python": platform.python_version(), "machine": platform.machine(),
              "rows": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
