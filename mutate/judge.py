"""Judging mutants under the qemu oracle (mutate.oracle): run each mutant and
the original side by side on the same cases and say which ones change
behaviour ("killed"), which survive ("equivalent"), and which survive only
because the oracle cannot see their clause ("blind": S2, A1 and B2 are
invisible to a user-mode harness); the kill-rate summary and its command
line (`copygen mutate`).

Role: judging.  May import mutate.edits, mutate.insns, mutate.oracle,
gen.toolchain (qemu-riscv64 runs through it, with a timeout), copygen.errors,
gen.resources and the standard library.
"""
from __future__ import annotations

import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from copygen.gen import toolchain
from copygen.errors import ToolError
from copygen.mutate.insns import routine_at
from copygen.gen.resources import shim_dir
from copygen.mutate import oracle as qemu
from copygen.mutate.edits import ORACLE_BLIND, Mutant, all_mutants, require_assembles

COPY_FNS, CLEAR_FNS = ("to", "from"), ("clear",)
ROUTINE_FNS = {"__asm_copy_to_user": COPY_FNS, "__asm_copy_from_user": COPY_FNS,
               "__clear_user": CLEAR_FNS}
PAGE, ARENA = 4096, 4 * 4096 + 16384          # as mutate/harness.c
USER_SIDE = {"to": "dst", "from": "src", "clear": "dst"}


def _sweep(fn: str, max_n: int = 200) -> list:
    """Every n in 0..max_n, dst offsets 0/1/7, src co-aligned or 3 bytes off,
    no fault; for copies the page after the source end (up to 7 bytes of
    slack, to keep the alignment) is inaccessible, so a read past the last
    aligned source word shows as a fault."""
    Case, out = qemu.Case, []
    for n in range(max_n + 1):
        for dalign in (0, 1, 7):
            for rel in (0, 3):
                want = (dalign + rel) % 8
                soff = 2 * PAGE - n - ((2 * PAGE - n - want) % 8)
                side = "src" if fn != "clear" else "none"
                out.append(Case(fn, 8 * 40 + dalign, soff, n, side,
                                2 * PAGE if side == "src" else 0, n * 7 + dalign + rel))
    return out


def _place(rng: random.Random, n: int, align: int) -> int:
    return align + 8 * rng.randrange(max(1, (ARENA - n - 8) // 8))


def _random_case(rng: random.Random, fn: str, i: int):
    """Category i % 3: 0 no fault; 1 a buffer ends exactly at an inaccessible
    page; 2 the user buffer faults at a random byte inside it, often in its
    first or last blocks (at its first byte, or before, one time in ten)."""
    n = rng.choice([rng.randrange(200), rng.randrange(200), rng.randrange(1200),
                    rng.randrange(9000)])
    user = USER_SIDE[fn]
    side = rng.choice(["dst", "src"]) if i % 3 == 1 and fn != "clear" else user
    d = n if i % 3 == 1 else rng.choice([rng.randrange(1, min(n, 80) + 1),   # first blocks
                                         n - rng.randrange(min(n, 160)),     # last blocks
                                         rng.randrange(1, n + 1)]) if n else 0
    if i % 3 == 2 and rng.random() < 0.1:
        d = -rng.randrange(8)      # the buffer starts on the inaccessible page
    if i % 3 == 0 or n == 0:
        side, at, off = "none", 0, _place(rng, n, rng.randrange(8))
    else:
        at = PAGE * max(1, -(-d // PAGE))
        off = at - d
    coin = rng.random()            # the other buffer: co-aligned, aligned or any
    other = _place(rng, n, off % 8 if coin < 0.4 else 0 if coin < 0.7 else rng.randrange(8))
    dst, src = (off, other) if side in ("dst", "none") else (other, off)
    return qemu.Case(fn, dst, src, n, side, at, rng.randrange(1 << 30))


def _fault_sweep(fn: str, sizes: tuple[int, ...] = (77, 200)) -> list:
    """A fault at every word boundary of a few sizes: the user buffer ends
    `d` bytes into an inaccessible page, for every d in 0..n (so every
    alignment and every word of the first and last blocks); the other
    buffer co-aligned, aligned, or 3 bytes off."""
    Case, out, user = qemu.Case, [], USER_SIDE[fn]
    for n in sizes:
        for d in range(n + 1):
            off = PAGE - d
            for other in ((off % 8), 0, (off + 3) % 8)[:1 if fn == "clear" else 3]:
                dst, src = (off, 8 * 300 + other) if user == "dst" else (8 * 300 + other, off)
                out.append(Case(fn, dst, src, n, user, PAGE, n + 3 * d + other))
    return out


def oracle_cases(fn: str, count: int = 400, seed: int = 0, sweep: bool = True) -> list:
    """The cases a mutant of routine `fn` (to | from | clear) is judged on:
    with `sweep`, the small-size sweep (for `to` and `clear`) and the fault
    sweep; then `count` random ones."""
    rng = random.Random(f"{seed}-{fn}")
    rnd = [_random_case(rng, fn, i) for i in range(count)]
    if not sweep:
        return rnd
    sizes = [] if fn == "from" else _sweep(fn, 100 if fn == "clear" else 200)
    return sizes + _fault_sweep(fn) + rnd


@dataclass(frozen=True)
class Run:
    """What the oracle saw: per-case results, or how the harness died."""
    results: tuple = ()
    died: str = ""                 # "" | "oops: ..." | "hang"


@dataclass(frozen=True)
class Verdict:
    mutant: Mutant
    status: str                    # killed | equivalent | blind | unassembled
    observed: tuple[str, ...]      # clauses seen violated (and "oops"), where it differs
    example: str = ""              # one case line that tells mutant and original apart


# a mutant's run is a hang past HANG_FACTOR times the original's time
# (at least HANG_MIN_S: qemu's start-up and a loaded machine)
HANG_FACTOR, HANG_MIN_S = 5, 3.0


@dataclass
class Bench:
    """A work directory with the harness compiled once, and the cases."""
    workdir: Path
    include_dir: Path
    cases: dict[str, list] = field(default_factory=dict)
    timeout: float = 30.0

    @property
    def harness_obj(self) -> Path:
        obj = self.workdir / "harness.o"
        if not obj.exists():
            toolchain.run("gcc", ["-O1", "-c", qemu.harness_source(), "-o", obj])
        return obj


def make_bench(workdir: Path, include_dir: Path | None = None, count: int = 400,
               seed: int = 0, sweep: bool = True) -> Bench:
    """A Bench in `workdir` with the cases of oracle_cases() for each routine."""
    fns = COPY_FNS + CLEAR_FNS
    # `from` has no sweep: twice the random cases instead
    return Bench(Path(workdir), Path(include_dir or shim_dir() / "include"),
                 {fn: oracle_cases(fn, count * (2 if fn == "from" else 1), seed, sweep)
                  for fn in fns})


def build_exe(bench: Bench, text: str, name: str) -> Path | None:
    """Assemble `text` and link it with the harness; None if it does not build."""
    src, obj, exe = (bench.workdir / f"{name}{ext}" for ext in (".S", ".o", ".exe"))
    src.write_text(text)
    try:
        toolchain.assemble(src, bench.include_dir, obj)
        toolchain.run("gcc", ["-static", "-o", exe, bench.harness_obj, obj])
    except ToolError:
        return None
    return exe


def run_exe(bench: Bench, exe: Path, cases: list) -> Run:
    """Feed cases to the harness under qemu-riscv64; a crash or a timeout is
    reported, not raised."""
    feed = "".join(c.line() + "\n" for c in cases)
    proc = toolchain.run_user(exe, [], feed, timeout=bench.timeout)
    if proc.returncode is None:
        return Run(died="hang")
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != len(cases):
        why = proc.stderr.strip().splitlines()
        return Run(died=f"oops: {why[-1] if why else f'exit {proc.returncode}'}")
    res = []
    for ln in lines:
        ret, s, p, r, h = ln.split()
        res.append(qemu.Result(int(ret), s == "1", p == "1", r == "1", h))
    return Run(tuple(res))


def fault_in_range(case) -> bool:
    """Is some byte of the buffer on the protected side inaccessible?"""
    if case.fault_side == "none":
        return False
    off = case.dst_off if case.fault_side == "dst" else case.src_off
    return case.fault_at < off + case.n      # inaccessible from fault_at on


def observed_clauses(case, got, ref) -> set[str]:
    """The clauses a differing result `got` breaks where the reference `ref` did not."""
    seen = {"S1"} if got.sum_at_exit and not ref.sum_at_exit else set()
    if got.ret > case.n:
        return seen | {"C2"}
    if not fault_in_range(case):
        if got.ret != 0 and case.fault_side != "none":
            seen.add("B1" if case.fault_side == "dst" else "B2")   # touched the page past it
        elif got.ret != 0 or not got.prefix_ok:
            seen.add("C1")
        if not got.rest_untouched:
            seen.add("B1" if got.ret == 0 else "C4")
    else:
        if not got.prefix_ok:
            seen.add("C3")
        if not got.rest_untouched and ref.rest_untouched:
            seen.add("C4")
        if got.ret == case.n != ref.ret:
            seen.add("C5")
        if got.ret != ref.ret and ref.rest_untouched:
            seen.add("C6")
    return seen or ({"C4"} if got != ref else set())


def _brief(r) -> str:
    return (f"ret {r.ret}, SUM {int(r.sum_at_exit)}, prefix_ok {int(r.prefix_ok)}, "
            f"rest_untouched {int(r.rest_untouched)}")


def compare(cases: list, got: Run, ref: Run) -> tuple[tuple[str, ...], str]:
    """(clauses seen, one telling case) of a mutant's run against the reference."""
    if got.died:
        return (("T1",) if got.died == "hang" else ("oops",)), got.died
    seen, example = set(), ""
    for case, g, r in zip(cases, got.results, ref.results):
        if g != r:
            seen |= observed_clauses(case, g, r)
            example = example or f"case `{case.line()}`: {_brief(g)}; original {_brief(r)}"
    return tuple(sorted(seen)), example


def fns_of(m: Mutant) -> tuple[str, ...]:
    """The harness routines a mutant can affect (by the routine of its site)."""
    return ROUTINE_FNS.get(routine_at(m.text, m.site - 1) or "", COPY_FNS + CLEAR_FNS)


def judge_one(bench: Bench, m: Mutant, ref: dict[str, Run], tag: str) -> Verdict:
    """Build one mutant (as files named `tag`) and judge it against `ref`."""
    seen, example = set(), ""
    try:
        exe = build_exe(bench, m.text, tag)
        if exe is None:
            return Verdict(m, "unassembled", (), "does not assemble or link")
        for fn in fns_of(m):
            s, e = compare(bench.cases[fn], run_exe(bench, exe, bench.cases[fn]), ref[fn])
            seen |= set(s)
            example = example or e
    finally:
        for ext in (".S", ".o", ".exe"):
            (bench.workdir / f"{tag}{ext}").unlink(missing_ok=True)
    if seen:
        return Verdict(m, "killed", tuple(sorted(seen)), example)
    blind = bool(m.expected_clauses) and set(m.expected_clauses) <= ORACLE_BLIND
    return Verdict(m, "blind" if blind else "equivalent", ())


def changes_behaviour(text: str, m: Mutant, bench: Bench | None = None) -> bool:
    """Does the oracle tell mutant `m` from the original `text`?"""
    return judge(text, [m], bench, workers=1)[0].status == "killed"


def reference(bench: Bench, text: str) -> dict[str, Run]:
    """The original's results on every case; it must build and not die."""
    exe = build_exe(bench, text, "original")
    assert exe is not None, "the original text does not assemble"
    t0 = time.monotonic()
    ref = {fn: run_exe(bench, exe, cases) for fn, cases in bench.cases.items()}
    for fn, r in ref.items():
        assert not r.died, f"the original died under the oracle ({fn}): {r.died}"
    # a mutant that loops forever is a hang once it takes far longer than
    # the original did on the same cases (per routine: the slowest one)
    slowest = (time.monotonic() - t0) / max(1, len(ref))
    bench.timeout = min(bench.timeout, max(HANG_MIN_S, HANG_FACTOR * slowest))
    return ref


def judge(text: str, mutants: list[Mutant], bench: Bench | None = None,
          workers: int = 2, tell=lambda stage, done, total: None) -> list[Verdict]:
    """Run each mutant beside the original under the qemu oracle: killed (its
    results differ somewhere), equivalent (survived), blind (survived, but its
    clause is one the oracle cannot see), or unassembled.  `tell(stage,
    done, total)` hears of the reference runs and of each mutant judged."""
    from concurrent.futures import ThreadPoolExecutor
    with tempfile.TemporaryDirectory(prefix="copygen-judge-") as d:
        bench = bench or make_bench(Path(d))
        tell("running the original on the oracle's cases", 0, len(mutants))
        ref = reference(bench, text)
        tell(f"judging {len(mutants)} mutants", 0, len(mutants))
        done = [0]

        def one(im):
            v = judge_one(bench, im[1], ref, f"m{im[0]}")
            done[0] += 1
            tell(f"judging {len(mutants)} mutants", done[0], len(mutants))
            return v
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            return list(pool.map(one, enumerate(mutants)))
        finally:
            # stopped (SIGTERM, Ctrl-C): the mutants not begun are dropped,
            # not judged before the command may end
            pool.shutdown(wait=True, cancel_futures=True)


# --------------------------------------------------------------------------
# Reporting


def clause_hit(v: Verdict) -> bool:
    """Did the oracle see one of the clauses the mutant was expected to break?
    (An oops stands for C2: the routine never returned a count.)"""
    seen = set(v.observed) | ({"C2"} if "oops" in v.observed else set())
    return bool(seen & set(v.mutant.expected_clauses))


def summary(verdicts: list[Verdict]) -> dict[str, dict]:
    """Per kind: counts by status, the oracle kill rate (killed over killed +
    equivalent; blind and unassembled ones left out) and how many killed
    mutants showed an expected clause."""
    out: dict[str, dict] = {}
    for v in verdicts:
        row = out.setdefault(v.mutant.kind, {"mutants": 0, "killed": 0, "equivalent": 0,
                                             "blind": 0, "unassembled": 0,
                                             "expected_clause_seen": 0})
        row["mutants"] += 1
        row[v.status] += 1
        row["expected_clause_seen"] += v.status == "killed" and clause_hit(v)
    for row in out.values():
        judged = row["killed"] + row["equivalent"]
        row["kill_rate"] = round(row["killed"] / judged, 3) if judged else None
    return out


def kill_table(path: Path, kinds: list[str] | None, include_dir: Path | None = None,
               count: int = 400, workers: int = 2,
               tell=lambda stage, done, total: None) -> tuple[dict, list[Verdict]]:
    """Every mutant of the .S file at `path` judged on `count` random cases
    per routine: (summary() per kind, the verdicts)."""
    require_assembles(Path(path), include_dir)
    text = Path(path).read_text()
    with tempfile.TemporaryDirectory(prefix="copygen-judge-") as d:
        bench = make_bench(Path(d), include_dir, count)
        verdicts = judge(text, all_mutants(text, kinds), bench, workers, tell)
    return summary(verdicts), verdicts
