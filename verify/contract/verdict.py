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
  however far they went (verify.counterexamples.bounded.apply_bounded),
  and a clause another part of the verifier proves below a bound of its
  own (the composed vector copy's n < 2^31, verify.vector.vcompose) is
  unknown unless --bounded N asked for a bound it covers (`asked`);
* proved: every required clause proved for every n.

Role: verdicts and their exit statuses.  May import verify.contract.clauses.
"""
from __future__ import annotations

from copygen.verify.contract.clauses import PROPERTIES, required

UNANALYSABLE = "cannot analyse the code"
ORDER = ("unanalysable", "violated", "unknown", "bounded", "proved")
# the command line's exit status for the worst verdict of a run
EXIT = {"proved": 0, "bounded": 0, "violated": 3, "unknown": 4, "unanalysable": 2}


HOLDS = "holds for n <= "


def holds_up_to(status: str) -> int | None:
    """N of a `holds for n <= N` status, else None."""
    return int(status[len(HOLDS):]) if status.startswith(HOLDS) else None


def counts(status: str, asked: int | None) -> bool:
    """Whether a clause's status counts toward `bounded`: `holds for n <=
    N` does when the user asked for a bound N covers (--bounded `asked`,
    0 < asked <= N); with asked None (a caller that does not say) it
    always does."""
    n = holds_up_to(status)
    return n is not None and (asked is None or 0 < asked <= n)


def verdict(rep, extra: tuple[str, ...] = (), asked: int | None = None) -> str:
    """The verdict of one RoutineReport (verify.checks.prove); `asked`: the
    --bounded N of the run (0: none), which a bounded status must cover."""
    # a vector routine's clauses depend on its loads (verify.contract.clauses.vector_clauses)
    need = ([c for c in rep.status if c not in PROPERTIES or c in extra] if rep.kind in ("vector", "vector_clear")
            else required(rep.kind, extra, "R1" in rep.status))
    states = {c: rep.status.get(c, "unknown") for c in need}
    if states and all(st == "unknown" and rep.detail.get(c, "").startswith(UNANALYSABLE)
                      for c, st in states.items()):
        return "unanalysable"
    if "violated" in states.values():
        return "violated"
    if any(st != "proved" and not counts(st, asked) for st in states.values()):
        return "unknown"
    if any(st != "proved" for st in states.values()):
        return "bounded"
    return "proved"


def worst(verdicts: list[str]) -> str:
    return min(verdicts, key=ORDER.index) if verdicts else "proved"
