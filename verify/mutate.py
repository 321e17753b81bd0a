"""Mutation testing of emitted (or hand-written, kernel-style) uaccess.S text.

Each mutation kind is a function ``(text) -> list[Mutant]``: it finds every
site where it applies and returns one mutant per site, labelled with the
verifier clauses (C1-C6, S1, S2, A1, B1, B2, T1 of issue #4) that should
report it.  ``assembles`` keeps only mutants the real assembler accepts;
``judge`` runs mutants and the original side by side under the qemu oracle
(tests/oracle) and says which ones change behaviour ("killed"), which ones
survive it ("equivalent"), and which survive only because the oracle cannot
see their clause ("blind": S2 and A1 are invisible to a user-mode harness).

Command line: ``python -m verify.mutate FILE.S [--kinds K,...] [--json]``
prints the kill rate per kind.

A mutant's ``expected_clauses`` are alternatives: a verifier catches it by
reporting any one of them (an empty tuple: equivalent by construction).
The oracle reports an unhandled fault as "oops", which stands for C2.

May import gen.toolchain and gen.errors (the cross toolchain is run only
through them), tests.oracle (lazily, for judging; qemu-riscv64 is run here as
tests/oracle/qemu.py runs it, with a timeout), and the standard library.
"""
from __future__ import annotations

import random
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from gen import toolchain
from gen.errors import ToolError

SZREG = 8
ROOT = Path(__file__).resolve().parent.parent
SHIM_INCLUDE = ROOT / "shim" / "include"
WORD_LOADS = {"REG_L", "ld"}
LOADS = WORD_LOADS | {"lw", "lwu", "lh", "lhu", "lb", "lbu"}
STORES = {"REG_S": SZREG, "sd": 8, "sw": 4, "sh": 2, "sb": 1}
INVERSE = {"beq": "bne", "bne": "beq", "blt": "bge", "bge": "blt", "bltu": "bgeu",
           "bgeu": "bltu", "bgt": "ble", "ble": "bgt", "bgtu": "bleu", "bleu": "bgtu",
           "beqz": "bnez", "bnez": "beqz", "bltz": "bgez", "bgez": "bltz",
           "blez": "bgtz", "bgtz": "blez"}
OVERRUN = ("B1", "B2", "C4")
ANY_CLAUSE = ("C1", "C2", "C3", "C4", "C5", "C6", "B1", "B2", "T1")
WRONG_DATA = ("C1", "C3")
ORACLE_BLIND = {"S2", "A1"}


@dataclass(frozen=True)
class Mutant:
    kind: str
    site: int                      # 1-based line number of the mutated line
    description: str
    text: str                      # the whole mutated .S
    expected_clauses: tuple[str, ...]   # the verifier should report one of these


# --------------------------------------------------------------------------
# Reading lines

_LABEL = re.compile(r"^\s*([.\w]+):")
_PREFIX = re.compile(r"^(\s*(?:\d+:\s*)?)")
_COMMENT = re.compile(r"\s*(/\*.*?\*/|//.*|#\s.*)\s*$")


@dataclass(frozen=True)
class Insn:
    """One instruction line: `fixup OP, REG, ADDR, LBL` or `op a, b, c`."""
    no: int                        # 0-based index into the line list
    prefix: str                    # indentation (and a numeric label, if any)
    op: str
    args: tuple[str, ...]
    comment: str
    fixup: bool = False

    def render(self, op: str | None = None, args: tuple[str, ...] | None = None,
               fixup: bool | None = None, note: str = "") -> str:
        op, args = op or self.op, self.args if args is None else args
        fixup = self.fixup if fixup is None else fixup
        body = (f"fixup {op}, {', '.join(args)}" if fixup
                else f"{op}\t{', '.join(args)}" if args else op)
        tail = f"\t\t/* mutant: {note} */" if note else self.comment
        return f"{self.prefix}{body}{tail}"


def parse_insn(no: int, line: str) -> Insn | None:
    """The instruction on a line, or None for labels, directives, comments."""
    m = _COMMENT.search(line)
    comment = line[m.start():] if m else ""
    code = line[:m.start()] if m else line
    prefix = _PREFIX.match(code).group(1)
    body = code[len(prefix):].strip()
    if not body or body.startswith((".", "#", "/*", "*", "\\")) or body.endswith(":"):
        return None
    op, rest = (re.split(r"\s+", body, maxsplit=1) + [""])[:2]
    if "(" in op:
        return None                # SYM_FUNC_START(...), EXPORT_SYMBOL(...)
    if op == "fixup":
        parts = [p.strip() for p in re.split(r"\s*[,\s]\s*", rest.strip(), maxsplit=1)]
        args = tuple(a.strip() for a in parts[1].split(",")) if len(parts) > 1 else ()
        return Insn(no, prefix, parts[0], args, comment, fixup=True)
    args = tuple(a.strip() for a in rest.split(",")) if rest else ()
    return Insn(no, prefix, op, args, comment)


def insns(text: str) -> list[Insn]:
    """Every instruction line of a .S text, in order."""
    return [i for n, ln in enumerate(text.splitlines()) if (i := parse_insn(n, ln))]


def routine_at(text: str, no: int) -> str | None:
    """The SYM_FUNC_START name enclosing 0-based line `no`, if any."""
    name = None
    for ln in text.splitlines()[:no + 1]:
        m = re.search(r"SYM_FUNC_START\((\w+)\)", ln)
        if m:
            name = m.group(1)
        elif re.search(r"SYM_FUNC_END\(", ln):
            name = None
    return name


def _edit(text: str, no: int, new: list[str]) -> str:
    lines = text.splitlines()
    lines[no:no + 1] = new
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def _mutant(kind: str, text: str, ins: Insn, new: list[str], what: str,
            clauses: tuple[str, ...]) -> Mutant:
    return Mutant(kind, ins.no + 1, f"line {ins.no + 1}: {what}", _edit(text, ins.no, new),
                  clauses)


def _offset(addr: str) -> tuple[int, str] | None:
    """`2*SZREG(a1)` -> (16, 'a1'); None if the offset is not a plain expression."""
    m = re.fullmatch(r"(.*)\((\w+)\)", addr.strip())
    if not m:
        return None
    expr = m.group(1).replace("SZREG", str(SZREG)).strip() or "0"
    if not re.fullmatch(r"[-+*0-9 ()]+", expr):
        return None
    return eval(expr, {"__builtins__": {}}), m.group(2)   # digits and + - * only


def _is_csr_status(ins: Insn) -> bool:
    return bool(ins.args) and ins.args[0] in ("CSR_STATUS", "sstatus")


# --------------------------------------------------------------------------
# The mutation kinds: (text) -> one Mutant per applicable site


def sum_set_on_exit(text: str) -> list[Mutant]:
    """An exit path sets sstatus.SUM (csrs) where it should clear it (csrc)."""
    return [_mutant("sum_set_on_exit", text, i, [i.render(op="csrs", note="csrc -> csrs")],
                    "csrc -> csrs: SUM left set on this exit", ("S1",))
            for i in insns(text) if i.op == "csrc" and _is_csr_status(i)]


def sum_never_set(text: str) -> list[Mutant]:
    """The entry never sets SUM: every user access runs with SUM clear."""
    return [_mutant("sum_never_set", text, i, [],
                    "entry csrs dropped: user accesses with SUM clear", ("S2",))
            for i in insns(text) if i.op == "csrs" and _is_csr_status(i)]


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
        new = _edit(text, ins.no, [ins.render(args=("a0", ins.args[1], reg),
                                              note="returns end - start = n")])
        new = _edit(new, start, [text.splitlines()[start],
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
    """A `.L*_fault_plus_K`/`_minus_K` adjustment off by one word: the exit
    claims a word more was stored than was."""
    lines, out = text.splitlines(), []
    for ins in insns(text):
        prev = lines[ins.no - 1] if ins.no else ""
        if (ins.op == "addi" and ins.args[:2] == ("a0", "a0") and "fault" in prev
                and _LABEL.match(prev) and re.fullmatch(r"-?\d+", ins.args[2])):
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


def duplicate_store(text: str) -> list[Mutant]:
    """One store repeated right after itself at the next offset (of its width)."""
    out = []
    for i in _stores(text):
        off = _offset(i.args[1])
        if off is None:
            continue
        addr = f"{off[0] + STORES[i.op]}({off[1]})"
        dup = Insn(i.no, re.sub(r"\d+:", "", i.prefix), i.op,
                   (i.args[0], addr, *i.args[2:]), "", i.fixup)
        out.append(_mutant("duplicate_store", text, i, [text.splitlines()[i.no],
                                                        dup.render(note="duplicate store")],
                           f"store `{i.op} {i.args[0]}, {i.args[1]}` repeated at {addr}",
                           ("B1", "C4")))
    return out


def _load_runs(text: str) -> list[list[Insn]]:
    """Word loads grouped by straight-line run (no label or branch between)."""
    runs, cur = [], []
    for no, line in enumerate(text.splitlines()):
        ins = parse_insn(no, line)
        if _LABEL.match(line) and ins is None or ins and (
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
            new = _edit(text, a.no, [a.render(args=(b.args[0], *a.args[1:]), note="swapped")])
            new = _edit(new, b.no, [b.render(args=(a.args[0], *b.args[1:]), note="swapped")])
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


KINDS: dict[str, Callable[[str], list[Mutant]]] = {
    f.__name__: f for f in (
        sum_set_on_exit, sum_never_set, fixup_return_size, fixup_return_constant,
        fixup_offset, loop_bound_off_by_one, loop_bound_off_by_szreg_minus_1,
        wrong_shift, drop_store, duplicate_store, swap_source_regs, invert_branch,
        missing_extable, wrong_head_length)}


def all_mutants(text: str, kinds: list[str] | None = None) -> list[Mutant]:
    """Every mutant of every kind (or of the named kinds), in kind order."""
    return [m for k in (kinds or KINDS) for m in KINDS[k](text)]


def assembles(text: str, include_dir: Path = SHIM_INCLUDE) -> bool:
    """Does ${CROSS_COMPILE}gcc assemble this .S text against include_dir?
    A missing toolchain is not "does not assemble": its ToolError propagates."""
    toolchain.program("gcc")
    with tempfile.TemporaryDirectory(prefix="copygen-mut-") as d:
        src = Path(d) / "m.S"
        src.write_text(text)
        try:
            toolchain.assemble(src, Path(include_dir), Path(d) / "m.o")
        except ToolError:
            return False
    return True


def assembling_mutants(text: str, include_dir: Path = SHIM_INCLUDE,
                       kinds: list[str] | None = None) -> list[Mutant]:
    """all_mutants() without the ones the assembler rejects."""
    return [m for m in all_mutants(text, kinds) if assembles(m.text, include_dir)]


# --------------------------------------------------------------------------
# Judging mutants under the qemu oracle (tests/oracle)

COPY_FNS, CLEAR_FNS = ("to", "from"), ("clear",)
ROUTINE_FNS = {"__asm_copy_to_user": COPY_FNS, "__asm_copy_from_user": COPY_FNS,
               "__clear_user": CLEAR_FNS}
PAGE, ARENA = 4096, 4 * 4096 + 16384          # as tests/oracle/harness.c
USER_SIDE = {"to": "dst", "from": "src", "clear": "dst"}


def _qemu():
    """tests/oracle/qemu.py (the oracle lives with the tests; found from the
    repository root even when the caller's path does not hold it)."""
    import sys
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.oracle import qemu
    return qemu


def _sweep(fn: str, max_n: int = 200) -> list:
    """Every n in 0..max_n, dst offsets 0/1/7, src co-aligned or 3 bytes off,
    no fault; for copies the page after the source end (up to 7 bytes of
    slack, to keep the alignment) is inaccessible, so a read past the last
    aligned source word shows as a fault."""
    Case, out = _qemu().Case, []
    for n in range(max_n + 1):
        for dalign in (0, 1, 7):
            for rel in (0, 3):
                want = (dalign + rel) % 8
                soff = 2 * PAGE - n - ((2 * PAGE - n - want) % 8)
                side = "src" if fn != "clear" else "none"
                out.append(Case(fn, 8 * 40 + dalign, soff, n, side,
                                2 * PAGE if side == "src" else 0, n * 7 + dalign + rel))
    return out


def _place(rng: random.Random, n: int, align: int) -> int:
    return align + 8 * rng.randrange(max(1, (ARENA - n - 8) // 8))


def _random_case(rng: random.Random, fn: str, i: int):
    """Category i % 3: 0 no fault; 1 a buffer ends exactly at an inaccessible
    page; 2 the user buffer faults at a random byte inside it, often in its
    first or last blocks (at its first byte, or before, one time in ten)."""
    n = rng.choice([rng.randrange(200), rng.randrange(200), rng.randrange(1200),
                    rng.randrange(9000)])
    user = USER_SIDE[fn]
    side = rng.choice(["dst", "src"]) if i % 3 == 1 and fn != "clear" else user
    d = n if i % 3 == 1 else rng.choice([rng.randrange(1, min(n, 80) + 1),   # first blocks
                                         n - rng.randrange(min(n, 160)),     # last blocks
                                         rng.randrange(1, n + 1)]) if n else 0
    if i % 3 == 2 and rng.random() < 0.1:
        d = -rng.randrange(8)      # the buffer starts on the inaccessible page
    if i % 3 == 0 or n == 0:
        side, at, off = "none", 0, _place(rng, n, rng.randrange(8))
    else:
        at = PAGE * max(1, -(-d // PAGE))
        off = at - d
    coin = rng.random()            # the other buffer: co-aligned, aligned or any
    other = _place(rng, n, off % 8 if coin < 0.4 else 0 if coin < 0.7 else rng.randrange(8))
    dst, src = (off, other) if side in ("dst", "none") else (other, off)
    return _qemu().Case(fn, dst, src, n, side, at, rng.randrange(1 << 30))


def _fault_sweep(fn: str, sizes: tuple[int, ...] = (77, 200)) -> list:
    """A fault at every word boundary of a few sizes: the user buffer ends
    `d` bytes into an inaccessible page, for every d in 0..n (so every
    alignment and every word of the first and last blocks); the other
    buffer co-aligned, aligned, or 3 bytes off."""
    Case, out, user = _qemu().Case, [], USER_SIDE[fn]
    for n in sizes:
        for d in range(n + 1):
            off = PAGE - d
            for other in ((off % 8), 0, (off + 3) % 8)[:1 if fn == "clear" else 3]:
                dst, src = (off, 8 * 300 + other) if user == "dst" else (8 * 300 + other, off)
                out.append(Case(fn, dst, src, n, user, PAGE, n + 3 * d + other))
    return out


def oracle_cases(fn: str, count: int = 400, seed: int = 0, sweep: bool = True) -> list:
    """The cases a mutant of routine `fn` (to | from | clear) is judged on:
    with `sweep`, the small-size sweep (for `to` and `clear`) and the fault
    sweep; then `count` random ones."""
    rng = random.Random(f"{seed}-{fn}")
    rnd = [_random_case(rng, fn, i) for i in range(count)]
    if not sweep:
        return rnd
    sizes = [] if fn == "from" else _sweep(fn, 100 if fn == "clear" else 200)
    return sizes + _fault_sweep(fn) + rnd


@dataclass(frozen=True)
class Run:
    """What the oracle saw: per-case results, or how the harness died."""
    results: tuple = ()
    died: str = ""                 # "" | "oops: ..." | "hang"


@dataclass(frozen=True)
class Verdict:
    mutant: Mutant
    status: str                    # killed | equivalent | blind | unassembled
    observed: tuple[str, ...]      # clauses seen violated (and "oops"), where it differs
    example: str = ""              # one case line that tells mutant and original apart


@dataclass
class Bench:
    """A work directory with the harness compiled once, and the cases."""
    workdir: Path
    include_dir: Path
    cases: dict[str, list] = field(default_factory=dict)
    timeout: float = 30.0

    @property
    def harness_obj(self) -> Path:
        obj = self.workdir / "harness.o"
        if not obj.exists():
            toolchain.run("gcc", ["-O1", "-c", _qemu().HERE / "harness.c", "-o", obj])
        return obj


def make_bench(workdir: Path, include_dir: Path = SHIM_INCLUDE, count: int = 400,
               seed: int = 0, sweep: bool = True) -> Bench:
    """A Bench in `workdir` with the cases of oracle_cases() for each routine."""
    fns = COPY_FNS + CLEAR_FNS
    # `from` has no sweep: twice the random cases instead
    return Bench(Path(workdir), Path(include_dir),
                 {fn: oracle_cases(fn, count * (2 if fn == "from" else 1), seed, sweep)
                  for fn in fns})


def build_exe(bench: Bench, text: str, name: str) -> Path | None:
    """Assemble `text` and link it with the harness; None if it does not build."""
    src, obj, exe = (bench.workdir / f"{name}{ext}" for ext in (".S", ".o", ".exe"))
    src.write_text(text)
    try:
        toolchain.assemble(src, bench.include_dir, obj)
        toolchain.run("gcc", ["-static", "-o", exe, bench.harness_obj, obj])
    except ToolError:
        return None
    return exe


def run_exe(bench: Bench, exe: Path, cases: list) -> Run:
    """Feed cases to the harness under qemu-riscv64; a crash or a timeout is
    reported, not raised."""
    qemu = _qemu()
    feed = "".join(c.line() + "\n" for c in cases)
    try:
        proc = subprocess.run(["qemu-riscv64", str(exe)], input=feed, capture_output=True,
                              text=True, timeout=bench.timeout)
    except subprocess.TimeoutExpired:
        return Run(died="hang")
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != len(cases):
        why = proc.stderr.strip().splitlines()
        return Run(died=f"oops: {why[-1] if why else f'exit {proc.returncode}'}")
    res = []
    for ln in lines:
        ret, s, p, r, h = ln.split()
        res.append(qemu.Result(int(ret), s == "1", p == "1", r == "1", h))
    return Run(tuple(res))


def fault_in_range(case) -> bool:
    """Is some byte of the buffer on the protected side inaccessible?"""
    if case.fault_side == "none":
        return False
    off = case.dst_off if case.fault_side == "dst" else case.src_off
    return case.fault_at < off + case.n      # inaccessible from fault_at on


def observed_clauses(case, got, ref) -> set[str]:
    """The clauses a differing result `got` breaks where the reference `ref` did not."""
    seen = {"S1"} if got.sum_at_exit and not ref.sum_at_exit else set()
    if got.ret > case.n:
        return seen | {"C2"}
    if not fault_in_range(case):
        if got.ret != 0 and case.fault_side != "none":
            seen.add("B1" if case.fault_side == "dst" else "B2")   # touched the page past it
        elif got.ret != 0 or not got.prefix_ok:
            seen.add("C1")
        if not got.rest_untouched:
            seen.add("B1" if got.ret == 0 else "C4")
    else:
        if not got.prefix_ok:
            seen.add("C3")
        if not got.rest_untouched and ref.rest_untouched:
            seen.add("C4")
        if got.ret == case.n != ref.ret:
            seen.add("C5")
        if got.ret != ref.ret and ref.rest_untouched:
            seen.add("C6")
    return seen or ({"C4"} if got != ref else set())


def _brief(r) -> str:
    return (f"ret {r.ret}, SUM {int(r.sum_at_exit)}, prefix_ok {int(r.prefix_ok)}, "
            f"rest_untouched {int(r.rest_untouched)}")


def compare(cases: list, got: Run, ref: Run) -> tuple[tuple[str, ...], str]:
    """(clauses seen, one telling case) of a mutant's run against the reference."""
    if got.died:
        return (("T1",) if got.died == "hang" else ("oops",)), got.died
    seen, example = set(), ""
    for case, g, r in zip(cases, got.results, ref.results):
        if g != r:
            seen |= observed_clauses(case, g, r)
            example = example or f"case `{case.line()}`: {_brief(g)}; original {_brief(r)}"
    return tuple(sorted(seen)), example


def fns_of(m: Mutant) -> tuple[str, ...]:
    """The harness routines a mutant can affect (by the routine of its site)."""
    return ROUTINE_FNS.get(routine_at(m.text, m.site - 1) or "", COPY_FNS + CLEAR_FNS)


def judge_one(bench: Bench, m: Mutant, ref: dict[str, Run], tag: str) -> Verdict:
    """Build one mutant (as files named `tag`) and judge it against `ref`."""
    seen, example = set(), ""
    try:
        exe = build_exe(bench, m.text, tag)
        if exe is None:
            return Verdict(m, "unassembled", (), "does not assemble or link")
        for fn in fns_of(m):
            s, e = compare(bench.cases[fn], run_exe(bench, exe, bench.cases[fn]), ref[fn])
            seen |= set(s)
            example = example or e
    finally:
        for ext in (".S", ".o", ".exe"):
            (bench.workdir / f"{tag}{ext}").unlink(missing_ok=True)
    if seen:
        return Verdict(m, "killed", tuple(sorted(seen)), example)
    blind = bool(m.expected_clauses) and set(m.expected_clauses) <= ORACLE_BLIND
    return Verdict(m, "blind" if blind else "equivalent", ())


def changes_behaviour(text: str, m: Mutant, bench: Bench | None = None) -> bool:
    """Does the oracle tell mutant `m` from the original `text`?"""
    return judge(text, [m], bench, workers=1)[0].status == "killed"


def reference(bench: Bench, text: str) -> dict[str, Run]:
    """The original's results on every case; it must build and not die."""
    exe = build_exe(bench, text, "original")
    assert exe is not None, "the original text does not assemble"
    ref = {fn: run_exe(bench, exe, cases) for fn, cases in bench.cases.items()}
    for fn, r in ref.items():
        assert not r.died, f"the original died under the oracle ({fn}): {r.died}"
    return ref


def judge(text: str, mutants: list[Mutant], bench: Bench | None = None,
          workers: int = 2) -> list[Verdict]:
    """Run each mutant beside the original under the qemu oracle: killed (its
    results differ somewhere), equivalent (survived), blind (survived, but its
    clause is one the oracle cannot see), or unassembled."""
    from concurrent.futures import ThreadPoolExecutor
    with tempfile.TemporaryDirectory(prefix="copygen-judge-") as d:
        bench = bench or make_bench(Path(d))
        ref = reference(bench, text)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda im: judge_one(bench, im[1], ref, f"m{im[0]}"),
                                 enumerate(mutants)))


# --------------------------------------------------------------------------
# Reporting


def clause_hit(v: Verdict) -> bool:
    """Did the oracle see one of the clauses the mutant was expected to break?
    (An oops stands for C2: the routine never returned a count.)"""
    seen = set(v.observed) | ({"C2"} if "oops" in v.observed else set())
    return bool(seen & set(v.mutant.expected_clauses))


def summary(verdicts: list[Verdict]) -> dict[str, dict]:
    """Per kind: counts by status, the oracle kill rate (killed over killed +
    equivalent; blind and unassembled ones left out) and how many killed
    mutants showed an expected clause."""
    out: dict[str, dict] = {}
    for v in verdicts:
        row = out.setdefault(v.mutant.kind, {"mutants": 0, "killed": 0, "equivalent": 0,
                                             "blind": 0, "unassembled": 0,
                                             "expected_clause_seen": 0})
        row["mutants"] += 1
        row[v.status] += 1
        row["expected_clause_seen"] += v.status == "killed" and clause_hit(v)
    for row in out.values():
        judged = row["killed"] + row["equivalent"]
        row["kill_rate"] = round(row["killed"] / judged, 3) if judged else None
    return out


def main(argv: list[str] | None = None) -> int:
    """The kill-rate table (or JSON) of one .S file."""
    import argparse
    import json
    ap = argparse.ArgumentParser(prog="python -m verify.mutate",
                                 description="mutate a uaccess.S and judge the "
                                             "mutants under the qemu oracle")
    ap.add_argument("file", type=Path)
    ap.add_argument("--kinds", help="comma-separated kinds (default: all)")
    ap.add_argument("--include", type=Path, default=SHIM_INCLUDE)
    ap.add_argument("--count", type=int, default=400, help="random cases per routine")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--survivors", action="store_true", help="list surviving mutants")
    args = ap.parse_args(argv)
    text = args.file.read_text()
    kinds = args.kinds.split(",") if args.kinds else None
    with tempfile.TemporaryDirectory(prefix="copygen-judge-") as d:
        bench = make_bench(Path(d), args.include, args.count)
        verdicts = judge(text, all_mutants(text, kinds), bench, args.workers)
    table = summary(verdicts)
    if args.json:
        print(json.dumps({"file": str(args.file), "kinds": table,
                          "survivors": [[v.mutant.kind, v.mutant.site, v.status,
                                         v.mutant.description] for v in verdicts
                                        if v.status != "killed"]}, indent=1))
        return 0
    cols = ("mutants", "killed", "equivalent", "blind", "unassembled",
            "expected_clause_seen", "kill_rate")
    print(f"{'kind':34}" + "".join(f"{c[:10]:>11}" for c in cols))
    for kind, row in table.items():
        print(f"{kind:34}" + "".join(f"{str(row[c]):>11}" for c in cols))
    for v in verdicts:
        if args.survivors and v.status != "killed":
            print(f"{v.status:12} {v.mutant.kind:32} {v.mutant.description}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
