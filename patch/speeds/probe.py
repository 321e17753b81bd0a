"""The kernel's boot probe of misaligned access speed, run on a cost
profile: which of the two user copies a core of that profile would run.

Linux (arch/riscv/kernel/unaligned_access_speed.c, 6.10 and later) times,
on every hart at boot, a copy of misaligned doublewords against a copy of
bytes over the same misaligned buffers (dst one byte past a page, src
three bytes past the buffer's second half, 0x1f80 bytes), each warmed up
first and its best time kept; a hart is fast when the word copy takes
fewer cycles.  The static key that picks the fast user copy is on only
when every online hart is fast.  Here the same two copies
(templates/misaligned_probe.S.j2, written for copygen) run in the
emulator under the profile, warm, and the same comparison decides: so a
patch's tables show, for each core, the body that core would run.

Role: profile -> the probe's verdict.  May import gen (emission, resources,
toolchain), emu (api, timing.profile) and the standard library.
"""
from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path

from copygen.emu.api import Machine
from copygen.emu.timing.profile import Profile, load_profile
from copygen.gen import toolchain
from copygen.gen.emission.emit import env
from copygen.gen.resources import shim_dir

WORDS = 8                               # doublewords (or bytes) per round
REGS = ("a3", "a4", "a5", "a6", "a7", "t0", "t1", "t2")
BUFFER = 0x4000                         # the probe's buffer: four pages
COPY = BUFFER // 2 - 0x80               # bytes each copy moves
BASE = 0xFFFF_FFD8_0000_0000            # a kernel address for the buffer


@dataclass(frozen=True)
class Probe:
    profile: str
    words: int          # cycles of the misaligned doubleword copy
    bytes: int          # cycles of the byte copy
    fast: bool          # words < bytes: the probe's "fast"

    def verdict(self) -> str:
        return "fast" if self.fast else "slow"

    def ratio(self) -> float:
        """Byte copy over word copy, as the kernel's log line prints it."""
        return self.bytes / self.words


@functools.lru_cache(maxsize=1)
def _elf() -> Path:
    out = Path(tempfile.mkdtemp(prefix="copygen-probe-"))
    src = out / "misaligned_probe.S"
    src.write_text(env().get_template("misaligned_probe.S.j2").render(words=WORDS, regs=REGS))
    toolchain.assemble(src, shim_dir() / "include", out / "probe.o")
    toolchain.link([out / "probe.o"], shim_dir() / "copygen.ld", out / "probe.elf")
    return out / "probe.elf"


def _best(m: Machine, fn: str, dst: int, src: int) -> int:
    m.call(fn, dst, src, COPY)                  # warm-up, as the kernel's
    return m.call(fn, dst, src, COPY).cycles    # the model repeats itself once warm


@functools.lru_cache(maxsize=None)
def run(profile: str | Profile) -> Probe:
    """The probe's verdict for a core of `profile`."""
    prof = load_profile(profile) if isinstance(profile, str) else profile
    m = Machine.from_elf(_elf(), prof)
    m.map(BASE, BUFFER, user=False)
    dst = BASE + 1
    src = dst + BUFFER // 2 + 2
    words, byte = _best(m, "probe_words", dst, src), _best(m, "probe_bytes", dst, src)
    return Probe(prof.name, words, byte, words < byte)
