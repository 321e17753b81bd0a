"""One evaluation: build a variant and bench its routine.

`evaluate(job)` is a plain function of plain data, so it runs the same in
this process, a local worker process or a Dask worker: it writes the
variant's text under the cache directory, builds it there
(gen.build.build_cached: content-addressed), and benches the routine under
the workload (expected cycles per call, measure.rank) and on the size x
alignment grid (mean cycles per size and alignment class), and measures its
`.text` bytes and its share of `__ex_table` (measure.size).  The row names
the ELF benched and its SHA-256: the proof (tune.run) reads that file, so
what is proved is what was timed.
A kernel `.S` file (a baseline or guard) is assembled as it is, against
the shim's headers, and benched the same way.  A copy_user point with a
vector phase is benched through the kernel's dispatch (measure.dispatch):
its threshold is one of the knobs tuned, under the job's vector state (the
share of vector calls whose kernel vector section must save and restore
the user's dirty vector state).
Role: build + bench one point.  May import gen, emu, measure, copygen.errors.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

from copygen.emu.elf import read_elf
from copygen.emu.timing.profile import load_profile
from copygen.gen.build import build_assembly, build_cached, build_vector_section
from copygen.errors import CopygenError, Loc
from copygen.gen.front.validate import load_text
from copygen.gen.front.validate_phases import FILLS
from copygen.measure.bench import Bench, Case
from copygen.measure.dispatch import Dispatched, section_cost, section_cycles
from copygen.measure.rank import expected_cycles
from copygen.measure.size import routine_size
from copygen.measure.workload import make_workload

SYMBOL = {"copy_user": "__asm_copy_to_user", "clear_user": "__clear_user",
          "memcpy": "memcpy", "memset": "memset"}
GRID_SIZES = (8, 16, 32, 64, 72, 128, 256, 512, 1024, 2048, 4096, 8192)
# (src, dst) offsets standing for each alignment class (measure.bench.align_class)
GRID_PAIRS = {
    "copy": {"aligned": ((0, 0),), "co-aligned": ((1, 1), (4, 4)),
             "misaligned": ((1, 0), (3, 5), (0, 4), (7, 2))},
    # every dst offset its own class, as a kernel's clear or memset may
    # treat each differently (a 4-byte piece at dst+4, bytes at dst+1)
    "clear": {f"dst+{d}": ((0, d),) for d in range(8)},
}
# The file of a kernel tree that holds the routine a sweep tunes
KERNEL_FILE = {"copy_user": "uaccess.S", "clear_user": "uaccess.S",
               "memcpy": "memcpy.S", "memset": "memset.S"}


@dataclass(frozen=True)
class Job:
    code: str            # the key of the code the variant emits
    text: str            # the .copy text to build
    kind: str            # copy_user | clear_user | memcpy | memset
    profile: str
    workload: str
    align_mix: str
    cache: str           # the cache directory (variants and builds)
    assembly: str = ""   # a kernel .S file's name when `text` is its text, not a .copy's
    vector_dirty: float = 0.0   # share of vector calls with dirty user vector state


def _written(path: Path, text: str) -> Path:
    """`text` at `path` (content-addressed: an existing file is kept)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        tmp = path.with_suffix(f".tmp{id(text)}")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def _elf(job: Job, cache: Path) -> tuple[Path, Path]:
    """(the source benched, its linked ELF): a .copy variant built in the
    content-addressed cache, or a kernel .S assembled as it is."""
    if not job.assembly:
        src = _written(cache / "variants" / f"v{job.code[:16]}.copy", job.text)
        return src, build_cached(src, cache / "builds").elf
    src = _written(cache / "kernel" / job.code[:16] / job.assembly, job.text)
    elf = src.parent / "kernel.elf"
    return src, elf if elf.is_file() else build_assembly([src], src.parent, "kernel")


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _dispatched(job: Job, bench: Bench):
    """For a copy_user or clear_user point with a vector phase, the bench
    with the dispatch (measure.dispatch): from the point's threshold on,
    the vector routine and a vector section, clean or dirty in the job's
    share; else `bench` itself."""
    if job.kind not in ("copy_user", "clear_user") or job.assembly:
        return bench
    st = load_text(job.text)
    cu = st.copy_user if job.kind == "copy_user" else st.clear_user
    if cu is None or cu.vector is None:
        return bench
    if bench.machine.profile is None or bench.machine.profile.vector is None:
        raise CopygenError(f"profile {job.profile} has no [vector] section to time the vector path",
                           hint="tune a vector strategy with a vector profile (x60, x280): --profile")
    section = section_cycles(build_vector_section(Path(job.cache) / "vector_section"), job.profile)
    return Dispatched(bench, cu.vector.threshold, section_cost(section, job.vector_dirty),
                      SYMBOL[job.kind])


def evaluate(job: Job) -> dict:
    t0 = time.monotonic()
    src, elf = _elf(job, Path(job.cache))
    elf, sha = elf.resolve(), file_sha256(elf)
    symbol = SYMBOL[job.kind]
    if job.assembly and symbol not in read_elf(elf).symbols:
        raise CopygenError(f"{job.assembly} defines no {symbol}", Loc(job.assembly),
                           hint=f"a {job.kind} sweep needs a kernel file that defines {symbol}")
    wl = make_workload(job.workload, job.align_mix)
    bench = _dispatched(job, Bench(elf, load_profile(job.profile), max(max(GRID_SIZES), max(s for s, _ in wl.sizes))))
    exp = expected_cycles(bench, str(src), symbol, wl)
    grid = {}
    for cls, pairs in GRID_PAIRS["clear" if job.kind in FILLS else "copy"].items():
        grid[cls] = {str(n): sum(bench.run(Case(symbol, n, s, d)).cycles for s, d in pairs) / len(pairs)
                     for n in GRID_SIZES}
    size = routine_size(bench.machine.image, symbol)
    return {"code": job.code, "expected": exp.expected_cycles, "mean_size": exp.mean_size,
            "text_bytes": size.text_bytes, "extable_bytes": size.extable_bytes, "grid": grid,
            "seconds": round(time.monotonic() - t0, 3), "elf": str(elf), "elf_sha256": sha}
