"""Python source for one block's instructions, and runs of accesses checked once.

Role: the part of block translation (emu.fast.translate) that turns instructions
into lines of the block function: one instruction through `emu.insn.semantics`
over `emu.fast.srcops` (`emit_insn`), or a run of same-kind accesses through one
base register (`access_runs`, `emit_run`), whose alignment, page and cache
lines are checked once.  Each emitted line records its instruction's index
(`block.line_insn`) so a refused access maps back to it.
Imports: emu.timing.cost, emu.insn.decode (Insn only), emu.hart.memory, emu.timing.ooo, emu.insn.semantics, emu.fast.srcops.
"""

from __future__ import annotations

from copygen.emu.timing.cost import insn_class
from copygen.emu.insn.decode import Insn
from copygen.emu.hart.memory import VIEW_INDEX
from copygen.emu.timing.ooo import CODE_BITS
from copygen.emu.insn.semantics import SEMANTICS
from copygen.emu.fast.srcops import M, SRC_OPS, BlockState


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


def emit_insn(block, st: BlockState, k: int, body: list[str], ind: str) -> None:
    pc, insn = block.insns[k]
    st.pc, st.lines = pc, []
    SEMANTICS[insn.name](insn, SRC_OPS, st)
    body.extend(ind + line for line in st.lines)
    block.line_insn.extend([k] * len(st.lines))


def emit_run(block, st: BlockState, k: int, n: int, body: list[str], j0: int | None) -> None:
    """A run found by `access_runs`: if its first address is aligned and the
    run stays in one page, index one page view (fetched once: a refused page
    raises here, before any access of the run) and touch its one or two cache
    lines once each, in order; the later accesses to a line just touched are
    MRU hits, which change nothing.  Otherwise run the accesses one by one.
    `j0` (out-of-order engine): the run's first access index in `sg`; a code
    for the second line belongs to the first access that reaches it."""
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
    st.sig_shift = None if j0 is None else CODE_BITS * j0
    head += st._cache_lines(g, int(store))
    if span > size:
        e = st._tmp("e")
        if j0 is not None:  # offsets from the run's first address, in order
            deltas = tuple(block.insns[x][1].imm - first.imm for x in range(k, k + n))
            st.sig_shift = f"{CODE_BITS} * ({j0} + FIRST_AT({deltas}, ({e} & -{1 << st.line_shift}) - {g}))"
        head += [f"    {e} = {g} + {span - size}"] + st._cache_lines(e, int(store))
    st.sig_shift = None
    body.extend(head)
    block.line_insn.extend([k] * len(head))
    for x in range(k, k + n):
        step = (block.insns[x][1].imm - first.imm) >> shift
        st.direct = f"{p}[{i} + {step}]" if step else f"{p}[{i}]"
        emit_insn(block, st, x, body, "    ")
    body.append("else:")
    block.line_insn.append(k)
    for x in range(k, k + n):
        st.sig_shift = None if j0 is None else CODE_BITS * (j0 + x - k)
        emit_insn(block, st, x, body, "    ")
    st.sig_shift = None
