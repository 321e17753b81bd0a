"""Call summaries: a call of a routine that is proved on its own, taken in
the caller's proof as one step whose effect is the callee's contract.

memmove hands memcpy the calls whose buffers are disjoint.  Followed into,
memcpy's code is proved again inside every memmove proof, in memmove's
harder world where the buffers may overlap, together with memmove's own
loops (CHANGELOG.md has what that cost a large assembly memcpy).
Instead memmove's proof takes each call of memcpy as:

  * the obligations, on the path to the call, that it passes the caller's
    own (dst, src, n), that nothing of dst was written before it, and that
    the buffers are disjoint there (memcpy's world);
  * the effect, by memcpy's proved clauses: dst[W] holds src[W] for every
    W < n, as it was at the call (C1), a0 is dst (C1), sp, s0-s11 are kept
    and it returns to ra (A1); every other register and sstatus are
    unknown afterwards.

Sound when memcpy's every required clause is proved and it never names sp
(checked on its code here): its stores are then all in dst (B1), none on
the caller's frame, which its own proof could not see (stores at a constant
offset from sp are the stack to it).  Its B1, B2 and T1 are the caller's
for the call's part.  A memmove that calls memcpy with overlapping buffers
(a forward copy it trusts to memcpy) cannot use the contract: when a
sample run shows such a call, the call is followed as before.

Role: find the calls that may be summarised, and the step's obligations
and state.  May import z3, verify.contract.clauses, verify.invariants.concrete,
verify.symbolic.program, verify.invariants.samples, verify.symbolic.symstate, verify.contract.world.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import z3

from copygen.verify.contract.clauses import required
from copygen.verify.invariants.concrete import run
from copygen.verify.symbolic.program import BRANCHES, Program
from copygen.verify.invariants.samples import samples
from copygen.verify.symbolic.symstate import SymState
from copygen.verify.contract.world import CALLEE_SAVED, KINDS, World

# what a caller of this kind may summarise: the callee kinds, each proved
# in its own world
SUMMARISED = {"memmove": ("memcpy",)}
SP = 2
_fresh = itertools.count()


@dataclass(frozen=True)
class Summary:
    symbol: str
    entry: int
    kind: str           # the callee's kind: its report is from that world

    def obligations(self, w: World, st: SymState) -> list[tuple[str, object, str]]:
        """(clause, formula, what) that must hold on the path to the call."""
        x = st.x
        return [("C1", z3.And(x[10] == w.D, x[11] == w.S, x[12] == w.N),
                 f"calls {self.symbol} with other arguments than its own dst, src and n"),
                ("C1", z3.Not(st.written), f"writes dst before it calls {self.symbol}"),
                ("C1", z3.Or(z3.ULE(w.D + w.N, w.S), z3.ULE(w.S + w.N, w.D)),
                 f"calls {self.symbol} where the buffers overlap")]

    def after(self, w: World, st: SymState, link: int | None) -> SymState:
        """The state after the callee returned: at `link` (a call), or at a
        return to the caller's ra (a tail call: `returned` set)."""
        new = st.clone()
        k = next(_fresh)
        # the reserved registers too: summarised only when the callee's own
        # proof under the same rules has R1 (usable)
        kept = set(CALLEE_SAVED) | {0, 10} | set(w.rules.reserved_numbers)
        for r in range(1, 32):
            if r not in kept:
                new.x[r] = z3.BitVec(f"{self.symbol}.{k}.r{r}", 64)
        new.x[1] = z3.BitVecVal(link, 64) if link is not None else st.x[1]
        new.sstatus = z3.BitVec(f"{self.symbol}.{k}.sstatus", 64)
        called = w.N != 0          # W < n then (World.preconditions)
        new.watched = z3.If(called, w.expected_byte(w.W), st.watched)
        new.written = z3.Or(st.written, called)
        new.begin(0)
        back = z3.simplify(new.x[1])
        if z3.is_bv_value(back):
            new.pc = back.as_long()
        else:
            new.returned, new.ret_target = True, back
        return new


def names_sp(prog: Program, entry: int) -> bool:
    """Whether any instruction the routine at entry can reach reads or writes sp."""
    for pc in prog.routine(entry).pcs:
        i = prog.fetch(pc)
        if SP in (getattr(i, "rd", None), getattr(i, "rs1", None), getattr(i, "rs2", None)):
            return True
    return False


def candidates(prog: Program, entry: int, kind: str) -> dict[int, tuple[str, str]]:
    """Callee entry -> (symbol, kind) for every routine that the code of the
    routine at `entry` calls, jumps or branches to directly and that a caller of
    `kind` may summarise (SUMMARISED), by the callee's symbol."""
    wanted = SUMMARISED.get(kind, ())
    if not wanted:
        return {}
    by_addr = {}
    for name, addr in sorted(prog.image.symbols.items()):   # __memcpy before memcpy
        if KINDS.get(name) in wanted:
            by_addr.setdefault(addr, (name, KINDS[name]))
    out = {}
    for pc in prog.routine(entry, opaque=frozenset(by_addr)).pcs:
        i = prog.fetch(pc)
        target = (prog.jump_target(pc) if i.name in ("jal", "jalr")
                  else pc + i.imm if i.name in BRANCHES else None)
        if target in by_addr and target != entry:
            out[target] = by_addr[target]
    return out


def overlapping_call(image, symbol: str, kind: str, callee: int):
    """A sample run of the routine that enters the callee while its
    buffers overlap, as (n, src - dst), or None."""
    for sc in samples(kind):
        if not sc.N or not (sc.D < sc.S + sc.N and sc.S < sc.D + sc.N):
            continue
        out = run(image, symbol, sc, trace_pcs=(callee,), record_loads=False)
        if any(pc == callee for pc, *_ in out.snapshots):
            return sc.N, sc.S - sc.D
    return None


def usable(report, kind: str, rules: bool = False) -> bool:
    """Whether a callee's report proves every clause its kind requires (R1
    too, when the caller is proved under register rules)."""
    return all(report.status.get(c) == "proved" for c in required(kind, (), rules))
