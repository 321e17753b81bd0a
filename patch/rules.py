"""The register rules of a kernel tree, read from its own files, and the
strategy put under them.

  t6 reserved     no code line of the files the patch replaces (uaccess.S;
                  with a string block memcpy.S, memmove.S and memset.S)
                  names t6 (x31): mainline took t6 out of its hand-written
                  assembly in 2025 to keep it for the kernel, and a patch
                  that puts it back is refused.  Only t6: another register
                  a small file happens not to use is no rule.
  -ffixed-REG     in arch/riscv/Makefile: the compiler keeps REG out of all
                  C, so the assembly must keep out too: REG reserved.
  jump t2         the tree's memset.S enters its run of stores through t2
                  (x7), the register landing pads (Zicfilp) exempt:
                  computed jumps only through t2.  A jump through another
                  register (6.12's memset jumps through a5) is no rule.

The strategy's own rules (its targets' `reserve` and `jump`) are added:
a strategy may add a rule, never drop one of the tree's, so a `jump`
register other than the tree's is refused.  The merged rules go into
every target of the strategy (gen.lower.registers honours them) and to
the verifier as clause R1 (verify.contract.rules); the patch message
says which rule was followed and why.

Role: tree text in, rules (each with its reason) out.  May import gen
(front.registers, front.strategy, emission.asmtext), verify.contract.rules,
copygen.errors and the standard library.
"""
from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, replace

from copygen.errors import CopygenError
from copygen.gen.emission import asmtext
from copygen.gen.front.registers import ABI, abi_name, refusal
from copygen.gen.front.strategy import Strategy
from copygen.verify.contract.rules import RegisterRules

MAKEFILE = "arch/riscv/Makefile"
MEMSET_S = "arch/riscv/lib/memset.S"
STRING_FILES = ("arch/riscv/lib/memcpy.S", "arch/riscv/lib/memmove.S", MEMSET_S)
# the register whose absence from the tree's assembly is a rule, and the
# jump register a tree's memset makes one
AVOIDED, JUMP = "t6", "t2"
FIXED = re.compile(r"-ffixed-(\w+)")
JUMP_INSN = re.compile(r"^\s*(?:jr|jalr)\s+(?:\w+\s*,\s*)?(?:-?\d*\()?(\w+)\)?\s*$")
COMMENT = re.compile(r"/\*.*?\*/|//.*$")
WIDTH = 72


@dataclass(frozen=True)
class Rule:
    kind: str            # reserve | jump
    register: str        # ABI name
    why: str             # what in the tree (or the strategy) says so

    def line(self) -> str:
        """The rule and why, e.g. "t6 is not used by the tree's hand-written
        assembly (uaccess.S): reserved"."""
        if self.kind == "jump":
            return f"{self.why}: computed jumps only through {self.register}"
        named = self.why.startswith(f"{self.register} ")
        return f"{self.why}: {'reserved' if named else self.register + ' reserved'}"


@dataclass(frozen=True)
class Rules:
    rules: tuple[Rule, ...] = ()

    @property
    def reserve(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.register for r in self.rules if r.kind == "reserve"))

    @property
    def jump(self) -> str | None:
        return next((r.register for r in self.rules if r.kind == "jump"), None)

    def verify_rules(self) -> RegisterRules:
        return RegisterRules(tuple(sorted(self.reserve, key=_number)), self.jump)

    def lines(self) -> list[str]:
        """The message's paragraph ([] when there is no rule)."""
        if not self.rules:
            return []
        out = ["Register rules (the generated code follows them; clause R1 proves it):"]
        for r in self.rules:
            out += textwrap.wrap(r.line(), WIDTH, initial_indent="  ",
                                 subsequent_indent="    ")
        return out

    def as_list(self) -> list[dict]:
        return [{"rule": r.kind, "register": r.register, "why": r.why} for r in self.rules]


def _number(reg: str) -> int:
    return ABI.index(reg)


def _code(text: str) -> list[str]:
    """The code of an assembly file's lines, comments left out (macro
    bodies and preprocessor lines too, which asmtext keeps apart)."""
    out = []
    for ln in asmtext.code_lines(text.splitlines()):
        if ln.kind in ("macro", "preprocessor"):
            out.append(COMMENT.sub("", ln.comment))
        else:
            out.append(ln.code)
    return out


def _names(code: list[str], reg: str) -> bool:
    alias = f"x{_number(reg)}"
    pat = re.compile(rf"(?<![\w.$\\])({reg}|{alias})(?![\w.$])")
    return any(pat.search(c) for c in code)


def _avoided(show: Callable[[str], str | None], files: tuple[str, ...]) -> list[Rule]:
    texts = {f: show(f) for f in files}
    present = [f for f, t in texts.items() if t is not None]
    if not present or any(_names(_code(texts[f]), AVOIDED) for f in present):
        return []
    where = ", ".join(f.rsplit("/", 1)[-1] for f in present)
    return [Rule("reserve", AVOIDED,
                 f"{AVOIDED} is not used by the tree's hand-written assembly ({where})")]


def _fixed(show: Callable[[str], str | None]) -> list[Rule]:
    text = show(MAKEFILE) or ""
    out: list[Rule] = []
    for line in text.splitlines():
        for word in FIXED.findall(line.split("#", 1)[0]):
            reg = abi_name(word)
            if reg is None or any(r.register == reg for r in out):
                continue          # a float register: no instruction here names one
            why = refusal(reg)
            if why:
                raise CopygenError(f"{MAKEFILE} has -ffixed-{word}; {why}",
                                   hint="copygen cannot generate code for this tree")
            out.append(Rule("reserve", reg, f"{MAKEFILE} has -ffixed-{word}"))
    return out


def _memset_jump(show: Callable[[str], str | None]) -> list[Rule]:
    text = show(MEMSET_S)
    if text is None:
        return []
    regs = {abi_name(m.group(1)) for c in _code(text) if (m := JUMP_INSN.match(c))}
    if JUMP in regs:
        return [Rule("jump", JUMP, f"the tree's memset.S computes its jump through {JUMP}")]
    return []


def from_tree(show: Callable[[str], str | None], files: tuple[str, ...]) -> Rules:
    """The tree's rules at HEAD (`show(path)`: a file's text, None when the
    tree has none); `files`: what the patch replaces."""
    rules = _avoided(show, files) + _fixed(show)
    rules = [r for i, r in enumerate(rules) if r.register not in {x.register for x in rules[:i]}]
    return Rules(tuple(rules + _memset_jump(show)))


def with_strategy(tree: Rules, st: Strategy) -> Rules:
    """The tree's rules and the strategy's own, which may add, never drop."""
    out = list(tree.rules)
    for t in st.targets:
        for reg in t.reserve:
            if reg not in {r.register for r in out if r.kind == "reserve"}:
                out.append(Rule("reserve", reg, f"the strategy's target {t.name} says "
                                                f"`reserve {reg}`"))
        if t.jump is None:
            continue
        have = Rules(tuple(out)).jump
        if have is not None and have != t.jump:
            raise CopygenError(f"target {t.name} routes computed jumps through {t.jump}, but "
                               f"the tree's rule is {have}", t.loc,
                               hint=f"write `jump {have}` or leave `jump` out: a strategy may "
                                    "add a rule to the tree's, not change one")
        if have is None:
            out.append(Rule("jump", t.jump, f"the strategy's target {t.name} says "
                                            f"`jump {t.jump}`"))
    return Rules(tuple(out))


def under(st: Strategy, rules: Rules) -> Strategy:
    """`st` with every target (and each routine's copy of it) under `rules`."""
    if not rules.rules:
        return st

    def target(t):
        return replace(t, reserve=tuple(dict.fromkeys((*t.reserve, *rules.reserve))),
                       jump=rules.jump or t.jump)

    def routine(r):
        return None if r is None else replace(r, target=target(r.target))
    return replace(st, targets=tuple(target(t) for t in st.targets),
                   copy_user=routine(st.copy_user), clear_user=routine(st.clear_user),
                   string=routine(st.string))
