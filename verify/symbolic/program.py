"""The machine code under proof: decoded instructions of a linked ELF, the
static control-flow graph of one routine, and its cut points (loop heads,
and joins after loops where paths would multiply).

Role: read what ships (docs/architecture.md, "What is verified is what ships") through emu's ELF loader and
decoder.  Fault edges (user access -> __ex_table fixup) are CFG edges too.
Calls inside the routine are followed: a call's edge goes into its callee,
and the callee's returns go back to the instruction after each call of it
(mainline's fallback_scalar_usercopy calls the scalar copy between setting
and clearing SUM).
May import emu.elf, emu.insn.decode, emu.errors.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from copygen.emu.insn.decode import Insn, decode, insn_length
from copygen.emu.elf import ElfImage, read_elf
from copygen.emu.errors import IllegalInstruction

LOADS = {"lb", "lh", "lw", "ld", "lbu", "lhu", "lwu"}
STORES = {"sb", "sh", "sw", "sd"}
BRANCHES = {"beq", "bne", "blt", "bge", "bltu", "bgeu"}


# A computed jump into a run (Program.run_targets): its `la` within this
# many instructions before the jump, the run starting at most RUN_REACH
# bytes after it, at most RUN_LIMIT instructions long.
LA_WINDOW = 8
RUN_REACH = 16
RUN_LIMIT = 256


class ProgramError(Exception):
    """The code cannot be analysed (unknown jump target, runaway CFG...)."""


@dataclass
class Program:
    image: ElfImage
    _cache: dict = field(default_factory=dict)
    _runs: dict = field(default_factory=dict)      # pc -> run_targets(pc)

    @classmethod
    def load(cls, path) -> "Program":
        return cls(read_elf(path))

    @cached_property
    def _bytes(self) -> list[tuple[int, bytes]]:
        return [(s.vaddr, s.data) for s in self.image.segments if s.executable]

    def read_const(self, addr: int, size: int) -> int | None:
        """The little-endian value at addr if it lies in a read-only part of
        the image (a literal pool, .rodata), else None."""
        for seg in self.image.segments:
            if not seg.writable and seg.vaddr <= addr and addr + size <= seg.vaddr + len(seg.data):
                off = addr - seg.vaddr
                return int.from_bytes(seg.data[off:off + size], "little")
        return None

    def _read16(self, pc: int) -> int:
        for base, data in self._bytes:
            if base <= pc and pc + 2 <= base + len(data):
                return int.from_bytes(data[pc - base:pc - base + 2], "little")
        raise ProgramError(f"pc {pc:#x} is outside the code")

    def address_roles(self, pc: int, limit: int = 64) -> dict[int, str]:
        """Registers the straight-line code from pc (up to its first branch or
        jump) uses as load ("src") or store ("dst") addresses; sp excluded.
        A register used both ways is left out."""
        roles: dict[int, str] = {}
        for _ in range(limit):
            try:
                ins = self.fetch(pc)
            except ProgramError:
                break
            if ins.name in LOADS or ins.name in STORES:
                role = "src" if ins.name in LOADS else "dst"
                if ins.rs1 != 2:
                    roles[ins.rs1] = role if roles.get(ins.rs1, role) == role else "both"
            if ins.name in BRANCHES or ins.name in ("jal", "jalr"):
                break
            pc += ins.length
        return {r: v for r, v in roles.items() if v != "both"}

    def fetch(self, pc: int) -> Insn:
        insn = self._cache.get(pc)
        if insn is None:
            low = self._read16(pc)
            raw = low if insn_length(low) == 2 else low | (self._read16(pc + 2) << 16)
            insn = self._cache[pc] = decode(raw, pc)
        return insn

    def jump_target(self, pc: int) -> int | None:
        """Where the jal or jalr at pc goes when the code alone says: a jal,
        or a jalr whose base the auipc just before it set (`call` and
        `tail` as the assembler writes them when the linker does not
        relax them); None for a jump through a register (a return)."""
        i = self.fetch(pc)
        if i.name == "jal":
            return pc + i.imm
        if i.name == "jalr" and i.rs1:
            try:    # pc - 4 may be the middle of an instruction: then no pair
                prev = self.fetch(pc - 4)
            except (ProgramError, IllegalInstruction):
                return None
            if prev.name == "auipc" and prev.length == 4 and prev.rd == i.rs1:
                return (pc - 4 + prev.imm + i.imm) & ~1
        return None

    def run_targets(self, pc: int) -> tuple[int, ...]:
        """Where a computed jump into a run of straight-line code may land
        (Duff's device, as memset.S enters its 32 stores): for a `jr` whose
        register an `la` (auipc + addi) in the few instructions before it
        pointed just past the jump, every instruction from that address up
        to and including the first branch or jump after it; () for any other
        jump through a register.  Only where the jump may go: the explorer
        takes each target the path allows, and a value outside them is a
        return (clause A1), so a wrong guess here costs precision, never
        soundness."""
        if pc not in self._runs:
            self._runs[pc] = self._run_from(pc)
        return self._runs[pc]

    def _run_from(self, pc: int) -> tuple[int, ...]:
        i = self.fetch(pc)
        if i.name != "jalr" or i.rd or i.imm:
            return ()
        base = self._la_before(pc, i.rs1)
        if base is None or not pc < base <= pc + RUN_REACH:
            return ()
        out, at = [], base
        for _ in range(RUN_LIMIT):
            try:
                ins = self.fetch(at)
            except (ProgramError, IllegalInstruction):
                return ()
            out.append(at)
            if ins.name in BRANCHES or ins.name in ("jal", "jalr"):
                return tuple(out)
            at += ins.length
        return ()

    def _la_before(self, pc: int, reg: int) -> int | None:
        """The address an `auipc reg` + `addi reg, reg, imm` pair at most
        LA_WINDOW instructions of 2 or 4 bytes before pc loads, if any."""
        for back in range(4, 4 * LA_WINDOW + 1, 2):
            try:
                first = self.fetch(pc - back)
                second = self.fetch(pc - back + first.length)
            except (ProgramError, IllegalInstruction):
                continue
            if (first.name == "auipc" and first.rd == reg and second.name == "addi"
                    and second.rd == second.rs1 == reg):
                return pc - back + first.imm + second.imm
        return None

    def successors(self, pc: int) -> list[int]:
        """Static successors within one function, fault edges included; a
        call (jal/jalr that links) goes to its target and the instruction
        after it; a computed jump into a run (`run_targets`) to every
        instruction of the run; [] for any other jump through a register
        (a return)."""
        i = self.fetch(pc)
        nxt = pc + i.length
        if i.name in BRANCHES:
            out = [pc + i.imm, nxt]
        elif i.name in ("jal", "jalr"):
            target = self.jump_target(pc)
            if target is None:
                out = list(self.run_targets(pc))
            else:
                out = [target] + ([nxt] if i.rd else [])
        else:
            out = [nxt]
        return out + self.fault_edges(pc)

    def fault_edges(self, pc: int) -> list[int]:
        i = self.fetch(pc)
        if (i.name in LOADS or i.name in STORES) and pc in self.image.extable:
            return [self.image.extable[pc]]
        return []

    def routine(self, entry: int, opaque: frozenset[int] = frozenset(),
                unroll: frozenset[int] = frozenset()) -> "Routine":
        """The routine at entry; calls of the entries in `opaque` are one step
        each (verify.symbolic.summary), not followed; the loop heads in
        `unroll` are no cut points (Routine.unrolled)."""
        return Routine.build(self, entry, opaque=opaque, unroll=unroll)


def call_graph_edges(prog: Program, entry: int, limit: int = 20000,
                     opaque: frozenset[int] = frozenset()) -> dict[int, tuple[int, ...]]:
    """Successors of every instruction a call to `entry` can reach, calls
    followed: a call's successor is its callee's first instruction, and a
    return inside a callee goes back to the instruction after every call of
    that callee (a call from two places joins their paths: sound, if less
    precise).  A return of the routine itself has no successor.  Each
    instruction's successors keep Program.successors' order (the search for
    back edges, and so the choice of cut points, follows it).  A call of an
    entry in `opaque` goes to the instruction after it, and a jump to one
    (a tail call), or a branch taken to one, returns, as the summary of the
    call does (verify.symbolic.summary)."""
    succ: dict[int, dict[int, None]] = defaultdict(dict)   # an ordered set
    seen: set[tuple[int, int | None]] = set()   # (pc, callee it runs in; None: the routine)
    callers: dict[int, set] = defaultdict(set)  # callee -> {(return site, caller)}
    rets: dict[int, set[int]] = defaultdict(set)
    work: list[tuple[int, int | None]] = []

    def go(src: int, dst: int, fn: int | None) -> None:
        succ[src][dst] = None
        if (dst, fn) not in seen:
            if len(seen) > limit:
                raise ProgramError(f"routine at {entry:#x} has over {limit} instructions")
            seen.add((dst, fn))
            work.append((dst, fn))

    seen.add((entry, None))
    work.append((entry, None))
    while work:
        pc, fn = work.pop()
        i = prog.fetch(pc)
        succ.setdefault(pc, {})
        target = prog.jump_target(pc) if i.name in ("jal", "jalr") else None
        if i.name in BRANCHES and pc + i.imm in opaque:
            # a conditional tail call: taken, the callee returns for us
            for nxt in prog.successors(pc):
                if nxt != pc + i.imm:
                    go(pc, nxt, fn)
            if fn is not None:
                rets[fn].add(pc)
                for site, caller in callers[fn]:
                    go(pc, site, caller)
        elif target is not None and target in opaque:
            if i.rd:
                go(pc, pc + i.length, fn)
            elif fn is not None:
                rets[fn].add(pc)
                for site, caller in callers[fn]:
                    go(pc, site, caller)
        elif i.name in ("jal", "jalr") and target is not None and i.rd:
            callers[target].add((pc + i.length, fn))
            go(pc, target, target)
            for r in rets[target]:
                go(r, pc + i.length, fn)
        elif i.name == "jalr" and target is None and not prog.run_targets(pc):
            if fn is not None:
                rets[fn].add(pc)
                for site, caller in callers[fn]:
                    go(pc, site, caller)
        else:
            for nxt in prog.successors(pc):
                go(pc, nxt, fn)
    return {pc: tuple(v) for pc, v in succ.items()}


# Above this many paths from one cut point (or the entry) to the next, the
# joins after loops become cut points too (see join_cuts).  Low enough that
# a copy whose head and tail pieces multiply its paths gets the joins where
# its second size classes begin: what follows a long unrolled block (the
# shift tail, the pieces) is then proved from there, not once more from
# the block's loop head through the whole block (CHANGELOG.md has the figures).
PATH_LIMIT = 200


@dataclass(frozen=True)
class Routine:
    entry: int
    pcs: frozenset[int]
    cut_points: frozenset[int]     # targets of back edges (every cycle has one), and join_cuts
    edges: dict = field(default_factory=dict, compare=False)   # pc -> successors, calls followed
    opaque: frozenset[int] = frozenset()     # callees taken by their summaries
    # loop heads that are no cut points: the explorer runs their loops
    # through, iteration by iteration, as far as the path condition allows
    # (verify.symbolic.unroll says which)
    unrolled: frozenset[int] = frozenset()

    @classmethod
    def build(cls, prog: Program, entry: int, limit: int = 20000,
              opaque: frozenset[int] = frozenset(),
              unroll: frozenset[int] = frozenset()) -> "Routine":
        edges = call_graph_edges(prog, entry, limit, opaque)
        back = back_edges(entry, edges)
        heads = {dst for _, dst in back}
        cuts = heads - unroll
        cuts |= join_cuts(entry, edges, back, cuts)
        return cls(entry, frozenset(edges), frozenset(cuts), edges, frozenset(opaque),
                   frozenset(heads & unroll))


def back_edges(entry: int, edges: dict) -> set[tuple[int, int]]:
    """The back edges (source, target) of a depth-first search from entry."""
    seen: set[int] = {entry}
    on_stack: set[int] = {entry}
    back: set[tuple[int, int]] = set()
    stack = [(entry, iter(edges[entry]))]
    while stack:
        pc, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            stack.pop()
            on_stack.discard(pc)
            continue
        if nxt in on_stack:
            back.add((pc, nxt))
        elif nxt not in seen:
            seen.add(nxt)
            on_stack.add(nxt)
            stack.append((nxt, iter(edges[nxt])))
    return back


def segment_paths(entry: int, edges: dict, back: set, cuts: set) -> int:
    """The most paths from the entry or one cut point to a segment's end (the
    next cut point, or a return): each is explored, and proved, on its own."""
    return max(_segment_counts(entry, edges, back, cuts))


def _segment_counts(entry: int, edges: dict, back: set, cuts: set) -> list[int]:
    """Paths of each segment, from the entry and from each cut point."""
    def succ(pc: int) -> list[int]:
        return [n for n in edges.get(pc, ()) if (pc, n) not in back]

    memo: dict[int, int] = {}          # paths from pc on, a cut point counting as one end

    def from_(pc: int) -> int:
        ns = succ(pc)
        return sum(1 if n in cuts else memo[n] for n in ns) if ns else 1

    for start in [entry, *sorted(cuts)]:
        stack = [(start, False)]       # post-order without recursion: segments run long
        while stack:
            pc, ready = stack.pop()
            if pc in memo:
                continue
            if ready:
                memo[pc] = from_(pc)
                continue
            stack.append((pc, True))
            stack.extend((n, False) for n in succ(pc) if n not in cuts and n not in memo)
    return [from_(s) for s in [entry, *sorted(cuts)]]


def _joins(starts, edges: dict, back: set, preds: dict, stop: set, first: bool) -> set[int]:
    """Joins (points with two or more predecessors) on the paths forward
    from `starts`, not walking back edges or past `stop`: only the first
    on each path, or (`first` false) every one."""
    joins: set[int] = set()
    todo, seen = list(starts), set()
    while todo:
        pc = todo.pop()
        if pc in seen or pc in stop:
            continue
        seen.add(pc)
        if preds[pc] >= 2:
            joins.add(pc)
            if first:
                continue
        todo.extend(n for n in edges.get(pc, ()) if (pc, n) not in back)
    return joins


def join_cuts(entry: int, edges: dict, back: set, cuts: set) -> set[int]:
    """Cut points where straight-line code multiplies paths: with pieces
    before and steps after a loop, every combination of the branches
    between two loop heads is a path of its own, and one segment can hold
    thousands.  While some segment has more than PATH_LIMIT paths, the
    join after a loop (the first point where a path from its exit meets
    another path, e.g. a branch that skipped the loop) that leaves the
    fewest becomes a cut point as well.  When those are used up, every
    join after the ones taken is a candidate (the steps of a ladder), and
    again the one that leaves the fewest is taken.  There the state is a
    loop's at its exit or a step's, whose invariants are of the kind loop
    heads have."""
    preds: dict[int, int] = defaultdict(int)
    for pc, succ in edges.items():
        for n in succ:
            preds[n] += 1
    exits = _joins([n for src, dst in back for n in edges[src] if n != dst],
                   edges, back, preds, cuts, first=True)
    added: set[int] = set()
    tried: set[int] = set()
    def score(extra: set) -> tuple[int, int]:      # the most paths, then all of them
        counts = _segment_counts(entry, edges, back, cuts | extra)
        return max(counts), sum(counts)

    most = score(added)
    while most[0] > PATH_LIMIT:
        if not exits:
            exits = _joins([n for pc in added for n in edges.get(pc, ())], edges, back, preds,
                           cuts | added, first=False) - tried
            if not exits:
                break
        scores = {j: score(added | {j}) for j in sorted(exits)}
        best = min(scores, key=scores.get)
        if scores[best] >= most:        # e.g. the join before the return: no fewer paths
            tried |= exits
            exits = set()
            continue
        added.add(best)
        exits.discard(best)
        most = scores[best]
    return added
