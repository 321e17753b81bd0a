"""Mutation testing of emitted (or hand-written, kernel-style) uaccess.S text.

Each mutation kind is a function ``(text) -> list[Mutant]``: it finds every
site where it applies and returns one mutant per site, labelled with the
verifier clauses (C1-C6, S1, S2, A1, B1, B2, T1 of issue #4) that should
report it.  ``assembles`` keeps only mutants the real assembler accepts.
mutate.judge runs mutants and the original side by side under the qemu
oracle and reports the kill rate.

Command line: ``copygen mutate FILE.S [--kinds K,...] [--json]`` prints
the kill rate per kind (mutate.judge does the judging).

A mutant's ``expected_clauses`` are alternatives: a verifier catches it by
reporting any one of them (an empty tuple: equivalent by construction).
The oracle reports an unhandled fault as "oops", which stands for C2.

Role: the mutation kinds.  May import mutate.insns, gen.emission.asmtext,
gen.toolchain, gen.resources and copygen.errors (the cross toolchain is run only through them)
and the standard library.
"""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from copygen.errors import CopygenError, Loc, ToolError
from copygen.gen import toolchain
from copygen.gen.emission.asmtext import LABEL
from copygen.gen.resources import shim_dir
from copygen.mutate.insns import (LOADS, STORES, SZREG, WORD_LOADS, Insn, edit,  # noqa: F401
                                  insns, is_csr_status, offset, parse_insn, routine_at)

INVERSE = {"beq": "bne", "bne": "beq", "blt": "bge", "bge": "blt", "bltu": "bgeu",
           "bgeu": "bltu", "bgt": "ble", "ble": "bgt", "bgtu": "bleu", "bleu": "bgtu",
           "beqz": "bnez", "bnez": "beqz", "bltz": "bgez", "bgez": "bltz",
           "blez": "bgtz", "bgtz": "blez"}
OVERRUN = ("B1", "B2", "C4")
ANY_CLAUSE = ("C1", "C2", "C3", "C4", "C5", "C6", "B1", "B2", "T1")
WRONG_DATA = ("C1", "C3")
# what the qemu oracle cannot see: SUM at each access, callee-saved
# registers, and loads (an over-read shows only where it meets an
# inaccessible page)
ORACLE_BLIND = {"S2", "A1", "B2"}


@dataclass(frozen=True)
class Mutant:
    kind: str
    site: int                      # 1-based line number of the mutated line
    description: str
    text: str                      # the whole mutated .S
    expected_clauses: tuple[str, ...]   # the verifier should report one of these



def _mutant(kind: str, text: str, ins: Insn, new: list[str], what: str,
            clauses: tuple[str, ...]) -> Mutant:
    return Mutant(kind, ins.no + 1, f"line {ins.no + 1}: {what}", edit(text, ins.no, new),
                  clauses)


# --------------------------------------------------------------------------
# The mutation kinds: (text) -> one Mutant per applicable site


def sum_set_on_exit(text: str) -> list[Mutant]:
    """An exit path sets sstatus.SUM (csrs) where it should clear it (csrc)."""
    return [_mutant("sum_set_on_exit", text, i, [i.render(op="csrs", note="csrc -> csrs")],
                    "csrc -> csrs: SUM left set on this exit", ("S1",))
            for i in insns(text) if i.op == "csrc" and is_csr_status(i)]


def sum_never_set(text: str) -> list[Mutant]:
    """The entry never sets SUM: every user access runs with SUM clear."""
    return [_mutant("sum_never_set", text, i, [],
                    "entry csrs dropped: user accesses with SUM clear", ("S2",))
            for i in insns(text) if i.op == "csrs" and is_csr_status(i)]


def _fault_returns(text: str) -> list[Insn]:
    """`sub a0, END, a0`: a fault exit's `end - a0`."""
    return [i for i in insns(text)
            if i.op == "sub" and len(i.args) == 3 and i.args[0] == i.args[2] == "a0"]


def _free_register(text: str, no: int) -> str | None:
    """A temporary the routine around line `no` never names."""
    name = routine_at(text, no)
    lines = text.splitlines()
    body = "\n".join(ln for k, ln in enumerate(lines) if routine_at(text, k) == name)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    for reg in ("t5", "t4", "t3", "t2", "a7", "a6", "a5"):
        if not re.search(rf"\b{reg}\b", body):
            return reg
    return None


def fixup_return_size(text: str) -> list[Mutant]:
    """The fault exit returns the original size (end - start), as the kernel did
    2018-2023: the start is saved in a free temporary at the routine's entry."""
    out = []
    for ins in _fault_returns(text):
        name, reg = routine_at(text, ins.no), _free_register(text, ins.no)
        start = next((k for k, ln in enumerate(text.splitlines())
                      if re.search(rf"SYM_FUNC_START\({name}\)", ln or "")), None)
        if name is None or reg is None or start is None:
            continue
        new = edit(text, ins.no, [ins.render(args=("a0", ins.args[1], reg),
                                              note="returns end - start = n")])
        new = edit(new, start, [text.splitlines()[start],
                                 f"\tmv\t{reg}, a0\t\t/* mutant: remember the start */"])
        out.append(Mutant("fixup_return_size", ins.no + 1,
                          f"line {ins.no + 1}: fault exit returns the original size",
                          new, ("C5", "C4", "C6")))
    return out


def fixup_return_constant(text: str) -> list[Mutant]:
    """The fault exit returns 0 (claims everything was copied)."""
    return [_mutant("fixup_return_constant", text, i,
                    [i.render(op="li", args=("a0", "0"), note="returns 0")],
                    "fault exit returns 0", ("C3", "C6"))
            for i in _fault_returns(text)]


def fixup_offset(text: str) -> list[Mutant]:
    """A fault exit's adjustment (`.L*_fault_a0_plus_K`, `_a2_minus_K`, ...)
    off by one word: the exit claims a word more was stored than was."""
    lines, out = text.splitlines(), []
    for ins in insns(text):
        prev = lines[ins.no - 1] if ins.no else ""
        if (ins.op == "addi" and ins.args[:2] == ("a0", "a0") and "fault" in prev
                and LABEL.match(prev) and re.fullmatch(r"-?\d+", ins.args[2])):
            k = int(ins.args[2]) + SZREG
            out.append(_mutant("fixup_offset", text, ins,
                               [ins.render(args=("a0", "a0", str(k)), note="offset + SZREG")],
                               f"fixup offset {ins.args[2]} -> {k}", ("C3", "C6")))
    return out


def _limits(text: str) -> list[Insn]:
    """Loop limits `addi LIMIT, END, -EXPR` (a distinct register, a negative offset)."""
    return [i for i in insns(text)
            if i.op == "addi" and len(i.args) == 3 and i.args[0] != i.args[1]
            and i.args[1] not in ("sp", "zero") and i.args[2].startswith("-")]


def _limit_plus(text: str, kind: str, extra: str, what: str) -> list[Mutant]:
    return [_mutant(kind, text, i,
                    [i.render(args=(i.args[0], i.args[1], f"{i.args[2]}+{extra}"),
                              note=f"limit + {extra}")],
                    f"loop limit {i.args[2]} -> {i.args[2]}+{extra}: {what}", OVERRUN)
            for i in _limits(text)]


def loop_bound_off_by_one(text: str) -> list[Mutant]:
    """A loop limit one byte too large, or a dst-cursor loop test made
    non-strict (bltu -> bleu, bgeu -> bgtu): one more iteration than fits
    (in the head: dst left misaligned, so a word store straddling the fault
    page is not done at all and the return is no longer exact, C6)."""
    out = _limit_plus(text, "loop_bound_off_by_one", "1", "a block may start 1 byte short")
    weaker = {"bltu": "bleu", "bgeu": "bgtu"}
    for i in insns(text):
        if i.op in weaker and i.args and i.args[0] == "a0":
            out.append(_mutant("loop_bound_off_by_one", text, i,
                               [i.render(op=weaker[i.op], note=f"{i.op} -> {weaker[i.op]}")],
                               f"{i.op} -> {weaker[i.op]}: one more step at the bound",
                               OVERRUN + ("C6",)))
    return sorted(out, key=lambda m: m.site)


def loop_bound_off_by_szreg_minus_1(text: str) -> list[Mutant]:
    """A loop limit SZREG-1 bytes too large (the 2021 bug's loop half)."""
    return _limit_plus(text, "loop_bound_off_by_szreg_minus_1", "(SZREG-1)",
                       "a block may start SZREG-1 bytes short")


def wrong_shift(text: str) -> list[Mutant]:
    """The shift copy's bit count wrong: `<< 3` as `<< 2` (off << LGREG on
    RV32), the `>> 3` back to bytes as `>> 2`, or the `neg` of shl dropped."""
    out = []
    for i in insns(text):
        if i.op in ("slli", "srli") and len(i.args) == 3 and i.args[2] == "3":
            out.append(_mutant("wrong_shift", text, i,
                               [i.render(args=(*i.args[:2], "2"), note=f"{i.op} by 2")],
                               f"{i.op} by 3 -> by 2", WRONG_DATA))
        elif i.op == "neg":
            out.append(_mutant("wrong_shift", text, i, [], f"`neg {', '.join(i.args)}` dropped",
                               WRONG_DATA))
    return out


def _stores(text: str) -> list[Insn]:
    return [i for i in insns(text) if i.op in STORES and len(i.args) >= 2]


def drop_store(text: str) -> list[Mutant]:
    """One store removed."""
    return [_mutant("drop_store", text, i, [], f"store `{i.op} {i.args[0]}, {i.args[1]}` dropped",
                    WRONG_DATA) for i in _stores(text)]


def _resumes_bytes(label: str) -> bool:
    """Does this fault exit resume the byte loop at the first byte not stored
    (copygen's `fault exact` copies: `.L*_retry*` exits, or the byte loop)?"""
    return "_retry" in label or label.endswith("_bytes")


def _overwritten_next(text: str, i: Insn, addr: str) -> bool:
    """Is `addr` the address of the next store of i's straight-line run?"""
    for ins in insns(text):
        if ins.no <= i.no:
            continue
        if ins.op in STORES:
            return ins.args[1].replace(" ", "") == addr or offset(ins.args[1]) == offset(addr)
        if ins.op.startswith("b") or ins.op in ("j", "ret", "jr"):
            return False
    return False


def duplicate_store(text: str) -> list[Mutant]:
    """One store repeated right after itself at the next offset (of its width).

    Where the block's next store overwrites the duplicate and a fault exit
    resumes the byte loop (which re-copies from the first byte not stored),
    the mutant keeps the contract: equivalent by construction."""
    out = []
    for i in _stores(text):
        off = offset(i.args[1])
        if off is None:
            continue
        addr = f"{off[0] + STORES[i.op]}({off[1]})"
        dup = Insn(i.no, re.sub(r"\d+:", "", i.prefix), i.op,
                   (i.args[0], addr, *i.args[2:]), "", i.fixup)
        masked = i.fixup and _resumes_bytes(i.args[-1]) and _overwritten_next(text, i, addr)
        out.append(_mutant("duplicate_store", text, i, [text.splitlines()[i.no],
                                                        dup.render(note="duplicate store")],
                           f"store `{i.op} {i.args[0]}, {i.args[1]}` repeated at {addr}",
                           () if masked else ("B1", "C4")))
    return out


def _load_runs(text: str) -> list[list[Insn]]:
    """Word loads grouped by straight-line run (no label or branch between)."""
    runs, cur = [], []
    for no, line in enumerate(text.splitlines()):
        ins = parse_insn(no, line)
        if LABEL.match(line) and ins is None or ins and (
                ins.op in INVERSE or ins.op in ("j", "jal", "jr", "ret", "tail", "call")):
            runs, cur = runs + [cur], []
        elif ins and ins.op in WORD_LOADS and ins.args:
            cur.append(ins)
    return [r for r in runs + [cur] if len(r) > 1]


def swap_source_regs(text: str) -> list[Mutant]:
    """Two neighbouring word loads of a block swap destination registers (the
    words land in each other's stores); or an `or`'s two operands swapped
    (equivalent by construction: or is commutative)."""
    out = []
    for run in _load_runs(text):
        for a, b in zip(run, run[1:]):
            if a.args[0] == b.args[0]:
                continue
            new = edit(text, a.no, [a.render(args=(b.args[0], *a.args[1:]), note="swapped")])
            new = edit(new, b.no, [b.render(args=(a.args[0], *b.args[1:]), note="swapped")])
            out.append(Mutant("swap_source_regs", a.no + 1,
                              f"lines {a.no + 1},{b.no + 1}: load destinations "
                              f"{a.args[0]} <-> {b.args[0]}", new, WRONG_DATA))
    for i in insns(text):
        if i.op == "or" and len(i.args) == 3 and i.args[1] != i.args[2]:
            out.append(_mutant("swap_source_regs", text, i,
                               [i.render(args=(i.args[0], i.args[2], i.args[1]), note="swapped")],
                               "or operands swapped (equivalent: or commutes)", ()))
    return sorted(out, key=lambda m: m.site)


def invert_branch(text: str) -> list[Mutant]:
    """A conditional branch tests the opposite condition."""
    return [_mutant("invert_branch", text, i,
                    [i.render(op=INVERSE[i.op], note=f"{i.op} -> {INVERSE[i.op]}")],
                    f"{i.op} -> {INVERSE[i.op]}", ANY_CLAUSE)
            for i in insns(text) if i.op in INVERSE]


def missing_extable(text: str) -> list[Mutant]:
    """A user access loses its exception-table entry: a fault in it is an
    oops, so the routine never returns a count (C2)."""
    return [_mutant("missing_extable", text, i,
                    [i.render(args=i.args[:2], fixup=False, note="no extable entry")],
                    f"`fixup {i.op}, {i.args[0]}, {i.args[1]}` without its extable entry",
                    ("C2",))
            for i in insns(text) if i.fixup and len(i.args) >= 3]


def wrong_head_length(text: str) -> list[Mutant]:
    """The alignment head rounds dst+SZREG (not dst+SZREG-1) up: an aligned dst
    copies a whole word of head bytes, more than the threshold allows for."""
    return [_mutant("wrong_head_length", text, i,
                    [i.render(args=(*i.args[:2], "SZREG"), note="head SZREG-1 -> SZREG")],
                    f"head `addi {i.args[0]}, a0, {i.args[2]}` -> SZREG", OVERRUN)
            for i in insns(text)
            if i.op == "addi" and len(i.args) == 3 and i.args[1] == "a0"
            and i.args[2].replace(" ", "") in ("SZREG-1", str(SZREG - 1))]


def _backward_branch_follows(text: str, i: Insn) -> bool:
    """Is the next branch after `i` (in its straight-line run) a loop's
    back-edge (`bltu ..., 1b` and the like)?"""
    for ins in insns(text):
        if ins.no <= i.no:
            continue
        if ins.op in INVERSE or ins.op in ("j", "jr", "ret", "tail"):
            return ins.op in INVERSE and ins.args[-1].endswith("b")
    return False


def drop_pointer_increment(text: str) -> list[Mutant]:
    """A loop's pointer increment (`addi aN, aN, K`, K > 0, before the
    back-edge) dropped: the loop makes no progress (T1), or copies the same
    bytes again (wrong data)."""
    out = []
    for i in insns(text):
        if (i.op == "addi" and len(i.args) == 3 and i.args[0] == i.args[1]
                and i.args[0] in ("a0", "a1", "a3", "a4", "a5")
                and re.fullmatch(r"\d+|SZREG|\d+\*SZREG", i.args[2].replace(" ", ""))
                and _backward_branch_follows(text, i)):
            out.append(_mutant("drop_pointer_increment", text, i, [],
                               f"loop increment `addi {i.args[0]}, {i.args[0]}, {i.args[2]}` dropped",
                               ("T1",) + WRONG_DATA + ("B1", "C4")))
    return out


def load_one_word_further(text: str) -> list[Mutant]:
    """After a block's last word load (or a lone word load), one more word
    loaded past it, into a register the routine never uses: a read past the
    source's last word whenever the block ends there (B2)."""
    runs = _load_runs(text)
    in_runs = {i.no for r in runs for i in r}
    lasts = [r[-1] for r in runs] + [i for i in insns(text) if i.op in WORD_LOADS and i.args
                                    and i.no not in in_runs]
    out = []
    for last in sorted(lasts, key=lambda i: i.no):
        off, reg = offset(last.args[1]), _free_register(text, last.no)
        if off is None or reg is None:
            continue
        extra = Insn(last.no, re.sub(r"\d+:", "", last.prefix), last.op,
                     (reg, f"{off[0] + SZREG}({off[1]})", *last.args[2:]), "", last.fixup)
        out.append(_mutant("load_one_word_further", text, last,
                           [text.splitlines()[last.no], extra.render(note="one word further")],
                           f"extra load `{last.op} {reg}, {off[0] + SZREG}({off[1]})`", ("B2",)))
    return out


KINDS: dict[str, Callable[[str], list[Mutant]]] = {
    f.__name__: f for f in (
        sum_set_on_exit, sum_never_set, fixup_return_size, fixup_return_constant,
        fixup_offset, loop_bound_off_by_one, loop_bound_off_by_szreg_minus_1,
        wrong_shift, drop_store, duplicate_store, swap_source_regs, invert_branch,
        missing_extable, wrong_head_length, drop_pointer_increment, load_one_word_further)}


def all_mutants(text: str, kinds: list[str] | None = None) -> list[Mutant]:
    """Every mutant of every kind (or of the named kinds), in kind order."""
    return [m for k in (kinds or KINDS) for m in KINDS[k](text)]


def assembles(text: str, include_dir: Path | None = None) -> bool:
    """Does ${CROSS_COMPILE}gcc assemble this .S text against include_dir?
    A missing toolchain is not "does not assemble": its ToolError propagates."""
    toolchain.program("gcc")
    with tempfile.TemporaryDirectory(prefix="copygen-mut-") as d:
        src = Path(d) / "m.S"
        src.write_text(text)
        try:
            toolchain.assemble(src, Path(include_dir or shim_dir() / "include"), Path(d) / "m.o")
        except ToolError:
            return False
    return True


# the assembler's complaint: FILE:LINE: Error: MESSAGE
ASSEMBLER_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+): (?:Error|error|Fatal error): (?P<msg>.*)$",
                             re.MULTILINE)


def require_assembles(path: Path, include_dir: Path | None = None) -> None:
    """The file mutants are made of must assemble as it is: otherwise a
    CopygenError at the assembler's first complaint (every mutant would be
    "unassembled", and the kill rate meaningless).  A missing toolchain
    stays a ToolError."""
    toolchain.program("gcc")
    with tempfile.TemporaryDirectory(prefix="copygen-mut-") as d:
        try:
            toolchain.assemble(path, Path(include_dir or shim_dir() / "include"), Path(d) / "m.o")
        except ToolError as err:
            m = ASSEMBLER_ERROR.search(err.detail or "")
            where = Loc(str(path), int(m["line"]), 1) if m else Loc(str(path))
            why = m["msg"] if m else (err.detail or err.message).strip().splitlines()[-1]
            raise CopygenError(f"does not assemble: {why}", where,
                               hint="mutate takes a kernel-style .S that assembles against "
                                    "copygen's shim (or --include DIR)") from None
