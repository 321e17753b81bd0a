"""Register rules in the lowering: a Function that names no reserved
register, and whose computed jumps go through the allowed one.

The lowerings pick their registers for speed and keep the kernel's own
choices (t6 holds SR_SUM, memset jumps through a5).  A target's rules
(gen.front.registers) are then honoured on the whole Function by renaming:

  jump     a computed jump (`jr R`) through another register than the
           allowed one J: R and J trade names everywhere in the function;
  reserve  a reserved register the function names is renamed to a
           temporary it names nowhere, t5 first (mainline's __clear_user
           keeps SR_SUM in t5), then t4, t3 ... a3; never an argument, the
           jump register, another reserved one or one the code around the
           routine keeps live (`keep`).

Both are sound for one reason: the registers renamed are temporaries that
carry nothing into the function (no argument) and nothing out of it (the
result is a0), and the renaming is one-to-one over all of the function's
text, fault exits included, so each instruction computes what it did, in
other registers.  The comments follow (register roles, notes, the why and
pseudo-code lines), so that what they say stays true.  The pools of the
block schedules leave reserved registers out beforehand
(gen.phases.schedule.word_pool), so a renaming is needed only for the
registers with fixed roles.

A routine whose loops take every temporary (u74tuned's copy: 16-word
shift blocks) has none left for SR_SUM.  The mask lives only from its
`li` to the csrs/csrc that reads it: at the entry, before anything else
is computed, and on a return path, after the result is in a0.  When
those windows are all a reserved register is used for, it moves, window
by window, to a temporary that no instruction of the window names and
that is neither an argument nor a0 (`_sum_windows`): at the entry no
temporary holds anything yet, and after a return's csrc only `ret` and
the setting of a0 follow, so the mask overwrites nothing that is read
again.  Otherwise, when no temporary is free, the error names the phases
that use the register.

May import gen.emission.ir, copygen.errors and the standard library.
"""
from __future__ import annotations

import re
from dataclasses import replace

from copygen.errors import CopygenError, Loc
from copygen.gen.emission.ir import Function, Insn, Phase

# where a reserved register goes, in this order
FREE = ("t5", "t4", "t3", "t2", "t1", "t0", "t6", "a7", "a6", "a5", "a4", "a3")
REG = re.compile(r"(?<![\w.$])(zero|ra|sp|gp|tp|fp|[ast]\d{1,2})(?![\w.$])")
JUMPS = ("jr", "jalr")


def named(fn: Function) -> set[str]:
    """Every register an instruction of `fn` names (operands only)."""
    return {r for ph in fn.phases + fn.fault_exits for i in ph.body if isinstance(i, Insn)
            for a in i.operands for r in REG.findall(a)}


def _params(fn: Function) -> set[str]:
    return {r for r, _ in fn.params}


def computed_jumps(fn: Function) -> set[str]:
    """The registers `fn`'s computed jumps go through (`ret` is not one)."""
    out = set()
    for ph in fn.phases + fn.fault_exits:
        for i in ph.body:
            if isinstance(i, Insn) and i.op in JUMPS and i.operands:
                regs = REG.findall(i.operands[-1])
                out.update(r for r in regs[-1:] if r != "ra")
    return out


def _sub(text: str, mapping: dict[str, str]) -> str:
    return REG.sub(lambda m: mapping.get(m.group(1), m.group(1)), text)


def _phase(ph: Phase, mapping: dict[str, str]) -> Phase:
    body = tuple(replace(i, operands=tuple(_sub(a, mapping) for a in i.operands),
                         note=_sub(i.note, mapping)) if isinstance(i, Insn) else i
                 for i in ph.body)
    return replace(ph, why=tuple(_sub(w, mapping) for w in ph.why),
                   pseudo=tuple(_sub(p, mapping) for p in ph.pseudo),
                   regs=tuple((_sub(r, mapping), what) for r, what in ph.regs), body=body)


def rename(fn: Function, mapping: dict[str, str]) -> Function:
    """`fn` with every register of `mapping` named by its image (one to one)."""
    assert len(set(mapping.values())) == len(mapping)
    return replace(fn, phases=tuple(_phase(p, mapping) for p in fn.phases),
                   fault_exits=tuple(_phase(p, mapping) for p in fn.fault_exits))


def _users(fn: Function, reg: str) -> list[str]:
    return [ph.title for ph in fn.phases + fn.fault_exits
            if any(isinstance(i, Insn) and any(reg in REG.findall(a) for a in i.operands)
                   for i in ph.body)]


def _route_jumps(fn: Function, jump: str, keep: tuple[str, ...], where: Loc | None) -> Function:
    jumps = computed_jumps(fn)
    through = jumps - {jump}
    if not through:
        return fn
    if len(jumps) > 1:
        raise CopygenError(f"{fn.symbol}: computed jumps through {', '.join(sorted(jumps))} "
                           f"cannot all go through {jump}", where,
                           hint="drop the `jump` rule of the target")
    (old,) = through
    if {old, jump} & (set(keep) | _params(fn)):
        raise CopygenError(f"{fn.symbol}: its computed jump cannot move from {old} to {jump}, "
                           "which carries a value into or across the routine", where,
                           hint="name another jump register")
    return rename(fn, {old: jump, jump: old})


def _window(body: tuple, i: int, reg: str) -> tuple[int, str] | None:
    """(index of the csrs/csrc, op) that reads the SR_SUM mask `li reg`
    at body[i] loads, or None."""
    for j in range(i + 1, len(body)):
        it = body[j]
        if isinstance(it, Insn) and it.op in ("csrs", "csrc") and it.operands == ("CSR_STATUS", reg):
            return j, it.op
        if not isinstance(it, Insn) or it.op in JUMPS or it.op == "ret" or \
                any(reg in REG.findall(a) for a in it.operands):
            return None
    return None


def _sum_windows(fn: Function, reg: str) -> list[tuple[int, int, int]] | None:
    """(phase index, li index, csr index) of every SR_SUM window of `reg`,
    when they are all it is named in and each is at the entry (the very
    first instruction) or on a return path (only `li a0` and `ret` after
    it); else None."""
    phases = fn.phases + fn.fault_exits
    out, count = [], 0
    for k, ph in enumerate(phases):
        for i, it in enumerate(ph.body):
            if not isinstance(it, Insn):
                continue
            count += sum(reg in REG.findall(a) for a in it.operands) > 0
            if it.op != "li" or it.operands != (reg, "SR_SUM"):
                continue
            found = _window(ph.body, i, reg)
            if found is None:
                return None
            j, op = found
            rest = ph.body[j + 1:]
            entry = op == "csrs" and k == 0 and i == 0
            leaves = op == "csrc" and all(isinstance(x, Insn) for x in rest) and rest and \
                rest[-1].op == "ret" and all(x.op == "li" and x.operands[0] == "a0" for x in rest[:-1])
            if not (entry or leaves):
                return None
            out.append((k, i, j))
    return out if out and count == 2 * len(out) else None


def _move_sum(fn: Function, reg: str, taken: set[str]) -> Function | None:
    """`fn` with the SR_SUM windows of `reg` in another register (see the
    module's docstring), or None when they cannot move."""
    windows = _sum_windows(fn, reg)
    if windows is None:
        return None
    phases = list(fn.phases + fn.fault_exits)
    busy = set(taken) | {"a0"}
    for k, i, j in windows:
        busy |= {r for x in phases[k].body[i + 1:j] if isinstance(x, Insn)
                 for a in x.operands for r in REG.findall(a)}
    to = next((r for r in FREE if r not in busy), None)
    if to is None:
        return None
    for k, i, j in windows:
        body = list(phases[k].body)
        body[i] = replace(body[i], operands=(to, "SR_SUM"))
        body[j] = replace(body[j], operands=("CSR_STATUS", to))
        roles = tuple((to if (r, what) == (reg, "SR_SUM") else r, what) for r, what in phases[k].regs)
        phases[k] = replace(phases[k], body=tuple(body), regs=roles)
    n = len(fn.phases)
    return replace(fn, phases=tuple(phases[:n]), fault_exits=tuple(phases[n:]))


def honour(fn: Function, reserve: tuple[str, ...] = (), jump: str | None = None,
           keep: tuple[str, ...] = (), where: Loc | None = None) -> Function:
    """`fn` under the rules: its computed jump through `jump`, and no
    reserved register named (see the module's docstring).  `where` locates
    an error (the target's line)."""
    if jump is not None:
        fn = _route_jumps(fn, jump, keep, where)
    taken = named(fn) | _params(fn) | set(keep) | set(reserve) | ({jump} if jump else set())
    mapping = {}
    for reg in reserve:
        if reg not in named(fn):
            continue
        free = next((r for r in FREE if r not in taken), None)
        if free is None:
            moved = _move_sum(fn, reg, _params(fn) | set(keep) | set(reserve)
                              | ({jump} if jump else set()))
            if moved is not None:
                fn = moved
                continue
            raise CopygenError(
                f"{fn.symbol}: {reg} is reserved, and every temporary that could take its place "
                f"is in use ({', '.join(_users(fn, reg))} name {reg})", where,
                hint="free a register: fewer words in flight (a smaller unroll, or a schedule "
                     "other than pipelined), or reserve fewer registers")
        mapping[reg] = free
        taken.add(free)
    return rename(fn, mapping) if mapping else fn
