"""Solver answers kept across processes and runs, so that the same query
asked again (by another test, another routine of the same shape, another
variant of a sweep) costs a file read instead of a search.

Only answers that do not depend on what ran before are kept: `unsat` (a
fact about the formula) and `unknown` because the budget ran out (Z3's
step count is the same for the same facts in a fresh context, see
verify.solver.budget), each under the exact text of the query, its logic, its
step budget and Z3's version.  `sat` is never kept: its caller reads the
model.  An answer comes back only for a query whose text is the same to
the character, so a hit gives what the solver would have given.

The text of a query costs a few milliseconds to write out, about what a
small query costs to solve, so only queries that took at least
MIN_SECONDS are stored, and a lookup first asks whether any query of the
same structural hash (Z3's, kept with every term: free) was stored: one
`stat` for the common miss.

The store is off unless configured: `configure(path)` (the proof cache
does it for the commands that have one) or the environment variable
COPYGEN_ANSWERS (the tests share one per run).  Entries are written
whole (rename), so processes may race on one.

Role: recall and remember answers.  May import z3 and the standard library.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import z3

MIN_SECONDS = 0.02
_KEPT = {"unsat": z3.unsat, "unknown": z3.unknown}
_root: Path | None = None


def configure(root: str | Path | None) -> None:
    """Keep answers under `root` (None: keep none) unless the environment
    names a store."""
    global _root
    _root = Path(root) if root is not None else None


def store() -> Path | None:
    """Where answers are kept: COPYGEN_ANSWERS, else what configure() set."""
    env = os.environ.get("COPYGEN_ANSWERS")
    return Path(env) if env else _root


def _bucket(root: Path, facts: list, limit: int) -> Path:
    h = 0
    if facts:
        ref = facts[0].ctx.ref()
        for f in facts:
            h = (h * 1_000_003 + z3.Z3_get_ast_hash(ref, f.as_ast())) & 0xffffffff
    return root / f"{h & 0xff:02x}" / f"{h:08x}-{limit}"


def _name(facts: list, logic: str, limit: int) -> str:
    h = hashlib.sha256(f"{z3.get_version_string()}\0{logic}\0{limit}".encode())
    for f in facts:
        h.update(b"\0" + f.sexpr().encode())
    return h.hexdigest()


def recall(facts: list, logic: str, limit: int) -> z3.CheckSatResult | None:
    """The answer kept for these facts under this step limit, or None.
    `logic` names the question too: a caller that asks something other
    than one check of the facts (several goals in turn) says so there."""
    root = store()
    if root is None:
        return None
    bucket = _bucket(root, facts, limit)
    if not bucket.is_dir():
        return None
    try:
        return _KEPT.get((bucket / _name(facts, logic, limit)).read_text())
    except OSError:
        return None


def remember(facts: list, logic: str, limit: int, answer: z3.CheckSatResult,
             seconds: float, why_unknown: str = "") -> None:
    """Keep an answer worth keeping (see the module's docstring);
    `why_unknown`: the solver's reason for an unknown."""
    root = store()
    if root is None or seconds < MIN_SECONDS or answer == z3.sat:
        return
    if answer == z3.unknown and "resource limit" not in why_unknown:
        return      # the wall-clock backstop: depends on the machine's load
    bucket = _bucket(root, facts, limit)
    try:
        bucket.mkdir(parents=True, exist_ok=True)
        path = bucket / _name(facts, logic, limit)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(str(answer))
        tmp.replace(path)
    except OSError:
        pass        # a store that cannot be written only costs time
