"""No-wrap lemmas: an unsigned comparison of two addresses off the same
buffer start, as the signed comparison of their offsets.

The code compares pointers unsigned (`bltu a0, a3`: dst against its end);
the invariants bound offsets signed (`a0 - D <= n - 128`).  The solver can
only connect the two through the carries of 64-bit sums with D in them,
which it bit-blasts, slowly (CHANGELOG.md has the figures).  For
every comparison `ULE(D + a, D + b)` (also ULT, UGE, UGT; D or S) in a
query this adds the fact

    -LOW <= a < LOW + n  and  -LOW <= b < LOW + n   ->   (ULE(D + a, D + b) == a <= b)

which follows from the preconditions (LOW <= D <= HIGH - n: neither sum
wraps), so adding it changes no verdict; the solver then needs no carry
chain through D.  tests/verify/test_verify_nowrap.py
proves the schema from the preconditions.

Role: `lemmas(world, formulas)`.  May import z3, verify.contract.world, verify.symbolic.z3ops.
"""
from __future__ import annotations

import z3

from copygen.verify.contract.world import LOW, World
from copygen.verify.symbolic.z3ops import bv, mentions

_KINDS = {z3.Z3_OP_ULEQ: (False, False), z3.Z3_OP_ULT: (False, True),
          z3.Z3_OP_UGEQ: (True, False), z3.Z3_OP_UGT: (True, True)}   # (swap, strict)


def small(world: World, off):
    """The offsets for which base + off cannot wrap, for base D (or S) in
    [LOW, HIGH - n]."""
    return z3.And(off >= -bv(LOW), off < bv(LOW) + world.N)


def schema(world: World, base, a, b, strict: bool):
    """The lemma for a comparison of base + a with base + b."""
    cmp = z3.ULT(base + a, base + b) if strict else z3.ULE(base + a, base + b)
    return _guarded(world, cmp, a, b, strict)


def _guarded(world: World, cmp, a, b, strict: bool):
    """cmp (base + a against base + b) is the signed comparison of a and b
    while both offsets are small."""
    rel = a < b if strict else a <= b
    return z3.Implies(z3.And(small(world, a), small(world, b)), cmp == rel)


def bases(world: World) -> list:
    """The buffer starts the preconditions place in [LOW, HIGH - n]."""
    return [world.D, world.S] if world.has_source else [world.D]


def lemmas(world: World, formulas) -> list:
    """The lemmas for every pointer comparison inside `formulas` (memoised
    per formula on the world: the same facts recur in many queries)."""
    memo = world.__dict__.setdefault("_nowrap_memo", {})
    out: list = []
    seen: set = set()
    for f in formulas:
        key = f.get_id()
        if key not in memo:
            memo[key] = (f, _collect(world, f))
        for lem in memo[key][1]:
            if lem.get_id() not in seen:
                seen.add(lem.get_id())
                out.append(lem)
    return out


def _collect(world: World, f) -> list:
    out, seen, todo = [], set(), [f]
    while todo:
        e = todo.pop()
        if e.get_id() in seen or not z3.is_bool(e):
            continue
        seen.add(e.get_id())
        kind = e.decl().kind() if z3.is_app(e) else None
        if kind in _KINDS:
            lem = _lemma(world, e, *_KINDS[kind])
            if lem is not None:
                out.append(lem)
            continue
        todo.extend(e.children())
    return out


def _lemma(world: World, atom, swap: bool, strict: bool):
    x, y = atom.arg(0), atom.arg(1)
    if swap:
        x, y = y, x
    for base in bases(world):
        if mentions(x, base) and mentions(y, base):
            a, b = _offset(x, base), _offset(y, base)
            if a is not None and b is not None:
                return _guarded(world, atom, a, b, strict)
    return None


def _offset(e, base):
    """e - base, when that no longer mentions base (e is base plus terms)."""
    r = z3.simplify(e - base, som=True)
    return None if mentions(r, base) else r
