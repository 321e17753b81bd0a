"""The vector routines' own contracts (__asm_vector_usercopy and
__asm_vector_clear_user), proved for every n at one fixed VLEN.

The routine is explored symbolically (verify.vector.vstate: emu.insn.vsemantics over Z3)
from its entry to its loop head and from the loop head once round, in the
worlds of both directions (kinds "to" and "from" of verify.contract.world: the user
buffer is dst or src).  The loop invariant is the strip-mined copy's, over
a fresh K (the bytes copied so far): the registers the entry hands the
head as dst, src and n are D + K, S + K and N - K with K <= N; registers
that hold a constant or their entry value there keep it; sstatus is as at
the head's first arrival; vstart is 0; dst[W] was written exactly when
W < K, and then holds SRC[S + W], else its old value.  Everything else
(other registers, vl, vtype, the vector registers) is havocked.  The
invariant is a hint read off the code's first arrival, and checked:
it must hold there with K = 0 and again on every path back to the head,
with K' read off dst's register.  T1: n's register decreases on every path
back.

The clear (__asm_vector_clear_user, dst and n) is proved the same way in
the clear world (verify.contract.world, kind "clear"): the invariant has no source
register and its written bytes hold 0 (World.expected_byte), and the
register group of zeros its splat leaves before the loop is part of it
(each vector register byte that holds a constant at the first arrival
and that no path round the loop changes).  Its clauses are the scalar
clear's and V0 (verify.contract.clauses.vector_clear_clauses): with stores only,
C5 and C6 hold for every fault.

Clauses (verify.contract.clauses.VECTOR): C1-C4, S1, S2, A1, B1, B2, B2s, X1, T1 as
for the scalar copy; V0: vstart is 0 at every return; and on a fault
either C5 and C6 (exact: a store fault, or a fault-only-first load) or,
for plain loads in the "from" world, V5: the bytes counted as not copied
start at most one chunk (VLMAX bytes) before the first inaccessible byte,
the kernel's design (the C glue hands the rest to the scalar copy, which
finds the exact byte).

Role: produce a verify.checks.prove.RoutineReport for a vector routine.  May
import z3, emu.insn.vsemantics, verify.solver.budget, verify.contract.clauses, verify.symbolic.explore, verify.symbolic.program,
verify.checks.prove, verify.vector.vreplay, verify.vector.vstate, verify.contract.world, verify.symbolic.z3ops.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import z3

from copygen.emu.insn.vsemantics import VILL
from copygen.verify.solver.budget import shared_check
from copygen.verify.symbolic.explore import End, Segment
from copygen.verify.contract.clauses import holds_sum, vector_clauses, vector_clear_clauses
from copygen.verify.symbolic.program import Program, ProgramError
from copygen.verify.checks.prove import RoutineReport
from copygen.verify.vector.vreplay import confirm
from copygen.verify.vector.vstate import VecExplorer, VecSymState
from copygen.verify.contract.world import CALLEE_SAVED, SR_SUM, World
from copygen.verify.symbolic.z3ops import bv

SYMBOL = "__asm_vector_usercopy"
# mainline's loop for callers that hold SUM; its __asm_vector_usercopy is
# then a wrapper that sets SUM around a call of it
SUM_HELD_SYMBOL = "__asm_vector_usercopy_sum_enabled"
CLEAR_SYMBOL = "__asm_vector_clear_user"
# each query's budget, in idle milliseconds' worth of Z3 steps (verify.solver.budget):
# the same answer on a loaded machine as on an idle one
QUERY_MS = 120_000


@dataclass
class Roles:
    """What the first arrival at the loop head says each register is."""
    dst: int
    src: int | None        # None in the clear world
    count: int
    fixed: dict            # register -> its value at every arrival
    sstatus: object
    vfixed: dict           # vector register byte -> the constant it holds at every arrival


def _roles(world: World, end) -> Roles:
    st, found = end.state, {}
    wanted = (("dst", world.D), ("src", world.S), ("count", world.N)) if world.has_source else \
        (("dst", world.D), ("count", world.N))
    for r in range(1, 32):
        for name, sym in wanted:
            if z3.eq(st.x[r], sym):
                found[name] = r
    # a constant or any register's entry value (a wrapper keeps ra in a
    # temporary across its call of the loop)
    fixed = {r: st.x[r] for r in range(1, 32) if r not in found.values()
             and (z3.is_bv_value(st.x[r]) or any(z3.eq(st.x[r], v) for v in world.R0))}
    missing = {name for name, _ in wanted} - set(found)
    if missing:
        raise ProgramError(f"loop head {end.pc:#x}: no register holds {', '.join(sorted(missing))}")
    vfixed = {i: v for i, v in st.vregs.items() if z3.is_bv_value(v)}
    return Roles(found["dst"], found.get("src"), found["count"], fixed, st.sstatus, vfixed)


def _head_state(world: World, pc: int, roles: Roles, vlen: int, k) -> VecSymState:
    st = VecSymState.at_vector_entry(world, pc, vlen)
    st.x = [bv(0)] + [z3.BitVec(f"H_x{r}", 64) for r in range(1, 32)]
    for r, v in roles.fixed.items():
        st.x[r] = v
    st.x[roles.dst] = world.D + k
    if roles.src is not None:
        st.x[roles.src] = world.S + k
    st.x[roles.count] = world.N - k
    st.sstatus = roles.sstatus
    st.setup_vector(vlen, VILL, z3.BitVec("H_vl", 64), bv(0), "H_v")
    st.vregs.update(roles.vfixed)
    st.written = z3.ULT(world.W, k)
    st.watched = z3.If(st.written, world.expected_byte(world.W), world.DST0)
    return st


def _invariant(world: World, roles: Roles, st, k) -> list[tuple[str, object]]:
    """(clause, formula) that the state `st` satisfies the invariant at K = k."""
    copied = world.expected_byte(world.W)
    src = [] if roles.src is None else [("C1", st.x[roles.src] == world.S + k)]
    vregs = z3.simplify(z3.And(True, *[st.vreg_byte(i) == v for i, v in roles.vfixed.items()]))
    inv = [("T1", z3.ULE(k, world.N)),
           ("C1", st.x[roles.dst] == world.D + k), *src, ("C1", st.x[roles.count] == world.N - k),
           ("C1", vregs),
           ("S1", st.sstatus == roles.sstatus), ("V0", st.vstart == 0),
           # the bytes before K were accessed without a fault
           ("V5", z3.Or(world.NF, z3.ULE(k, world.FO))),
           ("C3", st.written == z3.ULT(world.W, k)),
           ("C3", z3.Implies(st.written, st.watched == copied)),
           ("C4", z3.Implies(z3.Not(st.written), st.watched == world.DST0))]
    return inv + [("A1", st.x[r] == v) for r, v in roles.fixed.items()]


class VectorProof:
    """Checks gathered per clause; the first failing one is the clause's failure."""

    def __init__(self, world: World, vlmax: int, exact_loads: bool):
        self.w, self.vlmax, self.exact_loads = world, vlmax, exact_loads
        self.failures: dict[str, str] = {}
        self.queries: dict[str, list] = {}      # clause -> the failing query, for vreplay
        self.checked: set[str] = set()

    def check(self, clause: str, cond: list, goal, what: str) -> None:
        self.checked.add(clause)
        if clause in self.failures:
            return
        r, s = shared_check([*self.w.preconditions(), *cond, z3.Not(goal)], QUERY_MS)
        if r != z3.unsat:
            self.queries[clause] = [*cond, z3.Not(goal)]
        if r == z3.sat:
            m = s.model()
            got = ", ".join(f"{n}={m.eval(v, model_completion=True)}"
                            for n, v in (("n", self.w.N), ("FO", self.w.FO), ("W", self.w.W)))
            self.failures[clause] = f"{what} (e.g. {got})"
        elif r == z3.unknown:
            self.failures[clause] = f"{what} (solver gave up)"

    def returns(self, st, cond: list) -> None:
        w, ret = self.w, st.x[10]
        saved = z3.And(*[st.x[r] == w.R0[r] for r in CALLEE_SAVED])
        if st.ret_target is not None:
            saved = z3.And(saved, st.ret_target == (w.RA0 & bv(~1)))
        self.check("A1", cond, saved, "callee-saved register or ra changed")
        self.check("S1", cond, st.sstatus & bv(SR_SUM) == w.sum_at_entry,
                   "returns with SUM clear, its caller holds it" if w.sum_held
                   else "returns with SUM set")
        self.check("V0", cond, st.vstart == 0, "returns with vstart not 0")
        nf, f = cond + [w.NF], cond + [z3.Not(w.NF)]
        good = z3.And(st.written, st.watched == w.expected_byte(w.W))
        self.check("C1", nf, ret == 0, "returns non-zero without a fault")
        self.check("C1", nf + [z3.ULT(w.W, w.N)], good, "a byte not copied without a fault")
        self.check("C2", f, z3.ULE(ret, w.N), "returns more than n")
        f = f + [z3.ULE(ret, w.N)]
        self.check("C3", f + [z3.ULT(w.W, w.N - ret)], good,
                   "a byte counted as copied does not hold the source byte")
        self.check("C4", f + [z3.ULE(w.N - ret, w.W)], z3.Not(st.written),
                   "a byte counted as not copied was modified")
        if self.exact_loads or w.user == "dst":
            self.check("C5", f, z3.Implies(ret == w.N, w.FO == 0),
                       "returns n although bytes before the fault were accessible")
            self.check("C6", f, w.N - ret == w.FO, "does not return exactly the bytes not stored")
        else:
            self.check("V5", f, z3.And(z3.ULE(w.N - ret, w.FO),
                                       z3.ULT(w.FO, w.N - ret + self.vlmax)),
                       "counts more than the faulting chunk as not copied")


def _explore(prog, world, cuts, start, assumptions):
    return VecExplorer(prog, world, cuts, assumptions).run(start)


def _loop(prog, world, h, roles: Roles, vlen: int, k):
    """The loop once round, from the invariant; a register the first
    arrival holds fixed but the loop changes is dropped from it (and the
    loop explored again), as Houdini would."""
    for _ in range(len(roles.fixed) + 2):
        seg = _explore(prog, world, {h}, _head_state(world, h, roles, vlen, k),
                       [z3.ULE(k, world.N), z3.Or(world.NF, z3.ULE(k, world.FO))])
        back = [e for e in seg.ends if e.kind == "cut"]
        moved = {r for r, v in roles.fixed.items()
                 if any(not z3.eq(z3.simplify(e.state.x[r]), v) for e in back)}
        vmoved = {i for i, v in roles.vfixed.items()
                  if any(i not in e.state.vregs or not z3.eq(e.state.vregs[i], v) for e in back)}
        if not moved and not vmoved:
            return seg
        roles.fixed = {r: v for r, v in roles.fixed.items() if r not in moved}
        roles.vfixed = {i: v for i, v in roles.vfixed.items() if i not in vmoved}
    return seg


def prove_world(prog: Program, entry: int, kind: str, vlen: int, vlmax: int,
                exact_loads: bool, sum_held: bool = False) -> VectorProof:
    """Every clause in one world ("to": dst is user memory; "from": src),
    SUM clear at entry or, `sum_held`, set by the caller and to stay set."""
    world = World(kind, sum_held)
    proof = VectorProof(world, vlmax, exact_loads)
    heads = sorted(prog.routine(entry).cut_points)
    if len(heads) != 1:
        raise ProgramError(f"expected one loop head, found {len(heads)}")
    h = heads[0]
    start = VecSymState.at_vector_entry(world, entry, vlen)
    if h == entry:      # the loop starts at the entry (mainline's _sum_enabled)
        first = Segment(entry, ends=[End("cut", entry, start, [])])
    else:
        first = _explore(prog, world, {h}, start, [])
    arrivals = [e for e in first.ends if e.kind == "cut"]
    if not arrivals:
        raise ProgramError(f"the loop head {h:#x} is never reached")
    roles = _roles(world, arrivals[0])
    k, k2 = z3.BitVec("K", 64), None
    loop = _loop(prog, world, h, roles, vlen, k)
    head = [z3.ULE(k, world.N), z3.Or(world.NF, z3.ULE(k, world.FO))]
    for seg, assume in ((first, []), (loop, head)):
        for ob in seg.obligations:
            proof.check(ob.clause, assume + ob.cond, ob.formula, ob.what)
        for end in seg.ends:
            if end.kind == "ret":
                proof.returns(end.state, assume + end.cond)
                continue
            k2 = bv(0) if seg is first else z3.simplify(end.state.x[roles.dst] - world.D)
            for clause, goal in _invariant(world, roles, end.state, k2):
                proof.check(clause, assume + end.cond, goal, "the loop invariant does not hold "
                            "on a path " + ("into" if seg is first else "back to") + " the loop")
            if seg is loop:
                proof.check("T1", assume + end.cond,
                            z3.ULT(end.state.x[roles.count], world.N - k),
                            "n does not decrease round the loop")
    return proof


def prove_vector(elf: str, vlen: int, vlmax_bytes: int | None = None,
                 exact_loads: bool | None = None, symbol: str = SYMBOL) -> RoutineReport:
    """The vector routine's contract at VLEN `vlen`, in both worlds, for
    `symbol` (__asm_vector_usercopy, or mainline's _sum_enabled loop, proved
    with SUM held).  `vlmax_bytes` (V5's chunk) defaults to the largest
    chunk in bytes, LMUL 8's VLEN bytes at any element width; `exact_loads` (a fault-only-first load) is read off
    the code by default.  A clause whose check fails is replayed in the
    emulator (verify.vector.vreplay): violated when the run shows it, else unknown."""
    t0 = time.time()
    prog = Program.load(elf)
    entry = prog.image.address_of(symbol)
    if exact_loads is None:
        exact_loads = _uses_ff(prog, entry)
    vlmax = vlmax_bytes or vlen
    clear = symbol == CLEAR_SYMBOL
    clauses = vector_clear_clauses() if clear else vector_clauses(exact_loads)
    worlds = ("clear",) if clear else ("to", "from")
    rep = RoutineReport(symbol, "vector_clear" if clear else "vector")
    try:
        proofs = [prove_world(prog, entry, kind, vlen, vlmax, exact_loads, holds_sum(symbol))
                  for kind in worlds]
    except ProgramError as err:
        for c in clauses:
            rep.status[c], rep.detail[c] = "unknown", f"cannot analyse the code: {err}"
        rep.seconds = time.time() - t0
        return rep
    for c in clauses:
        bad = [f"{kind}: {p.failures[c]}" for kind, p in zip(worlds, proofs)
               if c in p.failures]
        rep.status[c] = "unknown" if bad else "proved"
        scope = (" (store faults: a plain load fault is V5's)"
                 if c in ("C5", "C6") and not exact_loads else "")
        rep.detail[c] = "; ".join(bad) if bad else f"for every n at VLEN {vlen}{scope}"
    for p in proofs:
        confirm(prog.image, symbol, vlen, p, rep)
    rep.seconds = time.time() - t0
    return rep


# the VLENs the language accepts (gen.front.validate_vector: 128 to 1024)
VLENS = (128, 256, 512, 1024)


def prove_vectors(elf: str, vlens: tuple[int, ...] | None = None,
                  stage=lambda name: None, symbol: str = SYMBOL) -> RoutineReport:
    """prove_vector at each VLEN (default: VLENS), one report: a clause is
    proved when it is proved at every VLEN; otherwise its status is the
    first failing VLEN's (violated before unknown), its detail names the
    VLENs that fail, and its counterexample is the smallest VLEN's."""
    t0 = time.time()
    vlens = vlens or VLENS
    reps = []
    for vlen in vlens:
        stage(f"VLEN {vlen}")
        reps.append((vlen, prove_vector(elf, vlen, symbol=symbol)))
    out = RoutineReport(symbol, reps[0][1].kind)
    for c in reps[0][1].status:
        bad = [(v, r) for v, r in reps if r.status.get(c) != "proved"]
        worst = sorted(bad, key=lambda vr: vr[1].status.get(c) != "violated")
        out.status[c] = worst[0][1].status.get(c, "unknown") if bad else "proved"
        out.detail[c] = ("; ".join(f"VLEN {v}: {r.detail.get(c, '')}" for v, r in bad) if bad else
                         reps[0][1].detail[c].replace(f"at VLEN {vlens[0]}",
                                                      f"at VLEN {', '.join(map(str, vlens))}"))
        shown = [(v, r.examples[c]) for v, r in reps if c in r.examples]
        if shown:
            out.examples[c] = {"vlen": shown[0][0], **shown[0][1]}
    out.seconds = time.time() - t0
    return out


def _uses_ff(prog: Program, entry: int) -> bool:
    return any(prog.fetch(pc).name.endswith("ff.v") for pc in prog.routine(entry).pcs)
