"""The contract clauses (docs/contract.md) and which routines they
apply to, and which entry points run with SUM held by their caller.
Role: names and descriptions only.  Imports: nothing.
"""
from __future__ import annotations

CLAUSES = {
    "C1": "no fault: returns 0 and dst[0..n) == src[0..n)",
    "C2": "on a fault: 0 <= N <= n",
    "C3": "on a fault: the first n-N bytes of dst hold the source bytes",
    "C4": "on a fault: nothing at or past dst+n-N is modified",
    "C5": "on a fault: N == n only if no byte could be copied",
    "C6": "on a fault: N is exactly the number of bytes not stored",
    "S1": "sstatus.SUM is clear at every return (still set, for a *_sum_enabled entry)",
    "S2": "no user access while SUM is clear",
    "A1": "sp and s0-s11 preserved; returns to ra",
    "B1": "no store outside [dst, dst+n)",
    "B2": "no load outside the aligned words covering [src, src+n)",
    "B2s": "no load outside [src, src+n) (strict)",
    "X1": "every user access that can fault has an __ex_table entry",
    "T1": "terminates within a bound linear in n",
    "R1": "reserved registers never written (so unchanged at every return), and computed "
          "jumps only through the allowed register (when proved under register rules)",
    "V0": "vstart is 0 at every return",
    "V5": "on a fault: what counts as not copied starts at most one chunk (VLMAX bytes) "
          "before the first inaccessible byte",
}
STRING_C1 = "returns dst and dst[0..n) == expected bytes"


def clause_text(clause: str, kind: str) -> str:
    """What a clause says for a routine of this kind (memcpy, memset and
    memmove return dst, and memset's expected bytes are its fill byte)."""
    if clause == "C1" and kind in STRING_KINDS:
        return STRING_C1
    return CLAUSES[clause]

USER = ["C1", "C2", "C3", "C4", "C5", "C6", "S1", "S2", "A1", "B1", "B2", "B2s", "X1", "T1"]
BY_KIND = {
    "to": USER, "from": USER,
    "clear": [c for c in USER if c not in ("B2", "B2s")],
    "memcpy": ["C1", "A1", "B1", "B2", "B2s", "T1"],
    "memset": ["C1", "A1", "B1", "B2", "T1"],
    "memmove": ["C1", "A1", "B1", "B2", "T1"],
}
STRING_KINDS = ("memcpy", "memset", "memmove")
# the kinds whose buffers may overlap (verify.contract.world.World.overwritten)
OVERLAP_KINDS = ("memmove",)


def vector_clauses(exact_loads: bool) -> list[str]:
    """The vector routine's contract (verify.vector.vprove), both directions at
    once: with plain loads a load fault counts its whole chunk, so C5 and
    C6 hold for store faults only and V5 for load faults; fault-only-first
    loads keep C5 and C6 for both."""
    tail = ["C5", "C6"] if exact_loads else ["C5", "C6", "V5"]
    return ["C1", "C2", "C3", "C4", *tail, "S1", "S2", "A1", "B1", "B2", "B2s", "X1", "T1",
            "V0"]


def vector_clear_clauses() -> list[str]:
    """The vector clear's contract (verify.vector.vprove, the clear world): the
    scalar clear's clauses (stores only: exact, no load clause) and V0."""
    return [*BY_KIND["clear"], "V0"]

# Stricter than the contract: reported as a property of the routine, and
# part of its verdict only when asked for (`copygen verify --require B2s`).
# Every shift copy reads whole aligned words around the source (never past
# the words covering it, so never across a page: B2 holds).
PROPERTIES = {
    "B2s": "reads only inside [src, src+n)",
}
PROPERTY_BROKEN = {
    "B2s": "reads up to 7 bytes around the source inside its aligned words",
}


# Entry points whose caller already set sstatus.SUM and expects it still set
# when they return (mainline's __asm_copy_{to,from}_user_sum_enabled): they
# are proved with SUM set at entry, and S1 asks that it stay set.
# the status of a clause the proof did not look at: a violation found by
# concrete runs decided the verdict first (--all-clauses proves them anyway)
NOT_CHECKED = "not checked"

SUM_HELD_SUFFIX = "_sum_enabled"


def holds_sum(symbol: str) -> bool:
    """Whether `symbol` is an entry point that runs with SUM held."""
    return symbol.endswith(SUM_HELD_SUFFIX)


# asked only of a routine proved under register rules (verify.contract.rules)
RULE_CLAUSE = "R1"


def clauses_of(kind: str, rules: bool = False) -> list[str]:
    """The clauses a routine of `kind` is proved against; R1 with rules."""
    return BY_KIND[kind] + ([RULE_CLAUSE] if rules else [])


def required(kind: str, extra: tuple[str, ...] = (), rules: bool = False) -> list[str]:
    """The clauses whose status decides a routine's verdict (R1 too when
    the routine was proved under register rules)."""
    return [c for c in clauses_of(kind, rules) if c not in PROPERTIES or c in extra]
