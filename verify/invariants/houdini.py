"""Invariant checking by induction (Houdini): keep the largest subset of the
guessed candidates that holds on entry to each loop head and is preserved by
every path back to a loop head.  What survives is proved inductive; the
rest is dropped, never assumed.

Role: explore every segment once (verify.symbolic.explore) and filter candidates with
Z3 models.  May import z3, verify.*.
"""
from __future__ import annotations

from collections import defaultdict

import z3

from copygen.verify.invariants.candidates import Cand, bound_key, formula, strength, strongest, term_exprs
from copygen.verify.symbolic.explore import Explorer, merge_cut_ends
from copygen.verify.solver.budget import Query
from copygen.verify.invariants.liveness import live_at
from copygen.verify.symbolic.nowrap import lemmas
from copygen.verify.solver.parallel import fork_map
from copygen.verify.symbolic.symstate import SymState
from copygen.verify.contract.world import BV8, BV64, World
from copygen.verify.symbolic.z3ops import bv

# Budget per query about registers (verify.solver.budget); what a batch gives up
# on is tried alone.  A batch gets more: one that needs a few seconds
# costs less than its families asked one by one after it gave up
# (CHANGELOG.md has the figures).
TIMEOUT_MS = 3000
BATCH_MS = 10000
SP = 2
MEMORY_KINDS = ("cursor", "rcursor", "pcursor", "word")


def fresh_state(world: World, pc: int, base: dict[int, str] | None = None,
                frame: dict | None = None, entry: int = 0) -> SymState:
    """An arbitrary state at loop head pc.  A register that moves with a
    buffer is written term + fresh offset: the same set of states, but the
    solver sees D + W - (D + off) simplify to W - off.  `frame` maps a
    register number or "stack" to the value every path into the head
    brings (see _explore): pinned, stack accesses from the head are
    recognised and what the prologue saved is still known.  The state's
    variables are named by the head's distance from the routine's `entry`:
    the same code at another address asks the solver the same queries
    (verify.solver.answers keeps their answers)."""
    tag = f"L{pc - entry:x}" if pc >= entry else f"Lm{entry - pc:x}"
    terms = term_exprs(world)
    xs = [bv(0)] + [z3.BitVec(f"{tag}_x{i}", 64) for i in range(1, 32)]
    for r, t in (base or {}).items():
        xs[r] = z3.simplify(terms[t] + xs[r])
    stack = z3.Array(f"{tag}_stack", BV64, BV8)
    pins = frame or {}
    for k, v in pins.items():
        if k == "stack":
            stack = v
        else:
            xs[k] = v
    return SymState(world, pc, xs, z3.BitVec(f"{tag}_sstatus", 64), z3.BitVec(f"{tag}_dstW", 8),
                    z3.Bool(f"{tag}_written"), stack, pins=pins)


class Proof:
    """The segments of one routine and the invariants at its loop heads."""

    def __init__(self, prog, routine, world: World, bases: dict | None = None):
        self.prog, self.routine, self.world = prog, routine, world
        self.terms = term_exprs(world)
        self.pre = world.preconditions()
        self.heads, self.segments = _explore(prog, routine, world, bases or {})
        live = live_at(prog, routine)
        for _, seg in self.segments:
            seg.ends = merge_cut_ends(seg.ends, {pc: live[pc] for pc in self.heads})
        self.inv: dict[int, list[Cand]] = {pc: [] for pc in self.heads}
        from copygen.verify.checks.memcheck import MemoryChecks
        self.data = MemoryChecks(self)

    def formulas(self, cands, st: SymState) -> list:
        return [formula(c, st.x, st.sstatus, st.watched, st.written, self.world, self.terms)
                for c in cands]

    def assumptions(self, start: int | None) -> list:
        if start is None:
            return []
        return self.formulas(strongest(self.inv[start]), self.heads[start])

    def solver(self, start: int | None, cond: list, goal, read=()) -> Query:
        """A one-shot query holding the preconditions, the start's invariants, the
        path condition and the negated goal; for facts about registers, so
        the invariants enter without their memory contents (a weaker
        hypothesis: still sound, and pure bit-vector queries are much
        faster).  Facts about the fault point the goal cannot need are left
        out (World.fault_free); `read`: formulas the caller evaluates in a
        model, which must not need them either.  The no-wrap lemmas of
        every pointer comparison go in (verify.symbolic.nowrap)."""
        facts = self.world.fault_free([*self.pre, *self.data.bv_facts(start), *cond],
                                      z3.And(goal, *read))
        return Query([*facts, *lemmas(self.world, [*facts, goal, *read]), z3.Not(goal)])

    def houdini(self, guesses: dict[int, list[Cand]], jobs: int = 1) -> dict[int, list[Cand]]:
        """The greatest inductive subset of the guesses.  Facts about registers
        settle first (cheap queries, the memory guesses assumed meanwhile);
        then the memory guesses are checked too.  A path is checked again
        only when the invariant at its start has shrunk since."""
        self.inv = {pc: list(guesses.get(pc, [])) for pc in self.heads}
        ends = [(start, end) for start, seg in self.segments for end in seg.ends
                if end.kind == "cut"]
        for stage in stages(ends):
            into = [(start, end) for start, end in ends if end.pc in stage]
            seen_plain: dict[int, int] = {}
            self._fixpoint(into, jobs, seen_plain, None)
            self._fixpoint(into, jobs, seen_plain, {})
        return self.inv

    def _fixpoint(self, ends: list, jobs: int, seen_plain: dict, seen_mem: dict | None) -> None:
        """Rounds until nothing changes; `seen_*` map a path to the size of its
        start's invariant when it was last checked (sets only shrink).  With
        seen_mem None the memory candidates are left alone.  `ends` are
        the paths into one stage's heads; a round checks those from
        outside the stage while any is due, then the ones round it."""
        stage = {end.pc for _, end in ends}

        def version(start) -> int:
            return -1 if start is None else len(self.inv[start])
        while True:
            todo = []
            for i, (start, _) in enumerate(ends):
                plain = seen_plain.get(i) != version(start)
                mem = seen_mem is not None and seen_mem.get(i) != version(start)
                if plain or mem:
                    todo.append((i, plain, mem))
            if not todo:
                return
            # paths from outside the stage first: their starts are settled,
            # and what they drop at a head shrinks the start of the paths
            # round the stage before those are checked
            outside = [t for t in todo if ends[t[0]][0] not in stage]
            todo = outside or todo
            for i, plain, mem in todo:
                seen_plain[i] = version(ends[i][0])
                if seen_mem is not None:
                    seen_mem[i] = version(ends[i][0])
            self.data.prepare([ends[i][0] for i, _, mem in todo if mem], jobs)
            kept = fork_map(lambda k: self._kept(*ends[todo[k][0]], *todo[k][1:]), len(todo), jobs)
            # what the solver gave up on in a batch: one family at a time,
            # all of them spread over the processes
            hard = [(k, group) for k, (_, groups) in enumerate(kept) for group in groups]
            extra = fork_map(lambda h: self._first_provable(*ends[todo[hard[h][0]][0]], hard[h][1]),
                             len(hard), jobs)
            keep = [set(k) for k, _ in kept]
            for (k, _), proven in zip(hard, extra):
                keep[k] |= set(proven)
            for (i, _, _), ks in zip(todo, keep):
                pc = ends[i][1].pc
                self.inv[pc] = [c for c in self.inv[pc] if c in ks]

    def _kept(self, start, end, plain: bool, memory: bool) -> tuple[list, list]:
        """The candidates at end.pc this path keeps, checking the register
        facts if `plain` (in one query) and the memory ones if `memory` (one
        at a time: harder for the solver); the others are kept as they are.
        Also the families of register facts the batch query gave up on."""
        cands = self.inv[end.pc]
        regs = [c for c in cands if c.kind not in MEMORY_KINDS]
        keep, hard = self._filter_plain(start, end, regs) if plain else (regs, [])
        mem = [c for c in cands if c.kind in MEMORY_KINDS]
        keep += [c for c in mem if not memory or self.data.holds(start, end, c)]
        return keep, hard

    def _filter_plain(self, start, end, cands) -> tuple[list, list]:
        """Bounds of a family are tried strongest first: when one holds, the
        weaker ones follow without a query; when it fails, the next weaker
        one the counter-models so far do not already falsify is tried.
        Returns what holds, and the families (strongest first) left
        undecided because the solver gave up."""
        chain: dict = defaultdict(list)
        for c in cands:
            if bound_key(c) is not None:
                chain[bound_key(c)].append(c)
        for members in chain.values():
            members.sort(key=strength, reverse=True)
        pos = dict.fromkeys(chain, 0)
        active = [c for c in cands if bound_key(c) is None] + [m[0] for m in chain.values()]
        proven, hard = [], []
        while active:
            waiting = [m for k, ms in chain.items() for m in ms[pos[k] + 1:]]
            kept, undecided, refuted = self._filter_batch(start, end, active, waiting)
            proven += kept
            nxt = []
            for c in active:
                k = bound_key(c)
                if c in undecided:
                    hard.append(chain[k][pos[k]:] if k is not None else [c])
                elif c not in kept and k is not None:
                    pos[k] += 1
                    while pos[k] < len(chain[k]) and chain[k][pos[k]] in refuted:
                        pos[k] += 1
                    if pos[k] < len(chain[k]):
                        nxt.append(chain[k][pos[k]])
            active = nxt
        implied = [w for c in proven if bound_key(c) is not None
                   for w in chain[bound_key(c)][pos[bound_key(c)] + 1:]]
        return proven + implied, hard

    def _first_provable(self, start, end, group: list) -> list:
        """The strongest member of a family (strongest first) that holds on its
        own, with the weaker ones it implies; [] if none does, or once the
        solver gives up on one."""
        for i, c in enumerate(group):
            (f,) = self.formulas([c], end.state)
            r = self.solver(start, end.cond, f).check(TIMEOUT_MS)
            if r == z3.unsat:
                return group[i:]
            if r == z3.unknown:     # a weaker bound needs the same reasoning: as hard
                return []
        return []

    def _filter_batch(self, start, end, targets, waiting=()) -> tuple[list, list, set]:
        """(those that hold, those undecided, those of `waiting` some
        counter-model falsifies): one query for all, each counter-model
        drops the targets it falsifies; when the solver gives up, every
        target left is undecided.  A fresh one-shot solver per query: Z3's
        incremental solver, pushing and popping the goal, is weaker on
        these conjunctions, whose facts differ from query to query."""
        refuted: set = set()
        wait_fs = self.formulas(waiting, end.state)
        while targets:
            fs = self.formulas(targets, end.state)
            q = self.solver(start, end.cond, z3.And(*fs), read=wait_fs)
            r = q.check(BATCH_MS)
            if r == z3.unsat:
                break
            if r == z3.unknown:
                return [], targets, refuted
            truth = q.true_in_model([*fs, *wait_fs])
            keep = [c for c, ok in zip(targets, truth) if ok]
            refuted |= {c for c, ok in zip(waiting, truth[len(fs):]) if not ok}
            assert len(keep) < len(targets)
            targets = keep
        return targets, [], refuted


def stages(ends: list) -> list[set]:
    """The loop heads in the order their invariants can be settled: a head
    comes after every head with a path into it, and heads that reach each
    other (a nest of loops) share a stage.  Heads of one stage do not
    depend on each other.  Settling stage by stage checks each path from a
    settled head once, with the head's final invariant (one fixpoint over
    every path at once re-checked each path whenever its start shrank).
    It pays only with guesses that runs have already pruned (faulting runs
    too, verify.invariants.infer): the hard paths into a head then meet few false
    candidates (CHANGELOG.md has the figures)."""
    succ: dict[int, set] = defaultdict(set)
    heads = {end.pc for _, end in ends} | {start for start, _ in ends if start is not None}
    for start, end in ends:
        if start is not None:
            succ[start].add(end.pc)
    reach = {h: _reachable(h, succ) for h in heads}
    comp = {h: frozenset(g for g in heads if g == h or (g in reach[h] and h in reach[g]))
            for h in heads}
    depth: dict[frozenset, int] = {}

    def level(c: frozenset) -> int:
        if c not in depth:
            preds = {comp[h] for h in heads if h not in c and reach[h] & c}
            depth[c] = 1 + max((level(p) for p in preds), default=-1)
        return depth[c]
    out: dict[int, set] = defaultdict(set)
    for c in set(comp.values()):
        out[level(c)] |= c
    return [out[k] for k in sorted(out)]


def _reachable(h: int, succ: dict) -> set:
    seen: set = set()
    todo = list(succ.get(h, ()))
    while todo:
        g = todo.pop()
        if g not in seen:
            seen.add(g)
            todo.extend(succ.get(g, ()))
    return seen


def _explore(prog, routine, world: World, bases: dict) -> tuple[dict, list]:
    """Symbolic paths from the entry and from every loop head, with the
    heads' frames pinned (see _frame).  A pin some path into its head does
    not bring is dropped and the paths explored again: those from the
    heads whose frame changed (the others' paths are the same)."""
    dropped: set = set()
    before: dict = {}
    while True:
        heads, segments = _explore_once(prog, routine, world, bases, dropped, before)
        bad = {(e.pc, k) for _, seg in segments for e in seg.ends if e.kind == "cut"
               for k, v in heads[e.pc].pins.items() if not _pinned(e.state, k).eq(v)}
        if not bad:
            return dict(sorted(heads.items())), segments
        dropped |= bad
        before = {start: (heads.get(start), seg) for start, seg in segments}


def _pinned(st: SymState, key):
    return st.stack if key == "stack" else z3.simplify(st.x[key])


def _frame(states: list, world: World, dropped: set, code) -> dict:
    """What a head can take over from the paths into it (`states`, those
    explored so far: a later one that breaks a pin is found after
    exploring): sp, the stack array, every register still holding its
    value from the entry (GCC's prologue saves s-registers before a loop
    and restores them after it: the epilogue's loads must see the saved
    values), and every register holding a return address: the caller's
    ra, or a constant address in the code (`code`: pc -> bool), which a
    call inside the routine left in ra: the callee's return after its loop
    must go back to the call site, not out of the routine; and every
    register holding an address in the entry's stack frame (a frame
    pointer: a callee that saves it on its own stack must restore the
    caller's).  Only what every one of the states brings alike."""
    if not states:
        return {}
    st = states[0]

    def kept(r: int) -> bool:
        v = st.x[r]
        return (v.eq(world.R0[r]) or v.eq(world.RA0) or (z3.is_bv_value(v) and code(v.as_long()))
                or (r != SP and z3.is_bv_value(z3.simplify(v - world.R0[SP]))))
    keys = [SP, "stack"] + [r for r in range(1, 32) if kept(r)]
    out = {}
    for k in keys:
        v = _pinned(st, k)
        if (st.pc, k) not in dropped and all(_pinned(o, k).eq(v) for o in states[1:]):
            out[k] = v
    return out


def _same_frame(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k].eq(b[k]) for k in a)


def _explore_once(prog, routine, world: World, bases: dict, dropped: set, before: dict):
    """One round: each head's frame from the paths into it explored before
    it; `before` (start -> (head state, segment)) holds a round's segments,
    reused where a head's frame is the one it had then."""
    ex = Explorer(prog, world, routine.cut_points, [], routine.unrolled)
    entry = before[None][1] if None in before else ex.run(SymState.at_entry(world, routine.entry))
    segments = [(None, entry)]
    into: dict[int, list] = defaultdict(list)
    heads: dict[int, SymState] = {}
    pending = sorted(routine.cut_points)
    while True:
        for e in segments[-1][1].ends:
            if e.kind == "cut":
                into[e.pc].append(e.state)
        if not pending:
            return heads, segments
        pc = next((p for p in pending if p in into), pending[0])
        pending.remove(pc)
        frame = _frame(into.get(pc, []), world, dropped, lambda a: a in routine.pcs)
        old = before.get(pc)
        if old is not None and _same_frame(old[0].pins, frame):
            heads[pc], seg = old
        else:
            heads[pc] = fresh_state(world, pc, bases.get(pc), frame, routine.entry)
            seg = ex.run(heads[pc].clone())
        segments.append((pc, seg))
