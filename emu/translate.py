"""Fast path: basic blocks compiled to Python functions, plus the dispatcher.

Role: run a `Hart` much faster than its reference `step` with identical
results.  A block is the straight run of instructions from a pc up to and
including the first branch/jump (or up to a CSR/system instruction, a fetch
problem, or `MAX_BLOCK` instructions).  Its body is produced by running
`emu.semantics` over `emu.srcops` (so there is one semantics), compiled with
`exec`.  A block whose branch jumps back to its own start becomes a `while`
loop inside one Python call.

Cycle accounting: the static issue schedule of a block depends only on the
issue state at entry and the branch outcome, so each block memoises
(entry state, taken) -> (cycles, exit state) from `CostModel.step` — the same
function the reference step folds one instruction at a time.  Cache and
misaligned stalls are charged inline by the same rules as `CostModel.access`.

A run of loads (or stores) through one unchanged base register at increasing
offsets within one cache line (an unrolled copy's block; `access_runs`) is
checked once: if its first address is aligned and the run stays in one page,
its accesses index one page view directly and its one or two cache lines are
touched once each, which is what the per-access MRU test would have done.

Compiled code is shared by every machine (keyed by the block's pcs and
encodings and the cache geometry), and so is each block's schedule memo per
profile (emu.cost.ScheduleTable): a new Machine on a known ELF starts warm.

Anything unusual leaves the fast path: CSR/system instructions, a refused
access (KeyError from the page table, MemFault from the misaligned helper)
and undecodable code are replayed by `Hart.step`, after the block has written
back its registers and accounted for the instructions before the one that
stopped it.  tests/emu/test_emu_fastpath.py checks equality with the reference.
Imports: emu.machine, emu.memory, emu.cost, emu.decode, emu.semantics, emu.srcops, emu.errors.
"""

from __future__ import annotations

from typing import Callable

from copygen.emu.cost import insn_class
from copygen.emu.decode import Insn
from copygen.emu.errors import EmuError, StepLimit
from copygen.emu.machine import Hart
from copygen.emu.memory import VIEW_INDEX, MemFault
from copygen.emu.semantics import SEMANTICS
from copygen.emu.srcops import HELPERS, M, SRC_OPS, BlockState

MAX_BLOCK = 64
_UNTRANSLATED = {"serial"}  # csr, fence, ecall, ebreak, wfi: reference step


class Block:
    """One translated block: its instructions, compiled function and cost memo."""

    def __init__(self, start: int, insns: list[tuple[int, Insn]]) -> None:
        self.start = start
        self.insns = insns
        self.fn: Callable[[int, dict, dict], bool] | None = None
        self.trans: dict[int, tuple[int, int]] = {}  # sid*2+taken -> (cycles, sid)
        self.line_insn: list[int] = []                # body line -> its instruction's index
        self.body_line = 0                            # source line of body line 0
        self.source = ""


# Compiled blocks and their schedule memos, shared by every machine: a sweep
# builds a new Machine per point, and compiling is most of a first call's cost.
# key: (start pc, ((pc, raw), ...), cache geometry or None) -> (source, line_insn, body_line, code)
_CODE: dict[tuple, tuple[str, list[int], int, object]] = {}
# (profile, code key) -> that block's memo (state ids are per profile: emu.cost.ScheduleTable)
_TRANS: dict[tuple, dict] = {}
_CACHE_LIMIT = 20_000  # blocks; both caches start again beyond it


class Translator:
    """Owns the block cache of one hart and runs it (`run`)."""

    def __init__(self, hart: Hart) -> None:
        self.hart = hart
        self.blocks: dict[int, Block | None] = {}
        self._version = hart.mem.code_version

    # --- dispatcher -----------------------------------------------------------
    def run(self, stop_pc: int, limit: int) -> None:
        hart, mem, blocks = self.hart, self.hart.mem, self.blocks
        end = hart.instret + limit
        sum_set = hart.sum_set
        rt, wt = mem.read_table[sum_set], mem.write_table[sum_set]
        while True:
            pc = hart.pc
            if pc == stop_pc:
                return
            if hart.instret >= end:
                raise StepLimit(pc, limit)
            if mem.code_version != self._version:
                blocks.clear()
                self._version = mem.code_version
            block = blocks.get(pc, False)
            if block is False:
                block = blocks[pc] = self.translate(pc)
            if block is None or block.fn(end - hart.instret, rt, wt):
                hart.step()
                sum_set = hart.sum_set
                rt, wt = mem.read_table[sum_set], mem.write_table[sum_set]

    # --- block formation --------------------------------------------------------
    def translate(self, pc: int) -> Block | None:
        insns = self._collect(pc)
        if not insns:
            return None
        block = Block(pc, insns)
        cost = self.hart.cost
        key = (pc, tuple((a, i.raw) for a, i in insns),
               (cost.cache.line_shift, cost.cache.set_mask) if cost else None)
        hit = _CODE.get(key)
        if hit is None:
            if len(_CODE) > _CACHE_LIMIT:
                _CODE.clear()
                _TRANS.clear()
            source = self._generate(block)
            hit = _CODE[key] = (source, block.line_insn, block.body_line,
                                compile(source, f"<block {pc:#x}>", "exec"))
        block.source, block.line_insn, block.body_line, code = hit
        if cost is not None:
            block.trans = _TRANS.setdefault((cost.profile, key), {})
        block.fn = self._compile(block, code)
        return block

    def _collect(self, pc: int) -> list[tuple[int, Insn]]:
        out: list[tuple[int, Insn]] = []
        while len(out) < MAX_BLOCK:
            try:
                insn = self.hart.fetch(pc)
            except EmuError:
                break  # the reference step reports it when execution gets here
            cls = insn_class(insn.name)
            if cls in _UNTRANSLATED:
                break
            out.append((pc, insn))
            if cls in ("branch", "jal", "jalr"):
                break
            pc += insn.length
        return out

    # --- code generation ----------------------------------------------------------
    def _generate(self, block: Block) -> str:
        cost = self.hart.cost
        st = BlockState(cost.cache.line_shift if cost else None, cost.cache.set_mask if cost else 0)
        body: list[str] = []
        runs = access_runs(block.insns, 1 << st.line_shift if cost else 4096)
        k = 0
        while k < len(block.insns):
            if k in runs:
                k = _emit_run(block, st, k, runs[k], body)
                continue
            _emit_insn(block, st, k, body, "")
            k += 1
        last_pc, last = block.insns[-1]
        fall = last_pc + last.length
        loop = st.branch_target == block.start or (st.cond is None and st.exit_pc == block.start)
        return _Source(block, st, body, fall, loop, cost is not None).render()

    def _compile(self, block: Block, code) -> Callable:
        hart, cost = self.hart, self.hart.cost
        env = dict(HELPERS, MemFault=MemFault, X=hart.x, H=hart, C=cost, BAIL=self._bail_fn(block), TRANS=block.trans,
                   SCHED=self._sched_fn(block), MISL=self._misaligned_load, MISS=self._misaligned_store)
        if cost is not None:
            env.update(MRU=cost.cache.mru, TOUCH=cost.cache.touch, SETS=cost.cache.sets, TICK=cost.cache.tick)
        exec(code, env)
        return env["block"]

    def _bail_fn(self, block: Block) -> Callable[[int, int], bool]:
        """Account for the first k instructions of an interrupted iteration and
        leave pc at instruction k for the reference step."""
        hart = self.hart

        def bail(lineno: int) -> bool:
            k = block.line_insn[lineno - block.body_line]
            cost = hart.cost
            for _, insn in block.insns[:k]:
                if cost is not None:
                    cost.on_insn(insn, False)
            hart.instret += k
            hart.pc = block.insns[k][0]
            return True
        return bail

    def _sched_fn(self, block: Block) -> Callable[[int], tuple[int, int]]:
        cost = self.hart.cost

        def sched(key: int) -> tuple[int, int]:
            sid, taken, total = key >> 1, bool(key & 1), 0
            last = len(block.insns) - 1
            for k, (_, insn) in enumerate(block.insns):
                adv, sid = cost.step(sid, insn, taken and k == last)
                total += adv
            block.trans[key] = (total, sid)
            return total, sid
        return sched

    def _misaligned_load(self, addr: int, size: int) -> int:
        hart = self.hart
        hart.mem.check(addr, size, "load", hart.sum_set)
        if hart.cost is not None:
            hart.cost.access(addr, size, 0)
        return hart.mem.get(addr, size)

    def _misaligned_store(self, addr: int, size: int, value: int) -> None:
        hart = self.hart
        hart.mem.check(addr, size, "store", hart.sum_set)
        if hart.cost is not None:
            hart.cost.access(addr, size, 1)
        hart.mem.put(addr, size, value)


def access_runs(insns: list[tuple[int, Insn]], line: int) -> dict[int, int]:
    """first index -> length of each run of two or more consecutive loads (or
    stores) of one kind through one unchanged base register, at increasing
    offsets that are multiples of the size and span at most one cache line.
    Such a run is checked once (alignment, page, cache lines) and then reads
    or writes one page view directly."""
    runs: dict[int, int] = {}
    k = 0
    while k < len(insns):
        first = insns[k][1]
        end = k + 1
        if insn_class(first.name) in ("load", "store") and first.rs1:
            size = _SIZE[first.name]
            while end < len(insns):
                i = insns[end][1]
                prev = insns[end - 1][1]
                if (i.name != first.name or i.rs1 != first.rs1 or i.imm <= prev.imm
                        or i.imm - first.imm + size > line):
                    break
                end += 1
            ok = all(i.imm % size == 0 and not (insn_class(i.name) == "load" and i.rd == first.rs1)
                     for _, i in insns[k:end])
            if end - k >= 2 and ok:
                runs[k] = end - k
        k = end
    return runs


_SIZE = {"lb": 1, "lbu": 1, "sb": 1, "lh": 2, "lhu": 2, "sh": 2, "lw": 4, "lwu": 4, "sw": 4, "ld": 8, "sd": 8}


def _emit_insn(block: Block, st: BlockState, k: int, body: list[str], ind: str) -> None:
    pc, insn = block.insns[k]
    st.pc, st.lines = pc, []
    SEMANTICS[insn.name](insn, SRC_OPS, st)
    body.extend(ind + line for line in st.lines)
    block.line_insn.extend([k] * len(st.lines))


def _emit_run(block: Block, st: BlockState, k: int, n: int, body: list[str]) -> int:
    """A run found by `access_runs`: if its first address is aligned and the
    run stays in one page, index one page view (fetched once: a refused page
    raises here, before any access of the run) and touch its one or two cache
    lines once each, in order; the later accesses to a line just touched are
    MRU hits, which change nothing.  Otherwise run the accesses one by one."""
    first = block.insns[k][1]
    size, store = _SIZE[first.name], insn_class(first.name) == "store"
    span = block.insns[k + n - 1][1].imm - first.imm + size
    g, p, i = st._tmp("g"), st._tmp("p"), st._tmp("i")
    base = f"x{first.rs1}" if not first.imm else f"((x{first.rs1} + {first.imm}) & {M})"
    st.used.add(first.rs1)
    shift = size.bit_length() - 1
    head = [f"{g} = {base}",
            f"if (not {g} & {size - 1}) and ({g} & 4095) <= {4096 - span}:" if size > 1 else
            f"if ({g} & 4095) <= {4096 - span}:",
            f"    {p} = {'W' if store else 'R'}[{g} >> 12][{VIEW_INDEX[(size, False)]}]",
            f"    {i} = ({g} & 4095) >> {shift}" if shift else f"    {i} = {g} & 4095"]
    head += st._cache_lines(g, int(store))
    if span > size:
        e = st._tmp("e")
        head += [f"    {e} = {g} + {span - size}"] + st._cache_lines(e, int(store))
    body.extend(head)
    block.line_insn.extend([k] * len(head))
    for j in range(k, k + n):
        step = (block.insns[j][1].imm - first.imm) >> shift
        st.direct = f"{p}[{i} + {step}]" if step else f"{p}[{i}]"
        _emit_insn(block, st, j, body, "    ")
    body.append("else:")
    block.line_insn.append(k)
    for j in range(k, k + n):
        _emit_insn(block, st, j, body, "    ")
    return k + n


class _Source:
    """Renders one block function; records where the body starts so `bail`
    can map a traceback line number back to an instruction."""

    def __init__(self, block: Block, st: BlockState, body: list[str], fall: int, loop: bool,
                 with_cost: bool) -> None:
        self.block, self.st, self.body, self.fall = block, st, body, fall
        self.loop, self.cost = loop, with_cost
        self.n = len(block.insns)

    def render(self) -> str:
        regs = sorted(self.st.used)
        written = sorted(self.st.written)
        load = [f"x{r} = X[{r}]" for r in regs]
        store = [f"X[{r}] = x{r}" for r in written]
        head = ["def block(budget, R, W):", *("    " + s for s in load)]
        head += ["    sid = C.state", "    cyc = 0"] if self.cost else []
        head += ["    n = 0", "    try:"]
        ind = "        "
        if self.loop:
            head += ["        while True:"]
            ind += "    "
        first = len(head) + 1
        lines = head + [ind + s for s in self.body] + [ind + s for s in self._exits(ind)]
        lines += ["    except (KeyError, MemFault) as e:",
                  *("        " + s for s in store + self._flush_cost()),
                  "        H.instret += n",
                  "        return BAIL(e.__traceback__.tb_lineno)"]
        lines += ["    " + s for s in store + self._flush_cost()]
        lines += ["    H.instret += n", "    H.pc = npc", "    return False"]
        self.block.body_line = first  # bail() maps line numbers back with it
        return "\n".join(lines) + "\n"

    def _flush_cost(self) -> list[str]:
        return ["C.state = sid", "C.issue_cycles += cyc"] if self.cost else []

    def _account(self, taken: int) -> list[str]:
        out = [f"n += {self.n}"]
        if self.cost:
            out += [f"t = TRANS.get(sid * 2 + {taken}) or SCHED(sid * 2 + {taken})",
                    "cyc += t[0]", "sid = t[1]"]
        return out

    def _exits(self, ind: str) -> list[str]:
        st = self.st
        if st.cond is not None:  # conditional branch: taken / fall through
            taken_lines = self._account(1)
            if self.loop:
                taken_lines += [f"if n + {self.n} > budget:", f"    npc = {self.block.start}", "    break",
                                "continue"]
            else:
                taken_lines += [f"npc = {st.branch_target}"]
            fall_lines = self._account(0) + [f"npc = {self.fall}"] + (["break"] if self.loop else [])
            return [f"if {st.cond}:", *("    " + s for s in taken_lines),
                    "else:", *("    " + s for s in fall_lines)]
        if st.exit_pc is not None:  # jal / jalr
            out = self._account(1)
            if self.loop:  # `j .` and friends
                return out + [f"if n + {self.n} > budget:", f"    npc = {self.block.start}", "    break"]
            return out + [f"npc = {st.exit_pc}"]
        return self._account(0) + [f"npc = {self.fall}"]  # block cut before a csr/limit
