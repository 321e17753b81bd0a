"""Symbolic exploration of one segment: from a start (the entry or a loop
head, with its invariant assumed) along every feasible path until each path
reaches a loop head, returns, or takes a fault exit that returns.  The head
of an unrolled loop (Routine.unrolled) is no end: the path runs on through
it, up to UNROLL_LIMIT times.

Along the way every access yields obligations (formulas that must hold on
that path): S2 SUM set for user accesses, B1/B2 bounds, X1 a fault that can
happen has an __ex_table entry; under register rules every instruction is
checked against them (R1: no write of a reserved register, no computed
jump through another register than the allowed one).  Paths fork at
symbolic branches and at every user access that may fault (the fault path
resumes at its fixup with the state from before the access, as the trap
handler restores it).

Role: produce `Segment` results; the prover decides what to check.
May import z3, emu.insn.semantics, verify.solver.budget, verify.contract.clauses, verify.symbolic.program,
verify.symbolic.symstate, verify.contract.rules, verify.contract.world, verify.symbolic.z3ops.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import z3

from copygen.emu.insn.semantics import SEMANTICS
from copygen.verify.solver.budget import budget
from copygen.verify.symbolic.program import Program, ProgramError
from copygen.verify.symbolic.symstate import SymState
from copygen.verify.contract.clauses import OVERLAP_KINDS
from copygen.verify.contract.rules import breaks
from copygen.verify.contract.world import SR_SUM, World
from copygen.verify.symbolic.z3ops import Z3_OPS, bv

MAX_STEPS = 20000
# a path that meets an unrolled loop head (Routine.unrolled) more often than
# this raises Unbounded: the loop is then cut there like any other
UNROLL_LIMIT = 16


class Unbounded(ProgramError):
    """A path met unrolled loop heads more than UNROLL_LIMIT times, the last
    time at `pc`."""

    def __init__(self, pc: int):
        super().__init__(f"a path meets the unrolled loop at {pc:#x} more than "
                         f"{UNROLL_LIMIT} times")
        self.pc = pc


@dataclass
class Obligation:
    clause: str
    pc: int
    cond: list            # path condition (list of Bool)
    formula: z3.BoolRef   # must hold under cond
    what: str
    points: tuple = ()    # the values of W that matter, when the formula is
                          # about the watched byte (see verify.checks.prove.Check)


@dataclass
class End:
    kind: str             # cut | ret
    pc: int
    state: SymState
    cond: list
    faulted: bool = False   # went through a fixup on the way


@dataclass
class StoreRec:
    """A store to the destination on some path: the byte-content proofs check
    each store once (verify.checks.memcheck) instead of every path end's bytes."""
    pc: int
    cond: list
    addr: z3.BitVecRef
    size: int
    value: z3.BitVecRef


@dataclass
class Segment:
    start: int
    ends: list = field(default_factory=list)
    obligations: list = field(default_factory=list)
    stores: list = field(default_factory=list)
    steps: int = 0


def merge_cut_ends(ends: list, live: dict) -> list:
    """Paths that reach the same loop head in the same state, as far as the
    registers live there (`live`: pc -> register numbers), sstatus, the stack
    and the stores go, become one end whose condition is the disjunction of
    theirs: the same set of states, fewer queries.  (The word faults of a
    block all resume the byte loop at the same cursors.)"""
    groups: dict = {}
    out = []
    for e in ends:
        if e.kind != "cut" or e.pc not in live:
            out.append(e)
            continue
        st = e.state
        key = (e.pc, tuple(st.x[r].get_id() for r in sorted(live[e.pc])), st.sstatus.get_id(),
               st.watched.get_id(), st.written.get_id(), st.stack.get_id(), st.stores)
        groups.setdefault(key, []).append(e)
    for es in groups.values():
        if len(es) == 1:
            out.append(es[0])
            continue
        conds = [e.cond for e in es]
        k = 0
        while all(len(c) > k and z3.eq(c[k], conds[0][k]) for c in conds):
            k += 1
        either = z3.Or(*[z3.And(*c[k:]) for c in conds])
        out.append(End("cut", es[0].pc, es[0].state, conds[0][:k] + [either],
                       any(e.faulted for e in es)))
    return out


def user_access(world: World, acc) -> bool:
    if acc.stack or acc.rom:
        return False
    side = world.user
    return (side == "dst" and acc.kind == "store") or (side == "src" and acc.kind == "load")


def access_obligations(world: World, acc, pc: int, st: SymState, cond: list) -> list:
    out = []
    if acc.stack or acc.rom:
        return out
    a, n = acc.addr, acc.size
    if user_access(world, acc):
        out.append(Obligation("S2", pc, cond, st.sstatus & bv(SR_SUM) != 0,
                              f"user {acc.kind} with SUM clear"))
    if acc.kind == "store":
        out.append(Obligation("B1", pc, cond, world.in_dst(a, n), "store outside [dst, dst+n)"))
    else:
        if world.has_source:
            ok, strict = world.in_src(a, n, False), world.in_src(a, n, True)
        else:
            ok = strict = z3.BoolVal(False)
        out.append(Obligation("B2", pc, cond, ok, "load outside the source's aligned words"))
        out.append(Obligation("B2s", pc, cond, strict, "load outside [src, src+n)"))
        if world.kind in OVERLAP_KINDS:
            out.append(Obligation("C1", pc, cond, z3.Not(world.overwritten(st.written, a, n)),
                                  "a load reads a source byte the routine already overwrote",
                                  tuple(z3.simplify(a + bv(k) - world.D) for k in range(n))))
    return out


class Explorer:
    def __init__(self, prog: Program, world: World, cut_points, assumptions: list,
                 unrolled=frozenset()):
        self.prog, self.world, self.cuts = prog, world, set(cut_points)
        self.unrolled = frozenset(unrolled)
        self.solver = z3.Solver()
        budget(self.solver, 20000)
        self.solver.add(*world.preconditions(), *assumptions)

    def feasible(self, cond: list, witness=None) -> tuple[bool, tuple | None]:
        """Whether cond may hold, and a witness of it: (a model of the
        preconditions and cond[:k], k).  A witness of a path's condition
        that also satisfies the conjuncts appended since settles a branch
        direction or an access that may not fault without asking the
        solver (one direction of every branch holds in it)."""
        if witness is not None:
            model, k = witness
            if all(z3.is_true(model.eval(c, model_completion=True)) for c in cond[k:]):
                return True, (model, len(cond))
        r = self.solver.check(*cond)
        if r == z3.sat:
            return True, (self.solver.model(), len(cond))
        return r != z3.unsat, None

    def run(self, start: SymState, cond: list | None = None) -> Segment:
        seg = Segment(start.pc)
        start.rom = self.prog.read_const
        # the last item: how often the path met an unrolled loop head
        work = [(start, list(cond or []), False, True, None, 0)]
        while work:
            st, cond, faulted, first, witness, laps = work.pop()
            if not first and st.pc in self.cuts:
                seg.ends.append(End("cut", st.pc, st, cond, faulted))
                continue
            if st.pc in self.unrolled:
                laps += 1
                if laps > UNROLL_LIMIT:
                    raise Unbounded(st.pc)
            seg.steps += 1
            if seg.steps > MAX_STEPS:
                raise ProgramError(f"segment from {start.pc:#x} runs past {MAX_STEPS} steps")
            work += [(*item, laps) for item in self._step(seg, st, cond, faulted, witness)]
        return seg

    def _step(self, seg: Segment, st: SymState, cond: list, faulted: bool, witness) -> list:
        insn = self.prog.fetch(st.pc)
        if self.world.rules:
            # R1 (verify.contract.rules): a write of a reserved register or a
            # jump through another register than the allowed one, on a
            # feasible path, breaks the rule whatever the values
            why = breaks(insn, self.world.rules)
            if why is not None:
                seg.obligations.append(Obligation("R1", st.pc, cond, z3.BoolVal(False), why))
        if insn.name in ("jal", "jalr") and self.world.summaries:
            summary = self.world.summaries.get(self.prog.jump_target(st.pc))
            if summary is not None:
                return self._summarised(seg, st, insn, summary, cond, faulted, witness)
        sem = SEMANTICS.get(insn.name)
        if sem is None:
            raise ProgramError(f"no semantics for {insn.name} at {st.pc:#x}")
        new = st.clone()
        new.begin(insn.length)
        sem(insn, Z3_OPS, new)
        out = []
        cont_cond = list(cond)
        for acc in new.accesses:
            seg.obligations += access_obligations(self.world, acc, st.pc, st, cond)
            if acc.kind == "store" and not acc.stack:
                new.stores += (len(seg.stores),)
                seg.stores.append(StoreRec(st.pc, cond, acc.addr, acc.size, acc.value))
            if not user_access(self.world, acc):
                continue
            fc = self.world.user_access_faults(acc.addr, acc.size)
            fixup = self.prog.image.extable.get(st.pc)
            if fixup is None:
                seg.obligations.append(Obligation("X1", st.pc, cond, z3.Not(fc),
                                                  "a faulting user access has no fixup"))
            else:
                ok, fw = self.feasible(cond + [fc], witness)
                if ok:
                    f = st.clone()
                    f.pc = fixup
                    out.append((f, cond + [fc], True, False, fw))
            cont_cond = cont_cond + [z3.Not(fc)]
        if len(cont_cond) > len(cond):
            ok, witness = self.feasible(cont_cond, witness)
            if not ok:
                return out
        if new.returned:
            return out + self._computed_jump(seg, st.pc, new, cont_cond, faulted, witness)
        if new.branch_to is None:
            new.pc = new.next_pc
            return out + [(new, cont_cond, faulted, False, witness)]
        c, target = new.branch_to
        c = z3.simplify(c)
        tail = self.world.summaries.get(target) if self.world.summaries else None
        for taken, pc in ((c, target), (z3.simplify(z3.Not(c)), new.next_pc)):
            if z3.is_false(taken):
                continue
            ok, pw = (True, witness) if z3.is_true(taken) else \
                self.feasible(cont_cond + [taken], witness)
            if not ok:
                continue
            path = cont_cond if z3.is_true(taken) else cont_cond + [taken]
            if tail is not None and pc == target:
                # a branch into a summarised routine: a tail call of it
                out += self._summarised(seg, st, insn, tail, path, faulted, pw, link=False)
                continue
            s2 = new.clone()
            s2.pc = pc
            out.append((s2, path, faulted, False, pw))
        return out

    def _summarised(self, seg: Segment, st: SymState, insn, summary, cond: list,
                    faulted: bool, witness, link: bool = True) -> list:
        """A call (or tail call: a jump that does not link, or a branch,
        `link` False) of a routine proved on its own: its obligations on
        this path, then the state its contract leaves (verify.symbolic.summary), at
        the return site or returned to ra."""
        for clause, formula, what in summary.obligations(self.world, st):
            seg.obligations.append(Obligation(clause, st.pc, cond, formula, what))
        linked = link and insn.rd
        new = summary.after(self.world, st, st.pc + insn.length if linked else None)
        if new.returned:
            seg.ends.append(End("ret", st.pc, new, cond, faulted))
            return []
        return [(new, cond, faulted, False, witness)]

    def _computed_jump(self, seg: Segment, pc: int, new: SymState, cond: list,
                       faulted: bool, witness) -> list:
        """A jump through a register: to each instruction of a run it may
        enter (Program.run_targets) that the path allows, and, where the
        value may lie outside the run, a return (A1 checks it goes to ra)."""
        out = []
        targets = self.prog.run_targets(pc) if new.ret_target is not None else ()
        for t in targets:
            into = cond + [new.ret_target == t]
            ok, tw = self.feasible(into, witness)
            if ok:
                s2 = new.clone()
                s2.pc, s2.returned, s2.ret_target = t, False, None
                out.append((s2, into, faulted, False, tw))
        if not targets:
            seg.ends.append(End("ret", pc, new, cond, faulted))
            return out
        outside = z3.And(*[new.ret_target != t for t in targets])
        if self.feasible(cond + [outside], witness)[0]:
            seg.ends.append(End("ret", pc, new, cond + [outside], faulted))
        return out

