"""Proving that the stores of a path wrote every byte of [0, upto), without a
free byte index.

`written` (verify.symbolic.symstate) is true for the watched byte dst[W] when some
store covered it: an `Or` of `ULT(W - lo, size)` intervals, plus the loop
head's own `written`, which the start invariant (a cursor) pins to
`ULT(W, lim)`.  Asking the solver "written for every W < upto" mixes W into
every interval and is slow.  Instead: a union of intervals covers [0, upto)
iff 0 is covered (when upto != 0) and every right end b of an interval with
b < upto is covered, since the smallest uncovered point would be the right
end of the interval covering the point before it.  That holds for
bit-vector intervals too (membership is ULT(p - lo, size)), and for any
range [start, upto) in place of [0, upto) (a backward copy's written part
is [lim, n)).  Each of these
goals mentions no W, and each is a small query of its own.

Role: `cover_goals` (every byte below a bound written) and `inside_goals`
(nothing written at or past it).  May import z3, verify.symbolic.z3ops.
"""
from __future__ import annotations

import z3

from copygen.verify.symbolic.z3ops import bv, mentions


def _disjuncts(e) -> list:
    if z3.is_or(e):
        return [d for c in e.children() for d in _disjuncts(c)]
    return [e]


def intervals(W, written, head_written=None, head_iv=None) -> list | None:
    """`written` as [(membership of a point p, left end, right end)], None
    when it is not a union of intervals.  The head's own flag counts as the
    interval head_iv = (lo, hi) its cursor gives ([0, lim) for a forward
    copy, [lim, n) for a backward one); stores that meet end to start are
    one interval (`_merged`)."""
    out = []
    for d in _disjuncts(written):
        if z3.is_false(d):
            continue
        if head_written is not None and z3.eq(d, head_written):
            if head_iv is None:
                return None
            lo, hi = head_iv
            out.append((lambda p, lo=lo, hi=hi: z3.ULT(p - lo, hi - lo), lo, hi))
            continue
        if not (z3.is_app_of(d, z3.Z3_OP_ULT) and z3.is_bv_value(d.arg(1))):
            return None
        off, size = d.arg(0), d.arg(1)
        lo = z3.simplify(W - off)
        if mentions(lo, W):
            return None
        out.append((lo, size.as_long()))
    return _merged(out)


def _merged(ivs: list) -> list:
    """[(membership, lo, hi)] of the intervals: head intervals as they
    are, and runs of constant-size intervals that meet end to start (a
    block of stores at one base register's consecutive offsets) joined
    into one interval of their summed size, the same set of points."""
    heads = [iv for iv in ivs if len(iv) == 3]
    runs = [[lo, size, z3.simplify(lo + size)] for lo, size in (iv for iv in ivs if len(iv) == 2)]
    starting = {}                 # left end's id -> the run that starts there
    for i, (lo, _, _) in enumerate(runs):
        starting.setdefault(lo.get_id(), i)
    for i, run in enumerate(runs):
        while run is not None:
            j = starting.get(run[2].get_id())
            if j is None or j == i or runs[j] is None or run[1] + runs[j][1] >= 1 << 63:
                break
            _, size, hi = runs[j]
            runs[j] = None
            del starting[run[2].get_id()]
            run[1], run[2] = run[1] + size, hi
    return heads + [(lambda p, lo=lo, size=size: z3.ULT(p - lo, bv(size)), lo, hi)
                    for lo, size, hi in filter(None, runs)]


def cover_goals(W, written, upto, head_written=None, head_iv=None, start=None) -> list | None:
    """W-free goals that together prove `written` for every W in
    [start, upto) (start 0 by default); None when `written` is not a union
    of intervals (then ask directly).  head_written / head_iv: the start
    state's written flag and the interval its cursor gives, if any."""
    ivs = intervals(W, written, head_written, head_iv)
    if ivs is None:
        return None
    start = bv(0) if start is None else start

    def covered(p):
        return z3.Or(*[member(p) for member, _, _ in ivs]) if ivs else z3.BoolVal(False)
    goals = [z3.Implies(upto != start, covered(start))]
    goals += [z3.Implies(z3.ULT(end - start, upto - start), covered(end)) for _, _, end in ivs]
    # most intervals are disjoint from a given right end by constants alone
    return [z3.simplify(g) for g in goals]


def inside_goals(W, written, limit, head_written=None, head_iv=None, start=None) -> list | None:
    """W-free goals that together prove `written -> W in [start, limit)`:
    every interval is empty or lies in [start, limit) without wrapping."""
    ivs = intervals(W, written, head_written, head_iv)
    if ivs is None:
        return None
    start = bv(0) if start is None else start
    return [z3.simplify(z3.Or(lo == end, z3.And(z3.ULE(start, lo), z3.ULE(lo, end),
                                                 z3.ULE(end, limit))))
            for _, lo, end in ivs]
