"""Guessing loop invariants from concrete runs (Daikon-style), to be checked
by induction in verify.invariants.houdini.

Role: from the loop-head states of sample runs (verify.invariants.samples), keep the
candidates (verify.invariants.candidates) true in all of them.  May import
verify.invariants.candidates.
"""
from __future__ import annotations

from collections import defaultdict
from itertools import combinations

from copygen.verify.invariants.candidates import FACTS, M64, MEMMOVE_FACTS, Cand, _s, atom_value, term_values

TERM_ORDER = ["0", "D", "S", "E", "SE", "N", "SA", "OFF", "SHR", "NSHR", "SHL", "SOFF", "SSHR",
              "NSSHR", "CB", "CW"]
BOUND_TERMS = ["D", "S", "E", "SE", "0", "N", "DU"]     # DU: dst rounded up to a word
# a backward copy's head stops at the end of dst rounded down (memmove only:
# the other kinds would only pay for more candidates)
MEMMOVE_BOUND_TERMS = BOUND_TERMS + ["ED"]


_NONE = object()


def _constant(values):
    """The one value `values` all take, or None (also when there are none):
    stops at the first that differs, as most guesses fail at once."""
    it = iter(values)
    first = next(it, _NONE)
    if first is _NONE:
        return None
    for v in it:
        if v != first:
            return None
    return first


def kind_terms(kind: str) -> list[str]:
    """The terms worth relating registers to, for a routine kind."""
    base = ["0", "D", "S", "E", "SE", "N"]
    if kind == "memset":
        return base + ["CB", "CW"]
    if kind in ("to", "from", "memcpy", "memmove"):
        return base + ["SA", "OFF", "SHR", "NSHR", "SHL", "SOFF", "SSHR", "NSSHR"]
    return base


def guess(snaps: list, kind: str, roles: dict[int, str] | None = None) -> list[Cand]:
    """The candidates true in every snapshot of one loop head.  `roles`
    (verify.symbolic.program.Program.address_roles): registers the loop uses as
    load or store addresses, bounded only against their own buffer."""
    if not snaps:
        return []
    terms = [term_values(sc.D, sc.S, sc.N, sc.C) for _, _, _, sc, _ in snaps]
    xs = [x for x, *_ in snaps]
    inits = [i for *_, i in snaps]
    unchanged = [r for r in range(1, 32) if all(x[r] == i[r] for x, i in zip(xs, inits))]
    varying = [r for r in range(1, 32) if r not in unchanged]
    cands = [Cand("unchanged", (r,)) for r in unchanged]
    atoms = [(r,) for r in varying]
    if kind == "memmove":      # a cursor = another + a count (after memmove's backward word loop)
        atoms += list(combinations(varying, 2))
    cands += _linear(atoms, xs, terms, kind_terms(kind))
    cands += _sums(varying, xs, terms)
    cands += _masked_sums(varying, unchanged, xs, terms)
    cands += _block_distances(varying, xs)
    if kind == "memmove":      # the other kinds' proofs need no scaled terms, and fewer guesses are cheaper
        cands += _scaled(varying, xs, terms)
    cands += _bounds_aligned(varying, xs, terms, kind, _buffers(snaps, roles or {}))
    cands += [Cand("fact", (f,)) for f, (ev, _) in FACTS.items() if all(ev(t) for t in terms)
              and (kind == "memmove" or f not in MEMMOVE_FACTS)]
    least = min(sc.N for *_, sc, _ in snaps)
    cands += [Cand("nge", (v,)) for v in _weaker(least, -1) if v > 0]
    if kind in ("to", "from", "memcpy", "memmove"):
        cands += _words(varying, snaps)
    if kind == "memset":
        cands += [Cand("fill", (r,)) for r in varying
                  if all(x[r] & 0xFF == t["CB"] for x, t in zip(xs, terms))]
    cands += _cursor(varying, snaps)
    # the emulator enters with sstatus = 0, or SUM alone for an entry that
    # holds SUM: SS0 either way
    for bit in (0, 1):
        if all(ss == bit << 18 for _, ss, *_ in snaps):
            cands.append(Cand("status", (bit,)))
    return cands


ROLE_TERMS = {"dst": ("D", "E"), "src": ("S", "SE")}


def bases(snaps: list, roles: dict[int, str] | None = None) -> dict[int, str]:
    """For each register that moves with a buffer, the buffer term it stays
    near (D, S, D+n or S+n): the prover writes it as term + offset so that the
    term cancels in the solver's arithmetic.  `roles` (register -> "dst" or
    "src", from the loop's loads and stores) settles it when both buffers
    are near, as memmove's overlapping runs leave them: a dst cursor there
    is as near S + n as D, and written against S + n its comparisons with
    dst's other cursors no longer cancel the base term, which the solver
    then bit-blasts through."""
    out: dict[int, str] = {}
    if not snaps:
        return out
    terms = [term_values(sc.D, sc.S, sc.N, sc.C) for _, _, _, sc, _ in snaps]
    xs = [x for x, *_ in snaps]
    for r in range(1, 32):
        best = None
        for t in ROLE_TERMS.get((roles or {}).get(r), ("D", "S", "E", "SE")):
            far = _farthest((x[r] - tv[t] for x, tv in zip(xs, terms)), NEAR)
            if far < NEAR and (best is None or far < best[0]):
                best = (far, t)
        if best:
            out[r] = best[1]
    return out


NEAR = 1 << 24      # how far a register may stray from its buffer term


def _farthest(diffs, limit: int) -> int:
    """The largest |difference| (as signed 64-bit values), or the first that
    reaches `limit`: most registers are nowhere near a term, and one
    snapshot shows it."""
    far = 0
    for d in diffs:
        d = abs(_s(d))
        if d >= limit:
            return d
        if d > far:
            far = d
    return far


def _sums(varying, xs, terms) -> list[Cand]:
    """Two registers whose sum is fixed, e.g. a C loop's count + dst == D + n."""
    moving = [r for r in varying if len({x[r] for x in xs}) > 1]
    out = []
    for atom in combinations(moving, 2):
        av = [atom_value(atom, x) for x in xs]
        for t in ("E", "SE", "N", "D", "S"):
            c = _constant((a - tv[t]) & M64 for a, tv in zip(av, terms))
            if c is not None:
                out.append(Cand("linear", (atom, t, (), "0", _s(c))))
                break
    return out


MASKS = (7, 15, 31, 63, 127, 255)   # a block of 1, 2, 4, 8, 16 or 32 words, less one
# a cursor and its end may also be whole 32-bit words apart (Linux 6.12's
# memcpy.S copies its tail by `lw`/`sw` when both buffers allow)
BLOCK_MASKS = (3,) + MASKS
FLOORS = (8,)                     # an overlapping head: one word at dst


def _masked_sums(varying, unchanged, xs, terms) -> list[Cand]:
    """x[a] + (x[b] & m) fixed relative to a term, or to x[b] itself ("@"):
    a word loop's end plus the bytes it leaves over is the buffer end, the
    bytes its blocks cover are the count rounded down to a block (GCC
    computes the one from the other).  The smallest block m + 1 that fits.
    x[b] may be a register the loop leaves alone, such as the count GCC
    keeps in a2 while its loop runs a cursor up to dst + (n & -16)."""
    moving = [r for r in varying if len({x[r] for x in xs}) > 1]
    fixed = [r for r in unchanged if len({x[r] for x in xs}) > 1]
    out = []
    for a in moving:
        for b in moving + fixed:
            if a != b:
                out += _masked_sum(a, b, xs, terms)
    return out


def _masked_sum(a, b, xs, terms) -> list[Cand]:
    for m in MASKS:
        for t in ("E", "SE", "N", "@"):
            c = _constant((x[a] + (x[b] & m) - (x[b] if t == "@" else tv[t])) & M64
                          for x, tv in zip(xs, terms))
            if c is not None:
                return [Cand("mask", (a, b, m, t, _s(c)))]
    return []


SHIFTS = (3, 4, 5, 6)       # a word, or a block of 2, 4 or 8 words


def _scaled(varying, xs, terms) -> list[Cand]:
    """x[a] - term == (x[b] << k) + c: a count of words (or blocks) and the
    bytes they cover, kept in two registers.  The first term that fits."""
    out = []
    for a in varying:
        for b in varying:
            if a == b or len({x[b] for x in xs}) < 2:
                continue
            for k in SHIFTS:
                for t in ("0", "D", "S", "E", "SE", "N"):
                    c = _constant((x[a] - tv[t] - (x[b] << k)) & M64 for x, tv in zip(xs, terms))
                    if c is not None:
                        out.append(Cand("scaled", (a, t, b, k, _s(c))))
                        break
    return out


def _block_distances(varying, xs) -> list[Cand]:
    """Two registers a varying whole number of blocks apart (a cursor and
    the end it runs up to): the largest block that fits."""
    out = []
    for a, b in combinations(varying, 2):
        diffs = {(x[a] - x[b]) & M64 for x in xs}
        if len(diffs) < 2:
            continue
        m = next((m for m in reversed(BLOCK_MASKS) if all(d & m == 0 for d in diffs)), None)
        both_aligned = all(x[a] & 7 == 0 == x[b] & 7 for x in xs)   # `aligned` says it
        if m is not None and not (m == 7 and both_aligned):
            out.append(Cand("rmod", (a, b, m)))
        if m == MASKS[-1]:
            # 32-word blocks are rare: the runs may only happen to be
            # multiples of them, so the 16-word guess stays beside it
            out.append(Cand("rmod", (a, b, MASKS[-2])))
    return out


def _linear(atoms, xs, terms, order) -> list[Cand]:
    """Registers at a fixed distance from a term, or from each other modulo
    terms (e.g. a1 - S == a0 - D for co-aligned cursors)."""
    groups: dict[tuple, list] = defaultdict(list)
    moving_terms = ("0", "D", "S", "E", "SE", "N", "SA")
    for atom in atoms:
        av = [atom_value(atom, x) for x in xs]
        constant = any(_constant((a - tv[t]) & M64 for a, tv in zip(av, terms)) is not None
                       for t in order)
        for t in (order if constant else [t for t in moving_terms if t in order]):
            vec = [(a - tv[t]) & M64 for a, tv in zip(av, terms)]
            key = tuple((v - vec[0]) & M64 for v in vec)
            groups[key].append((atom, t, vec[0]))
    out, done, paired = [], set(), set()
    zero = tuple([0] * len(xs))
    for key, members in groups.items():
        if key == zero:
            for atom, t, c in members:
                if atom not in done:
                    done.add(atom)
                    out.append(Cand("linear", (atom, t, (), "0", _s(c))))
            continue
        rep = members[0]
        for atom, t, c in members[1:]:
            if atom != rep[0] and (rep[0], atom, rep[1] == t) not in paired:
                # x - t ~ y - t says the same for every t: keep one
                paired.add((rep[0], atom, rep[1] == t))
                out.append(Cand("linear", (rep[0], rep[1], atom, t, _s(rep[2] - c))))
    return out


# memmove: bounds on the rounded ends only for a register that stays within
# a word of them (a head or tail byte loop); a word loop's cursor bounded by
# them makes each query much harder, and the buffer's own ends say it
ROUNDED = ("DU", "ED")
# the other buffer's terms, which a load or store address is not bounded
# against: where memmove's buffers overlap, a src cursor stays near D in
# every run, and bounds like a1 - D >= -64 hold in the runs but are never
# inductive (each costs Houdini a query the solver gives up on)
OTHER_BUFFER = {"dst": ("S", "SE"), "src": ("D", "E", "DU", "ED")}


def _buffers(snaps, roles: dict[int, str]) -> dict[int, str]:
    """The buffer ("dst" or "src") each register follows: the loop's own
    loads and stores say it, else the buffer term it stays nearest to."""
    side = {"D": "dst", "E": "dst", "S": "src", "SE": "src"}
    out = {r: side[t] for r, t in bases(snaps, roles).items()}
    out.update(roles)
    return out


def _bounds_aligned(varying, xs, terms, kind: str = "", buffers=None) -> list[Cand]:
    out = []
    ns = [tv["N"] for tv in terms]
    buffers = buffers or {}
    for r in varying:
        other = OTHER_BUFFER.get(buffers.get(r), ())
        for t in MEMMOVE_BOUND_TERMS if kind == "memmove" else BOUND_TERMS:
            if t in other:
                continue
            vals = [_s(x[r] - tv[t]) for x, tv in zip(xs, terms)]
            near = 1 << 24 if t not in ROUNDED or kind != "memmove" else 9
            if max(abs(v) for v in vals) < near and len(set(vals)) > 1:
                out += _bound_pair("ge", "le", ((r,), t), vals, ns, kind == "memmove")
        for t in ("0", "D", "S"):
            if all((x[r] - tv[t]) & 7 == 0 for x, tv in zip(xs, terms)):
                out.append(Cand("aligned", ((r,), t)))
    for a, b in combinations(varying, 2):     # e.g. a0 < t1 in a head loop
        if len({buffers.get(a), buffers.get(b)} - {None}) == 2:
            continue        # a dst and a src register: see OTHER_BUFFER
        vals = [_s(x[a] - x[b]) for x in xs]
        if max(abs(v) for v in vals) < 1 << 16 and len(set(vals)) > 1:
            out += _bound_pair("rge", "rle", (a, b), vals, ns)
    return out


def _bound_pair(lo_kind: str, hi_kind: str, args: tuple, vals: list, ns: list,
                leftover: bool = False) -> list[Cand]:
    """Lower and upper bounds on vals, but not an extreme that only the
    larger half of the sizes reaches: it grows with n (a0 - D <= 1000
    after a largest sample of 1000 bytes), so no bound on it is inductive
    for every n, and Houdini would spend solver time refuting each one."""
    half = max(ns) // 2
    small = [v for v, n in zip(vals, ns) if n <= half] or vals
    out = []
    if min(small) == min(vals):
        out += [Cand(lo_kind, (*args, v)) for v in _weaker(min(vals), -1)]
    if max(small) == max(vals):
        out += [Cand(hi_kind, (*args, v)) for v in _weaker(max(vals), 1, leftover)]
    return out


def _weaker(v: int, direction: int, leftover: bool = False) -> list[int]:
    """The observed extreme and a few rounder, weaker bounds past it (a
    sample rarely hits the true bound; Houdini keeps what is inductive).
    `leftover` (memmove): an upper bound at 8k - 1 too."""
    out = [v]
    for step in (8, 64):
        r = -((-v) // step) * step if direction > 0 else (v // step) * step
        out.append(r)
    if leftover and direction > 0 and v % 8:     # what a word leaves over: at most 7 bytes, not 8
        out.append(-((-(v + 1)) // 8) * 8 - 1)
    if (direction > 0 and v < 0) or (direction < 0 and v > 0):
        out.append(0)
    return sorted(set(out))


def _word_at(sc, addr: int) -> int:
    """The word at addr as memory held it at the call (loads read the source
    as it was at the call: verify.contract.world)."""
    return int.from_bytes(bytes(sc.source_byte(addr + k) for k in range(8)), "little")


def _words(varying, snaps) -> list[Cand]:
    x0, _, _, sc0, _ = snaps[0]
    table: dict[int, list[int]] = defaultdict(list)
    for a in range(sc0.S - 16, sc0.S + sc0.N + 16):
        table[_word_at(sc0, a)].append(a)
    out = []
    for r in varying:
        for addr in table.get(x0[r], []):
            for b in varying:
                c = addr - x0[b]
                if abs(c) <= 256 and all(x[r] == _word_at(sc, x[b] + c)
                                         for x, _, _, sc, _ in snaps):
                    out.append(Cand("word", (r, b, c)))
    return out


def _prefix(dst: bytes, before: bytes, n: int) -> int | None:
    """k when exactly dst[0, k) differs from what it was before the call."""
    k = 0
    while k < n and dst[k] != before[k]:
        k += 1
    return k if dst[k:] == before[k:] else None


def _cursor(varying, snaps) -> list[Cand]:
    """dst changed exactly below x[r] + c (forward), or exactly from it to
    the end (backward: memmove's copy down from the end)."""
    out = []
    # a call whose dst already holds what it should (memmove with src == dst)
    # shows nothing of how far the copy got
    snaps = [s for s in snaps if s[3].dst_before() != s[3].expected()] or snaps
    for kind, rev in (("cursor", False), ("rcursor", True)):
        lims = []
        for _, _, dst, sc, _ in snaps:
            before = sc.dst_before()
            k = _prefix(dst[::-1], before[::-1], sc.N) if rev else _prefix(dst, before, sc.N)
            lims.append(None if k is None else (sc.N - k if rev else k))
        if any(L is None for L in lims):
            continue
        for r in varying:
            cs = {(sc.D + L - x[r]) & M64 for (x, _, _, sc, _), L in zip(snaps, lims)}
            if len(cs) == 1:
                out.append(Cand(kind, (r, _s(cs.pop()))))
            elif not rev:
                out += _floored_cursor(r, snaps, lims) or _partial_cursor(r, snaps, lims)
    return out


def _partial_cursor(r, snaps, lims) -> list[Cand]:
    """dst changed below x[r] + c, and in the runs that met a fault
    perhaps further, but not up to the fault point: a block restarted in
    the byte loop from its first byte (`fault restart`)."""
    cs = [_s((sc.D + L - x[r]) & M64) for (x, _, _, sc, _), L in zip(snaps, lims)]
    c = min(cs)
    if all(v == c or (sc.F is not None and L <= sc.F - sc.U)
           for v, (_, _, _, sc, _), L in zip(cs, snaps, lims)):
        return [Cand("pcursor", (r, c))]
    return []


def _floored_cursor(r, snaps, lims) -> list[Cand]:
    """dst changed exactly below max(x[r] + c, D + k): a word stored at dst
    before the loop whose cursor x[r] starts inside it (`align overlap`)."""
    for k in FLOORS:
        above = {(sc.D + L - x[r]) & M64 for (x, _, _, sc, _), L in zip(snaps, lims) if L > k}
        if len(above) != 1:
            continue
        c = above.pop()
        if all(L > k or (L == k and _s((x[r] + c - sc.D) & M64) <= k)
               for (x, _, _, sc, _), L in zip(snaps, lims)):
            return [Cand("cursor", (r, _s(c), k))]
    return []
