"""Sample runs for guessing loop invariants: the scenarios (sizes,
alignments, overlaps, fault points) a routine kind is run on, and the
loop-head states the emulator records in them.

Role: `samples`, `scenario`, `collect`, `smallest_hang`.  May import
verify.invariants.concrete, verify.contract.clauses, emu.
"""
from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import replace

from copygen.verify.contract.clauses import OVERLAP_KINDS, STRING_KINDS
from copygen.verify.invariants.concrete import PAGE, Scenario, run, verdicts

SIZES = list(range(0, 40)) + [47, 55, 63, 64, 65, 70, 71, 72, 73, 79, 80, 95, 96, 127, 128,
                              129, 135, 136, 143, 150, 191, 192, 200, 255, 256, 257, 300,
                              383, 384, 500, 513, 700, 1000, 2000]


def scenario(kind: str, n: int, doff: int, soff: int, rng: random.Random,
             F: int | None = None) -> Scenario:
    # user buffers low, kernel buffers high; dst and src in separate 64 GiB areas
    user, kern = (0x0040_0000_0000, 0x0050_0000_0000), (0xFFFF_FFD0_0000_0000, 0xFFFF_FFE0_0000_0000)
    dbase = (user if kind in ("to", "clear") else kern)[0] + rng.randrange(1, 1 << 16) * (1 << 20)
    sbase = (user if kind == "from" else kern)[1] + rng.randrange(1, 1 << 16) * (1 << 20)
    D, S = dbase + doff, sbase + soff
    if kind in OVERLAP_KINDS:
        S = D + (rng.randrange(-n - 16, n + 16) if n else 64)
    src = _distinct_at(abs(S - D), n, rng) if kind in OVERLAP_KINDS else \
        bytes(rng.randrange(128) for _ in range(n))
    dst0 = bytes(rng.randrange(128, 256) for _ in range(n))
    # memset's c: only its low byte counts, the rest must be ignored
    c = (rng.randrange(1 << 16) << 8) | rng.randrange(1, 128)
    return Scenario(kind, D, S, n, src, dst0, C=c, F=F)


# sizes of the runs that fault (a copy to or from user memory): a fault in
# the head, the byte loop, a block, the tail
FAULT_SIZES = [1, 5, 9, 40, 70, 71, 72, 100, 129, 200, 257, 300, 513, 1000, 2000]


def _distinct_at(delta: int, n: int, rng: random.Random) -> bytes:
    """n random source bytes, each unlike the one delta before it: where
    memmove's buffers overlap, a byte stored always differs from the one it
    overwrites, so the written part of dst can be told from the rest."""
    out = bytearray()
    for i in range(n):
        b = rng.randrange(128)
        while delta and i >= delta and b == out[i - delta]:
            b = rng.randrange(128)
        out.append(b)
    return bytes(out)


def samples(kind: str, seed: int = 1) -> list[Scenario]:
    rng = random.Random(seed)
    out = []
    for n in SIZES:
        # dst aligned in one of them: the commonest call, and the one that
        # reaches a word loop with the fewest bytes
        pairs = [(0, rng.randrange(8))] + [(rng.randrange(8), rng.randrange(8))
                                           for _ in range(3 if n < 300 else 1)]
        out += [scenario(kind, n, d, s, rng) for d, s in pairs]
    if kind in ("to", "from", "clear"):
        out += [faulting(kind, n, rng) for n in FAULT_SIZES for _ in range(3)]
    if kind in OVERLAP_KINDS:
        out += [far_apart(n, rng) for n in SIZES]
    return out


def far_apart(n: int, rng: random.Random) -> Scenario:
    """A memmove call whose buffers are far apart (either order): in the
    other runs src is within n + 16 of dst, so a register moving with dst
    is as near S as D, and `bases` could not tell which buffer it follows."""
    sc = replace(scenario("memcpy", n, rng.randrange(8), rng.randrange(8), rng), kind="memmove")
    return replace(sc, D=sc.S, S=sc.D) if rng.randrange(2) else sc


def faulting(kind: str, n: int, rng: random.Random) -> Scenario:
    """A run whose user buffer meets an inaccessible page: at a page
    boundary inside it, or (one in eight) from its first byte.  The loop
    heads a fault path reaches (the byte loop after a block faulted) see
    states no complete copy makes: guessing from these too spares Houdini
    refuting with the solver what a run shows false."""
    sc = scenario(kind, n, rng.randrange(8), rng.randrange(8), rng)
    if rng.randrange(8) == 0:
        sc.F = sc.U
        return sc
    return with_fault(sc, rng.randrange(1, n) if n > 1 else 0)


def with_fault(sc: Scenario, k: int) -> Scenario:
    """The call moved (both buffers, by the same amount) so that the user
    buffer's byte k starts an inaccessible page."""
    shift = (-(sc.U + k)) % PAGE
    sc = replace(sc, D=sc.D + shift, S=sc.S + shift)
    sc.F = sc.U + k
    return sc


# of one run's visits to a loop head, the first and the last this many are
# kept: a byte loop copying 2000 bytes otherwise gives 2000 states alike
# but for the count, and guessing would spend its time on them; a state
# left out can only let through a guess that Houdini then refutes
ENDS_KEPT = 16


def collect(image, symbol: str, kind: str, cuts, stuck: list | None = None,
            broken: dict | None = None) -> dict[int, list]:
    """Loop-head states: pc -> [(regs, sstatus, dst bytes, scenario, entry
    regs)], the first and last ENDS_KEPT of each run at each head.  (A
    state left out only lets a guess through that Houdini then refutes:
    none is trusted.)  Runs that did not return within T1's step bound
    end the sampling: the first is appended to `stuck` as (scenario,
    outcome).  `broken`, when given, gets for each clause some run breaks
    (verify.invariants.concrete.verdicts; loads are not recorded, so not B2) the
    smallest such run, as (scenario, outcome)."""
    snaps: dict[int, list] = defaultdict(list)
    string = kind in STRING_KINDS
    for sc in samples(kind):
        out = run(image, symbol, sc, trace_pcs=cuts, record_loads=False)
        if out.error_kind == "StepLimit" and stuck is not None:
            stuck.append((sc, out))
            break       # the proof stops here: T1 is violated
        if broken is not None:
            for clause, ok in verdicts(sc, out, string).items():
                if not ok and (clause not in broken or sc.N < broken[clause][0].N):
                    broken[clause] = (sc, out)
        if out.error:
            continue
        visits: dict[int, list] = defaultdict(list)
        for pc, x, ss, dst in out.snapshots:
            visits[pc].append((x, ss, dst, sc, out.init))
        for pc, states in visits.items():
            if len(states) > 2 * ENDS_KEPT:
                states = states[:ENDS_KEPT] + states[-ENDS_KEPT:]
            snaps[pc] += states
    return snaps


def smallest_hang(image, symbol: str, sc: Scenario, out, tries: int = 256):
    """The smallest n that still does not return, with the stuck run's
    alignments (and no fault): (scenario, outcome).  Sizes above `tries`
    are not searched; the stuck run itself is returned then."""
    rng = random.Random(5)
    doff, soff = sc.D % 8, sc.S % 8
    for n in range(min(sc.N, tries) + 1):
        small = scenario(sc.kind, n, doff, soff, rng)
        got = run(image, symbol, small, record_loads=False)
        if got.error_kind == "StepLimit":
            return small, got
    return sc, out
