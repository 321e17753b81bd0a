"""Clause R1 in the prover: the parts of the register rules' proof that are
not the explorer's (verify.symbolic.explore checks each instruction).

At every return the reserved registers hold their entry values (the
explorer has already asked that no instruction on the way writes them;
this asks it of the state, so that a summarised call, which is no
instruction, is covered too).  The clause's status is written into the
report with what it covers; a routine whose verdict concrete runs decided
before the proof (verify.counterexamples.early) gets R1 "not checked".

Role: R1's goals and report lines.  May import z3, verify.contract.clauses,
verify.contract.rules, verify.contract.world.
"""
from __future__ import annotations

import z3

from copygen.verify.contract.clauses import NOT_CHECKED, RULE_CLAUSE
from copygen.verify.contract.rules import RegisterRules
from copygen.verify.contract.world import World


def kept_at_return(w: World, st) -> z3.BoolRef | None:
    """Every reserved register holds its entry value in state `st` (None: no
    register is reserved)."""
    regs = w.rules.reserved_numbers
    if not regs:
        return None
    return z3.And(*[st.x[r] == w.R0[r] for r in regs])


def proved_detail(rules: RegisterRules) -> str:
    """What R1 proved means for these rules."""
    parts = []
    if rules.reserved:
        parts.append(f"no path writes {', '.join(rules.reserved)}, unchanged at every return")
    if rules.jump:
        parts.append(f"every computed jump goes through {rules.jump} (or ra)")
    return "; ".join(parts)


def not_checked(rep, rules: RegisterRules) -> None:
    """R1 in a report that concrete runs decided before the proof."""
    if rules:
        rep.status.setdefault(RULE_CLAUSE, NOT_CHECKED)
        rep.detail.setdefault(RULE_CLAUSE, "the verdict was decided before the proof")
