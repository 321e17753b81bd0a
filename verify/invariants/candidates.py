"""Candidate loop invariants, guessed from concrete loop-head states.

Families (each checked by induction later; a guess is never trusted):
  unchanged  x[r] == its value at entry
  linear     (atom_a - term_a) - (atom_b - term_b) == c     atoms: registers
             and sums of two registers; terms: D, S, N, D+N, S+N, the shift
             amounts of the misalignment, memset's byte pattern ...
  bounds     lo <= (x[r] - term) <= hi  (signed, small)
  aligned    (x[r] - term) & 7 == 0
  fact       facts about the arguments alone, e.g. ((S - D) & 7) != 0
  word       x[r] == the source word at x[b] + c
  cursor     the destination holds exactly the bytes [D, x[r] + c) copied;
             with a floor k, [D, max(x[r] + c, D + k)): an overlapping head's
             word, stored before the loop's cursor has passed it
  rcursor    ... exactly the bytes [x[r] + c, D + n): a backward copy (memmove)
  pcursor    the bytes [D, x[r] + c) copied, and any byte written past them
             copied too and before the fault point: a copy whose faulting
             block restarts in the byte loop (`fault restart`) has stored
             again some of what lies past its cursor
  fill       x[r] & 0xff == memset's byte (a byte loop that stores the
             argument as it came, or the word made of it, whichever path led in)
  status     sstatus == SS0 | SUM  (or == SS0)
  nge        n >= c (unsigned): the size threshold that led to this loop
  mask       x[a] + (x[b] & m) - term == c   (GCC's word loops: the loop end
             plus the bytes left over is the buffer end; m = 8 * unroll - 1;
             term "@" is x[b]: x[a] is x[b] rounded down to a block)
  rmod       (x[a] - x[b]) & m == 0   (GCC's unrolled loops run a cursor up to
             an end a whole number of blocks away; m = block size - 1)
  scaled     x[a] - term == (x[b] << k) + c   (a count of words or blocks
             and the bytes they cover: GCC keeps both, e.g. t1 = 8 * a7 + 8)
  never      false: the head is never reached (guessed where no sample run
             reached it; it stands only if every path into the head is
             infeasible, and then every path from it holds vacuously)

Role: generate and evaluate.  May import z3, verify.contract.world, verify.symbolic.z3ops.
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from copygen.verify.contract.world import SR_SUM, World
from copygen.verify.symbolic.z3ops import bv

M64 = (1 << 64) - 1
REP = 0x0101010101010101


def _s(v: int) -> int:
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def term_values(D, S, N, C) -> dict[str, int]:
    off, soff = (S - D) & 7, S & 7
    return {"0": 0, "D": D, "S": S, "N": N, "E": D + N, "SE": S + N, "SA": S - off,
            "DU": (D + 7) & ~7, "ED": (D + N) & ~7,
            "OFF": off, "SHR": 8 * off, "NSHR": (-8 * off) & M64, "SHL": 64 - 8 * off,
            "SOFF": soff, "SSHR": 8 * soff, "NSSHR": (-8 * soff) & M64,
            "CB": C & 0xFF, "CW": (C & 0xFF) * REP}


def term_exprs(w: World) -> dict[str, z3.BitVecRef]:
    off, soff = (w.S - w.D) & bv(7), w.S & bv(7)
    cb = w.C & bv(0xFF)
    return {"0": bv(0), "D": w.D, "S": w.S, "N": w.N, "E": w.D + w.N, "SE": w.S + w.N,
            "SA": w.S - off, "DU": (w.D + bv(7)) & bv(~7),
            "ED": (w.D + w.N) & bv(~7),
            "OFF": off, "SHR": off * 8, "NSHR": -(off * 8), "SHL": bv(64) - off * 8,
            "SOFF": soff, "SSHR": soff * 8, "NSSHR": -(soff * 8), "CB": cb, "CW": cb * bv(REP)}


FACTS = {
    "OFF!=0": (lambda t: t["OFF"] != 0, lambda e: e["OFF"] != 0),
    "OFF==0": (lambda t: t["OFF"] == 0, lambda e: e["OFF"] == 0),
    "SOFF!=0": (lambda t: t["SOFF"] != 0, lambda e: e["SOFF"] != 0),
    "SOFF==0": (lambda t: t["SOFF"] == 0, lambda e: e["SOFF"] == 0),
    "D&7==0": (lambda t: t["D"] & 7 == 0, lambda e: e["D"] & bv(7) == 0),
    # memmove's two directions: dst does not start inside [src, src + n)
    # (a forward copy is safe), or it does (only a backward one is)
    "D-S>=N": (lambda t: (t["D"] - t["S"]) & M64 >= t["N"], lambda e: z3.UGE(e["D"] - e["S"], e["N"])),
    "D-S<N": (lambda t: (t["D"] - t["S"]) & M64 < t["N"], lambda e: z3.ULT(e["D"] - e["S"], e["N"])),
    # dst starts inside src or just past it (dst == src + n): a backward
    # copy that also takes the adjacent case
    "D-S<=N": (lambda t: (t["D"] - t["S"]) & M64 <= t["N"], lambda e: z3.ULE(e["D"] - e["S"], e["N"])),
    # and src does not start inside dst: with the above, the buffers are
    # disjoint (memcpy, reached by a tail call, may then copy in any order)
    "S-D>=N": (lambda t: (t["S"] - t["D"]) & M64 >= t["N"], lambda e: z3.UGE(e["S"] - e["D"], e["N"])),
}
# facts only memmove needs (for the other kinds the buffers are disjoint)
MEMMOVE_FACTS = ("D-S>=N", "D-S<N", "D-S<=N", "S-D>=N")


@dataclass(frozen=True)
class Cand:
    kind: str
    args: tuple

    def __str__(self) -> str:
        return f"{self.kind}{self.args}"


# the guess at a loop head no sample run reached
NEVER = Cand("never", ())

# bounds of one family differ only in their constant; +1: a larger one is stronger
BOUND_KINDS = {"ge": 1, "rge": 1, "le": -1, "rle": -1, "nge": 1}


def bound_key(c: Cand):
    """Candidates with the same key are the same bound with other constants."""
    return (c.kind, c.args[:-1]) if c.kind in BOUND_KINDS else None


def strength(c: Cand) -> int:
    return BOUND_KINDS[c.kind] * c.args[-1]


def strongest(cands) -> list:
    """cands without the bounds another one of their family implies (the
    same set of states, fewer facts for the solver)."""
    best: dict = {}
    out = []
    for c in cands:
        k = bound_key(c)
        if k is None:
            out.append(c)
        elif k not in best or strength(c) > strength(best[k]):
            best[k] = c
    return out + list(best.values())


def registers(c: Cand) -> frozenset[int]:
    """The registers a candidate is about."""
    k, a = c.kind, c.args
    if k == "linear":
        return frozenset(a[0]) | frozenset(a[2])
    if k in ("ge", "le", "aligned"):
        return frozenset(a[0])
    if k in ("unchanged", "cursor", "rcursor", "pcursor", "fill"):
        return frozenset((a[0],))
    if k in ("rge", "rle", "rmod", "mask", "word"):
        return frozenset(a[:2])
    if k == "scaled":
        return frozenset((a[0], a[2]))
    return frozenset()         # nge, fact, status, never: about the arguments, sstatus, or none


def atom_value(atom, x) -> int:
    return sum(x[r] for r in atom) & M64


def atom_expr(atom, xs):
    e = xs[atom[0]]
    for r in atom[1:]:
        e = e + xs[r]
    return e


def formula(c: Cand, xs, sstatus, watched, written, w: World, terms):
    """The candidate as a Z3 formula over a loop-head state."""
    k, a = c.kind, c.args
    if k == "unchanged":
        return xs[a[0]] == w.R0[a[0]]
    if k == "never":
        return z3.BoolVal(False)
    if k == "linear":
        (atom_a, ta, atom_b, tb, cst) = a
        lhs = atom_expr(atom_a, xs) - terms[ta]
        rhs = (atom_expr(atom_b, xs) - terms[tb]) if atom_b else bv(0)
        return lhs - rhs == bv(cst)
    if k == "ge":
        return atom_expr(a[0], xs) - terms[a[1]] >= bv(a[2])
    if k == "le":
        return atom_expr(a[0], xs) - terms[a[1]] <= bv(a[2])
    if k == "rge":
        return xs[a[0]] - xs[a[1]] >= bv(a[2])
    if k == "rle":
        return xs[a[0]] - xs[a[1]] <= bv(a[2])
    if k == "nge":
        return z3.UGE(w.N, bv(a[0]))
    if k == "mask":
        base = xs[a[1]] if a[3] == "@" else terms[a[3]]
        return xs[a[0]] + (xs[a[1]] & bv(a[2])) - base == bv(a[4])
    if k == "rmod":
        return (xs[a[0]] - xs[a[1]]) & bv(a[2]) == 0
    if k == "scaled":
        return xs[a[0]] - terms[a[1]] == (xs[a[2]] << a[3]) + bv(a[4])
    if k == "aligned":
        return (atom_expr(a[0], xs) - terms[a[1]]) & bv(7) == 0
    if k == "fill":
        return xs[a[0]] & bv(0xFF) == terms["CB"]
    if k == "fact":
        return FACTS[a[0]][1](terms)
    if k == "word":
        return xs[a[0]] == w.source_word(xs[a[1]] + bv(a[2]), 8)
    if k in CURSORS:
        exp = w.expected_byte(w.W)
        return z3.And(cursor_extent(c, xs, written, w), z3.Implies(written, watched == exp))
    if k == "status":
        return sstatus == (w.SS0 | bv(SR_SUM)) if a[0] else sstatus == w.SS0
    raise AssertionError(k)


CURSORS = ("cursor", "rcursor", "pcursor")


def cursor_interval(c: Cand, xs, w: World) -> tuple:
    """(lo, hi): the indices of dst a cursor says are written, [lo, hi)
    (for a pcursor: those it says are written at least)."""
    limit = z3.simplify(xs[c.args[0]] + bv(c.args[1]) - w.D)
    if c.kind == "cursor" and len(c.args) > 2:
        floor = bv(c.args[2])
        return bv(0), z3.If(z3.ULT(limit, floor), floor, limit)
    return (limit, w.N) if c.kind == "rcursor" else (bv(0), limit)


def cursor_reach(c: Cand, xs, w: World) -> tuple:
    """(lo, hi): the indices of dst a cursor says may be written.  A
    pcursor's reach ends at its bound or, on a path that met the fault,
    at the fault point if that lies further (dst[W] is copied from the
    source's byte W, so the fault offset bounds both sides alike)."""
    lo, hi = cursor_interval(c, xs, w)
    if c.kind != "pcursor":
        return lo, hi
    return lo, z3.If(z3.And(z3.Not(w.NF), z3.ULT(hi, w.FO)), w.FO, hi)


def cursor_extent(c: Cand, xs, written, w: World):
    """The register part of a cursor: dst[W] was written iff W is in its
    interval (a pcursor: at least its interval, at most its reach), and
    the interval within [0, n)."""
    lo, hi = cursor_interval(c, xs, w)
    if c.kind == "cursor":
        return z3.And(written == z3.ULT(w.W, hi), z3.ULE(hi, w.N))
    if c.kind == "pcursor":
        _, reach = cursor_reach(c, xs, w)
        return z3.And(z3.Implies(z3.ULT(w.W, hi), written),
                      z3.Implies(written, z3.ULT(w.W, reach)), z3.ULE(hi, w.N))
    return z3.And(written == z3.UGE(w.W, lo), z3.ULE(lo, w.N))


def bv_formula(c: Cand, xs, sstatus, watched, written, w: World, terms):
    """The part of a candidate that needs no reasoning about memory contents
    (None for `word`, whose content is checked by verify.checks.dataproof)."""
    if c.kind in CURSORS:
        return cursor_extent(c, xs, written, w)
    if c.kind == "word":
        return None
    return formula(c, xs, sstatus, watched, written, w, terms)
