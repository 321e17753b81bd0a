"""Equivalences applied to a query's formulas before the solver sees them.

Z3's simplifier writes an address rounded down and offset,
`((x + c) & -8) + k`, as `Concat(Extract(63, 3, x + c), k)`.  Compared
with another sum of the same symbols (`x11 + N + S + 16 + k`), that form
keeps the two sides apart: bit-blasted, the solver relates them only
through the carries of two 64-bit adders.  Written back as arithmetic,
`(x + c) - ZeroExt(Extract(2, 0, x + c)) + k`, the same value, the sums
share their terms and only the three low bits stay bit-level.  Every
rewrite here is an identity on bit-vectors, so a query's answer is the
same (CHANGELOG.md gives the figures).

Role: `arith_masks` (the rewrite, remembered per term of the main
context).  May import z3 only.
"""
from __future__ import annotations

import z3

# terms of the main context already rewritten: id -> (term, rewritten);
# the term is kept so that its id is not reused while it is remembered
_DONE: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}
_LIMIT = 400_000
# off only to measure what the rewrite saves (bench/verify/prover_ab.py --switch presolve,
# bench/verify/verify_profile.py --no-presolve)
REWRITE = True


def arith_masks(fs: list) -> list:
    """fs with every `Concat(Extract(w - 1, j, x), constants)` of width w
    written as `x - ZeroExt(w - j, Extract(j - 1, 0, x)) + constants`."""
    if not REWRITE:
        return list(fs)
    if len(_DONE) > _LIMIT:
        _DONE.clear()
    return [_rewrite(f) for f in fs]


def _masked(e: z3.ExprRef, kids: list) -> z3.ExprRef | None:
    """The arithmetic form of e = Concat(kids) if e is a rounded value
    plus a constant, else None."""
    top, low = kids[0], kids[1:]
    if not (z3.is_app_of(top, z3.Z3_OP_EXTRACT) and all(z3.is_bv_value(k) for k in low)):
        return None
    hi, lo = top.params()
    x = top.arg(0)
    if x.size() != e.size() or hi != x.size() - 1 or lo == 0:
        return None
    c = 0
    for k in low:
        c = (c << k.size()) | k.as_long()
    w = x.size()
    return x - z3.ZeroExt(w - lo, z3.Extract(lo - 1, 0, x)) + z3.BitVecVal(c, w)


def _rewrite(root: z3.ExprRef) -> z3.ExprRef:
    """root rewritten bottom-up, each shared term once."""
    if root.ctx is not z3.main_ctx():
        return root
    done = _DONE
    stack = [root]
    while stack:
        e = stack[-1]
        key = e.get_id()
        if key in done:
            stack.pop()
            continue
        if not z3.is_app(e) or e.num_args() == 0:
            done[key] = (e, e)
            stack.pop()
            continue
        args = e.children()
        todo = [a for a in args if a.get_id() not in done]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        kids = [done[a.get_id()][1] for a in args]
        new = e
        if any(k.get_id() != a.get_id() for k, a in zip(kids, args)):
            arr = (z3.Ast * len(kids))(*(k.as_ast() for k in kids))
            new = z3.z3._to_expr_ref(z3.Z3_update_term(e.ctx_ref(), e.as_ast(), len(kids), arr), e.ctx)
        if z3.is_app_of(e, z3.Z3_OP_CONCAT):
            arith = _masked(e, kids)
            new = new if arith is None else arith
        done[key] = (e, new)
    return done[root.get_id()][1]
