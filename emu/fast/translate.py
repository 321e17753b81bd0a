"""Fast path: basic blocks compiled to Python functions, plus the dispatcher.

Role: run a `Hart` much faster than its reference `step` with identical
results.  A block is the straight run of instructions from a pc up to and
including the first branch/jump (or up to a CSR/system instruction, a fetch
problem, or `MAX_BLOCK` instructions).  Its body is produced by running
`emu.insn.semantics` over `emu.fast.srcops` (so there is one semantics), compiled with
`exec`.  A block whose branch jumps back to its own start becomes a `while`
loop inside one Python call.

Cycle accounting: the static issue schedule of a block depends only on the
issue state at entry and the branch outcome, so each block memoises
(entry state, taken) -> (cycles, exit state) from `CostModel.step` — the same
function the reference step folds one instruction at a time.  Cache and
misaligned stalls are charged inline by the same rules as `CostModel.access`.
With an out-of-order profile (emu.timing.ooo) a block's cycles also depend on where
each access's line came from and on the prediction of its branch: each
access's level code is or-ed into a signature `sg`, the predictor is asked
at the branch, and the memo key is (entry state, signature, prediction,
outcome).

A run of loads (or stores) through one unchanged base register at increasing
offsets within one cache line (an unrolled copy's block; `access_runs`) is
checked once: if its first address is aligned and the run stays in one page,
its accesses index one page view directly and its one or two cache lines are
touched once each, which is what the per-access MRU test would have done.

Compiled code is shared by every machine (keyed by the block's pcs and
encodings and the cache geometry), and so is each block's schedule memo per
profile (emu.timing.cost.ScheduleTable): a new Machine on a known ELF starts warm.

Anything unusual leaves the fast path: CSR/system instructions, a refused
access (KeyError from the page table, MemFault from the misaligned helper)
and undecodable code are replayed by `Hart.step`, after the block has written
back its registers and accounted for the instructions before the one that
stopped it.  tests/emu/test_emu_fastpath.py checks equality with the reference.
Imports: emu.hart.machine, emu.hart.memory, emu.timing.cost, emu.timing.ooo, emu.fast.runs, emu.insn.decode, emu.fast.srcops, emu.errors.
"""

from __future__ import annotations

import bisect
import weakref
from typing import Callable

from copygen.emu.timing.cost import insn_class
from copygen.emu.insn.decode import Insn
from copygen.emu.errors import EmuError, StepLimit
from copygen.emu.hart.machine import Hart
from copygen.emu.timing.ooo import CODE_BITS, MISPREDICT, TAKEN
from copygen.emu.hart.memory import PAGE_MASK, PAGE_SHIFT, PAGE_SIZE, MemFault
from copygen.emu.fast.runs import access_runs, emit_insn, emit_run
from copygen.emu.fast.srcops import HELPERS, BlockState

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
# schedule table -> code key -> that block's memo (state ids belong to one emu.timing.cost.ScheduleTable;
# a table's memos go when the last Machine using it does)
_TRANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CACHE_LIMIT = 20_000  # blocks; both caches start again beyond it
SID_MASK = (1 << 38) - 1  # state ids in an out-of-order memo key (bits 2..39)


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
               (cost.cache.line_shift, cost.cache.set_mask, cost.kind) if cost else None)
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
            block.trans = _TRANS.setdefault(cost.table, {}).setdefault(key, {})
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
        ooo = cost is not None and cost.kind == "ooo"
        if ooo:  # each iteration's accesses start a new signature
            body.append("sg = 0")
            block.line_insn.append(0)
        runs = access_runs(block.insns, 1 << st.line_shift if cost else 4096)
        k = j = 0  # j: index of the next access in the block (its place in `sg`)
        while k < len(block.insns):
            if k in runs:
                n = runs[k]
                emit_run(block, st, k, n, body, j if ooo else None)
                k, j = k + n, j + n
                continue
            if ooo and insn_class(block.insns[k][1].name) in ("load", "store"):
                st.sig_shift, j = CODE_BITS * j, j + 1
            emit_insn(block, st, k, body, "")
            st.sig_shift = None
            k += 1
        last_pc, last = block.insns[-1]
        fall = last_pc + last.length
        loop = st.branch_target == block.start or (st.cond is None and st.exit_pc == block.start)
        mode = None if cost is None else cost.kind
        return _Source(block, st, body, fall, loop, mode).render()

    def _compile(self, block: Block, code) -> Callable:
        hart, cost = self.hart, self.hart.cost
        env = dict(HELPERS, MemFault=MemFault, FIRST_AT=bisect.bisect_left, X=hart.x, H=hart, C=cost, BAIL=self._bail_fn(block), TRANS=block.trans,
                   SCHED=self._sched_fn(block), MISL=self._misaligned_load, MISS=self._misaligned_store)
        if cost is not None:
            env.update(MRU=cost.cache.mru, TOUCH=cost.cache.touch, SETS=cost.cache.sets, TICK=cost.cache.tick)
        if cost is not None and cost.kind == "ooo":
            # the predictor's own method (cost.mispredicted only forwards to it)
            env.update(PRED=cost.predictor.mispredicted, SCHED=self._ooo_sched_fn(block))
        exec(code, env)
        return env["block"]

    def _bail_fn(self, block: Block) -> Callable[[int, int], bool]:
        """Account for the first k instructions of an interrupted iteration and
        leave pc at instruction k for the reference step."""
        hart = self.hart

        def bail(lineno: int, sig: int = 0) -> bool:
            k = block.line_insn[lineno - block.body_line]
            cost = hart.cost
            if cost is not None and cost.kind == "ooo":
                cost.fold([insn for _, insn in block.insns[:k]], sig)
            elif cost is not None:
                for _, insn in block.insns[:k]:
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

    def _ooo_sched_fn(self, block: Block) -> Callable[[int], tuple[int, int]]:
        """The out-of-order engine's block memo: key = sid*4 + mispredicted*2 +
        taken + (access signature << 40), as `_Source._account` computes it."""
        cost = self.hart.cost
        mem = [insn_class(i.name) in ("load", "store") for _, i in block.insns]
        last = len(block.insns) - 1

        def sched(key: int) -> tuple[int, int]:
            sid, sig, total, j = (key >> 2) & SID_MASK, key >> 40, 0, 0
            for k, (_, insn) in enumerate(block.insns):
                code = 0
                if mem[k]:
                    code, j = (sig >> (CODE_BITS * j)) & 15, j + 1
                if k == last:
                    code |= TAKEN * (key & 1) | MISPREDICT * ((key >> 1) & 1)
                adv, sid = cost.step(sid, insn, code)
                total += adv
            block.trans[key] = (total, sid)
            return total, sid
        return sched

    def _misaligned_load(self, addr: int, size: int) -> int:
        """A misaligned load: within one permitted page, read from the mode's
        read table at once (what check and get would do); otherwise through
        the checks, which refuse it or take it across two pages."""
        hart = self.hart
        off = addr & PAGE_MASK
        views = hart.mem.read_table[hart.sum_set].get(addr >> PAGE_SHIFT) \
            if off + size <= PAGE_SIZE else None
        if views is None:
            hart.mem.check(addr, size, "load", hart.sum_set)
            if hart.cost is not None:
                hart.cost.access(addr, size, 0)
            return hart.mem.get(addr, size)
        if hart.cost is not None:
            hart.cost.access(addr, size, 0)
        return int.from_bytes(views[0][off:off + size], "little")

    def _misaligned_store(self, addr: int, size: int, value: int) -> None:
        """A misaligned store, as _misaligned_load reads."""
        hart = self.hart
        off = addr & PAGE_MASK
        views = hart.mem.write_table[hart.sum_set].get(addr >> PAGE_SHIFT) \
            if off + size <= PAGE_SIZE else None
        if views is None:
            hart.mem.check(addr, size, "store", hart.sum_set)
            if hart.cost is not None:
                hart.cost.access(addr, size, 1)
            hart.mem.put(addr, size, value)
            return
        if hart.cost is not None:
            hart.cost.access(addr, size, 1)
        views[0][off:off + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


class _Source:
    """Renders one block function; records where the body starts so `bail`
    can map a traceback line number back to an instruction."""

    def __init__(self, block: Block, st: BlockState, body: list[str], fall: int, loop: bool,
                 mode: str | None) -> None:
        self.block, self.st, self.body, self.fall = block, st, body, fall
        self.loop, self.cost, self.ooo = loop, mode is not None, mode == "ooo"
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
                  f"        return BAIL(e.__traceback__.tb_lineno{', sg' if self.ooo else ''})"]
        lines += ["    " + s for s in store + self._flush_cost()]
        lines += ["    H.instret += n", "    H.pc = npc", "    return False"]
        self.block.body_line = first  # bail() maps line numbers back with it
        return "\n".join(lines) + "\n"

    def _flush_cost(self) -> list[str]:
        return ["C.state = sid", "C.issue_cycles += cyc"] if self.cost else []

    def _account(self, taken: int, cond: bool = False) -> list[str]:
        out = [f"n += {self.n}"]
        if self.ooo:  # see Translator._ooo_sched_fn
            pc, last = self.block.insns[-1]
            mp = f"PRED({pc}, {last.imm < 0}, {taken}) * 2" if cond else "0"
            out += [f"k = sid * 4 + {mp} + {taken} + (sg << 40)",
                    "t = TRANS.get(k) or SCHED(k)", "cyc += t[0]", "sid = t[1]"]
        elif self.cost:
            out += [f"t = TRANS.get(sid * 2 + {taken}) or SCHED(sid * 2 + {taken})",
                    "cyc += t[0]", "sid = t[1]"]
        return out

    def _exits(self, ind: str) -> list[str]:
        st = self.st
        if st.cond is not None:  # conditional branch: taken / fall through
            taken_lines = self._account(1, True)
            if self.loop:
                taken_lines += [f"if n + {self.n} > budget:", f"    npc = {self.block.start}", "    break",
                                "continue"]
            else:
                taken_lines += [f"npc = {st.branch_target}"]
            fall_lines = self._account(0, True) + [f"npc = {self.fall}"] + (["break"] if self.loop else [])
            return [f"if {st.cond}:", *("    " + s for s in taken_lines),
                    "else:", *("    " + s for s in fall_lines)]
        if st.exit_pc is not None:  # jal / jalr
            out = self._account(1)
            if self.loop:  # `j .` and friends
                return out + [f"if n + {self.n} > budget:", f"    npc = {self.block.start}", "    break"]
            return out + [f"npc = {st.exit_pc}"]
        return self._account(0) + [f"npc = {self.fall}"]  # block cut before a csr/limit
