"""The evidence a patch carries: proofs and modelled cycles, before and after.

Each state of the file (the tree's own, and each patched one) is assembled
against copygen's shim as a tree without CONFIG_RISCV_ISA_V assembles it
(gen.build.shim_elf) and linked into an ELF.  Its entry points that
reach a replaced body are proved with the full contract (verify.checks.prove,
through the proof cache: the same code is never proved twice), and its
copy_to_user / clear_user are benched under each cost profile on a size x
alignment-class grid (measure.bench; every call's result is checked).

A string change is proved and benched from the objects Kbuild compiled
with the kernel's own flags (kernel.kbuild), linked with the shim's script.

A vector change (uaccess_vector.S and the threshold) is benched as a
kernel with V runs copy_to_user (measure_vector): below the threshold the
tree's scalar copy, from it on the vector loop inside a clean kernel
vector section, under each vector profile at its VLEN.

Role: ELFs, proofs and benches for the patch.  May import verify, measure,
emu.timing.profile, gen (build, toolchain, resources), copygen.errors and the
standard library.
A board's measurements (measure.measured) give the cells it measured of
both states, kept apart from the modelled ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from copygen.emu.timing.profile import Profile, available, load_profile
from copygen.errors import CopygenError
from copygen.gen import toolchain
from copygen.gen.build import build_vector_section, shim_elf
from copygen.gen.resources import shim_dir
from copygen.measure import measured
from copygen.measure.bench import Bench, Case
from copygen.measure.dispatch import COPY, VECTOR, section_cycles
from copygen.verify.solver.cache import ProofCache, prove_cached
from copygen.verify.contract.inputs import routines
from copygen.verify.contract.verdict import verdict
from copygen.verify.contract.rules import RegisterRules

SIZES = (8, 16, 32, 64, 128, 256, 1024, 4096, 8192)
# (src, dst) offsets from a page boundary standing for each alignment class
COPY_PAIRS = {"aligned": ((0, 0),), "misaligned": ((1, 0), (3, 5), (0, 4), (7, 2))}
FILL_PAIRS = {"aligned": ((0, 0),), "misaligned": ((0, 1), (0, 5))}
# the routines benched for each strategy block (symbol, name in the table,
# alignment classes), and the verifier kinds of the entry points that
# reach its body
BENCHED = {"copy_user": (("__asm_copy_to_user", "copy_to_user", COPY_PAIRS),),
           "clear_user": (("__clear_user", "clear_user", FILL_PAIRS),),
           "string": (("memcpy", "memcpy", COPY_PAIRS), ("memmove", "memmove", COPY_PAIRS),
                      ("memset", "memset", FILL_PAIRS))}
ENTRY_KINDS = {"copy_user": ("to", "from"), "clear_user": ("clear",),
               "string": ("memcpy", "memmove", "memset")}


@dataclass(frozen=True)
class Proof:
    """One entry point of one state of the file, as the verifier left it."""

    symbol: str
    kind: str            # the strategy block it reaches: copy_user | clear_user
    verdict: str         # verify.contract.verdict: proved | violated | unknown | unanalysable
    status: dict
    detail: dict
    seconds: float


@dataclass(frozen=True)
class Row:
    """Mean modelled cycles of one routine, size and alignment class."""

    profile: str
    routine: str         # copy_to_user | clear_user | memcpy | memmove | memset
    size: int
    align: str
    before: float
    after: float


@dataclass
class State:
    """One version of uaccess.S, built."""

    name: str
    path: Path
    elf: Path
    label: str = ""      # how progress names it: before (base tree), after (patched: ...)
    proofs: dict[str, list[Proof]] = field(default_factory=dict)   # kind -> entry points
    skipped: list[str] = field(default_factory=list)               # entry points left out


def linked(name: str, objects: list[Path], workdir: Path, label: str = "") -> State:
    """Objects (Kbuild's, of a string change) linked into one ELF."""
    d = Path(workdir) / name
    d.mkdir(parents=True, exist_ok=True)
    elf = d / f"{name}.elf"
    toolchain.link(list(objects), shim_dir() / "copygen.ld", elf)
    return State(name, Path(objects[0]), elf, label or name)


def build(name: str, text: str, workdir: Path, label: str = "") -> State:
    """Write `text` as WORKDIR/NAME/uaccess.S and link it with the shim."""
    d = Path(workdir) / name
    d.mkdir(parents=True, exist_ok=True)
    src = d / "uaccess.S"
    src.write_text(text)
    return State(name, src, shim_elf(src, d), label or name)


def prove(state: State, kinds: tuple[str, ...], cache: ProofCache | None, jobs: int,
          only: frozenset[str] | None = None, tell=lambda msg: None,
          rules: RegisterRules | None = None) -> None:
    """Prove every entry point of `state` that reaches a body of `kinds`
    (those in `only`, when given), under the tree's register `rules`
    (clause R1, patch.rules) when it has some."""
    present = routines(state.elf)
    for kind in kinds:
        state.proofs[kind] = []
        for sym, vkind in present:
            if vkind not in ENTRY_KINDS[kind]:
                continue
            if only is not None and sym not in only:
                state.skipped.append(sym)
                continue
            tell(f"proving {sym}, {state.label}")
            rep = prove_cached(state.elf, sym, vkind, cache, jobs=jobs, rules=rules or None)
            state.proofs[kind].append(Proof(sym, kind, verdict(rep), dict(rep.status),
                                            dict(rep.detail), rep.seconds))


def _cycles(elf: Path, profile: Profile, sym: str, pairs, sizes) -> dict[tuple[int, str], float]:
    bench = Bench(elf, profile, max(sizes))
    out = {}
    for n in sizes:
        for cls, offsets in pairs.items():
            runs = [bench.run(Case(sym, n, s, d)).cycles for s, d in offsets]
            out[n, cls] = sum(runs) / len(runs)
    return out


def measure(before: State, after: State, kinds: tuple[str, ...], profiles: list[Profile],
            sizes=SIZES, tell=lambda msg: None) -> list[Row]:
    """Modelled cycles of each kind's routines in both states, per profile."""
    rows = []
    for prof in profiles:
        for kind in kinds:
            for sym, name, pairs in BENCHED[kind]:
                tell(f"benching {name} under {prof.name}, before and after")
                old = _cycles(before.elf, prof, sym, pairs, sizes)
                new = _cycles(after.elf, prof, sym, pairs, sizes)
                rows += [Row(prof.name, name, n, cls, old[n, cls], new[n, cls]) for n, cls in old]
    return rows


# the tree's file each benched routine comes from, as a board run names it
TREE_SOURCE = {"__asm_copy_to_user": "uaccess.S", "__clear_user": "uaccess.S", "memcpy": "memcpy.S",
               "memmove": "memmove.S", "memset": "memset.S"}


def board_rows(files: tuple[str, ...], source: str, kinds: tuple[str, ...],
               sizes=SIZES) -> tuple[list[Row], str]:
    """The cells a board measured of both the tree's routines (their .S
    file) and the generated ones (`source`, the .copy), as Rows whose
    profile is "measured"; and where they were measured.  A cell is there
    only when every offset pair of its class was measured in both."""
    if not files:
        return [], ""
    after = measured.load(list(files), source)
    rows, used = [], [after]
    for kind in kinds:
        for sym, name, pairs in BENCHED[kind]:
            before = measured.load(list(files), TREE_SOURCE[sym])
            used.append(before)
            for n in sizes:
                for cls, offsets in pairs.items():
                    old = measured.class_mean(before, sym, n, offsets)
                    new = measured.class_mean(after, sym, n, offsets)
                    if old is not None and new is not None:
                        rows.append(Row("measured", name, n, cls, old, new))
    where = "; ".join(dict.fromkeys(c.provenance() for c in used if c.tables))
    return rows, where


# the sizes of a vector change's table: the scalar side of the default
# threshold, the vector path from it on; the thresholds themselves are added
VECTOR_SIZES = (256, 512, 1024, 2048, 4096, 8192)


@dataclass(frozen=True)
class VectorBench:
    """What a vector change's table rests on, beside its rows."""

    thresholds: tuple[int, int]        # RISCV_ISA_V_UCOPY_THRESHOLD before, after
    section: dict[str, int]            # profile -> cycles of a clean kernel vector section
    vlen: dict[str, int]               # profile -> the VLEN it times


def vector_profiles(names: tuple[str, ...]) -> list[Profile]:
    """The profiles of a vector change's table: those named, each of which
    must time vector code, else every profile that does (x60, x280)."""
    if not names:
        return [p for p in (load_profile(n) for n in available()) if p.vector is not None]
    out = [load_profile(n) for n in names]
    bad = [p.name for p in out if p.vector is None]
    if bad:
        with_v = [n for n in available() if load_profile(n).vector is not None]
        raise CopygenError(f"--profile {', '.join(bad)}: no [vector] section, so no timing of "
                           "the vector loop", hint=f"the vector patch's table takes the vector "
                                                  f"profiles: {', '.join(with_v)}")
    return out


def _dispatched(scalar: Bench, vector: Bench, threshold: int, section: int, n: int,
                offsets) -> float:
    """Mean cycles of copy_to_user of n bytes over `offsets` as a kernel
    with V runs it: the scalar copy below `threshold`, from it on the
    vector loop and the section around it."""
    if n < threshold:
        runs = [scalar.run(Case(COPY, n, s, d)).cycles for s, d in offsets]
    else:
        runs = [vector.run(Case(VECTOR, n, s, d)).cycles + section for s, d in offsets]
    return sum(runs) / len(runs)


def measure_vector(scalar: State, before: State, after: State, thresholds: tuple[int, int],
                   profiles: list[Profile], workdir: Path, sizes=VECTOR_SIZES,
                   tell=lambda msg: None) -> tuple[list[Row], VectorBench]:
    """copy_to_user before and after a vector change, per vector profile:
    `scalar` is the tree's uaccess.S (the same in both), `before` and
    `after` its uaccess_vector.S, each with its threshold."""
    sizes = sorted(set(sizes) | set(thresholds))
    section_elf = build_vector_section(Path(workdir) / "vector_section")
    rows, sections, vlens = [], {}, {}
    for prof in profiles:
        tell(f"benching copy_to_user with V under {prof.name} (VLEN {prof.vector.vlen}), "
             "before and after")
        sections[prof.name] = section_cycles(section_elf, prof)["clean"]
        vlens[prof.name] = prof.vector.vlen
        top = max(sizes)
        sb = Bench(scalar.elf, prof, top)
        old, new = Bench(before.elf, prof, top), Bench(after.elf, prof, top)
        for n in sizes:
            for cls, offsets in COPY_PAIRS.items():
                rows.append(Row(prof.name, "copy_to_user", n, cls,
                                _dispatched(sb, old, thresholds[0], sections[prof.name], n, offsets),
                                _dispatched(sb, new, thresholds[1], sections[prof.name], n, offsets)))
    return rows, VectorBench(thresholds, sections, vlens)
