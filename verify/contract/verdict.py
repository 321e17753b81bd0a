"""A routine's verdict, from the status of its clauses.

Only the contract decides: the clauses of verify.contract.clauses.required() (and
the properties the user asks for with --require).  The verdict is, in this
order of precedence:

* unanalysable: the prover could not model the code at all (every clause
  unknown for that reason), e.g. an illegal instruction;
* violated: some required clause is violated (a counterexample was replayed);
* unknown: some required clause is neither proved nor violated;
* bounded: every required clause proved, or holding for every n <= N of a
  --bounded run (the output says so).  Only a bound the user asked for
  counts: the runs memmove gets without --bounded leave a clause unknown
  however far they went (verify.counterexamples.bounded.apply_bounded);
* proved: every required clause proved for every n.

Role: verdicts and their exit statuses.  May import verify.contract.clauses.
"""
from __future__ import annotations

from copygen.verify.contract.clauses import PROPERTIES, required

UNANALYSABLE = "cannot analyse the code"
ORDER = ("unanalysable", "violated", "unknown", "bounded", "proved")
# the command line's exit status for the worst verdict of a run
EXIT = {"proved": 0, "bounded": 0, "violated": 3, "unknown": 4, "unanalysable": 2}


def verdict(rep, extra: tuple[str, ...] = ()) -> str:
    """The verdict of one RoutineReport (verify.checks.prove)."""
    # a vector routine's clauses depend on its loads (verify.contract.clauses.vector_clauses)
    need = ([c for c in rep.status if c not in PROPERTIES or c in extra] if rep.kind in ("vector", "vector_clear")
            else required(rep.kind, extra, "R1" in rep.status))
    states = {c: rep.status.get(c, "unknown") for c in need}
    if states and all(st == "unknown" and rep.detail.get(c, "").startswith(UNANALYSABLE)
                      for c, st in states.items()):
        return "unanalysable"
    if "violated" in states.values():
        return "violated"
    if any(st != "proved" and not st.startswith("holds for n <=") for st in states.values()):
        return "unknown"
    if any(st != "proved" for st in states.values()):
        return "bounded"
    return "proved"


def worst(verdicts: list[str]) -> str:
    return min(verdicts, key=ORDER.index) if verdicts else "proved"
