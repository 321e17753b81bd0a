"""Which loops the explorer runs through instead of cutting them at their
head: those inside a subroutine of the routine's own that is called from
two or more places.

Linux's memmove.S calls its byte loop up to alignment with `jal t0` from
each word copy of a direction and returns with `jr t0`.  A cut point at
that loop's head would hold either return address, so the return would be
a jump through an unknown register (a return out of the routine, clause
A1).  Run through, iteration by iteration as far as the path condition
allows, the loop keeps each path's own return address; a loop some path
runs too often (verify.symbolic.explore.Unbounded) is cut after all, by the
caller.

Role: choose the unrolled loop heads.  May import verify.symbolic.program.
"""
from __future__ import annotations

from collections import defaultdict

from copygen.verify.symbolic.program import Program, Routine


def shared_callee_body(prog: Program, routine: Routine) -> frozenset[int]:
    """The instructions of the routine's own subroutines called from two or
    more places, walked from each one's entry up to its return sites."""
    edges = routine.edges
    sites: dict[int, set[int]] = defaultdict(set)
    for pc in edges:
        i = prog.fetch(pc)
        if i.name in ("jal", "jalr") and i.rd:
            target = prog.jump_target(pc)
            if target is not None and target in edges and target not in routine.opaque:
                sites[target].add(pc + i.length)
    body: set[int] = set()
    for target, returns in sites.items():
        if len(returns) < 2:
            continue
        todo = [target]
        while todo:
            pc = todo.pop()
            if pc not in body and pc not in returns:
                body.add(pc)
                todo.extend(edges.get(pc, ()))
    return frozenset(body)


def unrolling(prog: Program, entry: int, opaque: frozenset[int]) -> Routine:
    """The routine at entry (calls of `opaque` summarised), the loops of its
    shared subroutines unrolled."""
    plain = prog.routine(entry, opaque=opaque)
    unroll = plain.cut_points & shared_callee_body(prog, plain)
    return prog.routine(entry, opaque=opaque, unroll=unroll) if unroll else plain
