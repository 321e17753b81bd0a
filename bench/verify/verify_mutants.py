"""Kill rate of the verifier on mutants (issue 4, item 6).

Applies the mutation kinds of mutate.edits to one routine of generated
uaccess.S files, proves each mutant with the verifier, and counts it killed
when one of the clauses the mutation is expected to break is reported
violated.  Mutants equivalent by construction (no expected clause) and those
that do not assemble are not counted; so are dropped extable entries on
the kernel-side access (copy_to_user's loads, copy_from_user's stores).

Usage:
    python -m bench.verify.verify_mutants [FILE.S ...] [--routine R] [--per-kind K] [--out F]

Defaults: out/pre2021/uaccess.S, __clear_user, every mutant.  With
--per-kind K only the first K sites of each kind (in file order) are
proved, for routines whose proofs take a minute.  Results go to
bench/verify/results/verify_mutants[_ROUTINE].json after every mutant; a run that
is killed resumes where it stopped (mutants already in the file are kept).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402

KIND_OF = {"__clear_user": "clear", "__asm_copy_to_user": "to", "__asm_copy_from_user": "from"}


def prove_mutant(text: str, routine: str, kind: str, desc: str, expected, jobs: int) -> dict:
    from copygen.inputs import linked_elf
    from copygen.verify.checks.prove import prove_routine
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "mutant.S"
        src.write_text(text)
        try:
            elf = linked_elf(str(src), Path(d))
        except Exception as err:       # does not assemble: not a mutant we count
            return {"kind": kind, "description": desc, "result": f"unassembled: {err}"}
        rep = prove_routine(str(elf), routine, KIND_OF[routine], jobs=jobs)
    violated = sorted(c for c, s in rep.status.items() if s == "violated")
    if kind == "missing_extable":      # the verifier names the unhandled fault X1
        expected = tuple(expected) + ("X1",)
    hit = bool(set(violated) & set(expected))
    return {"kind": kind, "description": desc, "expected": list(expected),
            "violated": violated, "killed": hit, "seconds": round(rep.seconds, 1)}


def mutants_in(text: str, routine: str):
    from copygen.mutate.edits import all_mutants
    alias = re.search(rf"^SYM_FUNC_ALIAS\({routine},\s*(\w+)\)", text, re.M)
    routine = alias.group(1) if alias else routine      # the body it shares
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"SYM_FUNC_START({routine})"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith(f"SYM_FUNC_END({routine})"))
    return [m for m in all_mutants(text) if start < m.site <= end + 1]


def kernel_side(m, text: str, routine: str) -> bool:
    """A dropped extable entry on the kernel-side access of this routine (a
    load in copy_to_user, a store in copy_from_user): the contract has that
    buffer mapped, so no run can tell the mutant from the original."""
    from copygen.mutate.insns import LOADS, STORES, parse_insn
    from copygen.verify.invariants.concrete import USER_SIDE
    if m.kind != "missing_extable":
        return False
    ins = parse_insn(m.site - 1, text.splitlines()[m.site - 1])
    kernel_ops = LOADS if USER_SIDE[KIND_OF[routine]] == "dst" else STORES
    return ins is not None and ins.op in kernel_ops


def summary(rows: list) -> dict:
    counted = [r for r in rows if "killed" in r]
    by_kind: dict[str, list[int]] = {}
    for r in counted:
        k = by_kind.setdefault(r["kind"], [0, 0])
        k[0] += r["killed"]
        k[1] += 1
    return {"killed": sum(r["killed"] for r in counted), "counted": len(counted),
            "by_kind": by_kind}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", default=[str(ROOT / "out" / "pre2021" / "uaccess.S")])
    ap.add_argument("--routine", default="__clear_user", choices=sorted(KIND_OF))
    ap.add_argument("--per-kind", type=int, default=0, metavar="K")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None,
                    help="results file (default bench/verify/results/verify_mutants[_ROUTINE].json); "
                         "give each set of files its own: the file keeps only this command's mutants")
    ap.add_argument("--retry-survivors", action="store_true",
                    help="prove again the mutants the results file records as survived")
    args = ap.parse_args()
    suffix = "" if args.routine == "__clear_user" else "_" + args.routine.lstrip("_")
    out = args.out or ROOT / "bench" / "verify" / "results" / f"verify_mutants{suffix}.json"
    done = {}
    if out.exists():
        done = {r["description"]: r for r in json.loads(out.read_text()).get("mutants", [])
                if not (args.retry_survivors and r.get("killed") is False)}
    todo = []
    for f in args.files:
        seen: dict[str, int] = {}
        text = Path(f).read_text()
        for m in mutants_in(text, args.routine):
            if m.expected_clauses == () or kernel_side(m, text, args.routine):
                continue                          # equivalent by construction
            seen[m.kind] = seen.get(m.kind, 0) + 1
            if args.per_kind and seen[m.kind] > args.per_kind:
                continue
            todo.append((m, f"{Path(f).parent.name}: {m.description}"))
    rows = [done[d] for _, d in todo if d in done]
    t0 = time.time()
    for i, (m, desc) in enumerate(todo):
        if desc in done:
            continue
        row = prove_mutant(m.text, args.routine, m.kind, desc, m.expected_clauses, args.jobs)
        rows.append(row)
        print(f"[{i + 1}/{len(todo)}] {'killed  ' if row.get('killed') else 'SURVIVED'} "
              f"{desc} -> {row.get('violated', row.get('result'))}", flush=True)
        out.write_text(json.dumps({
            "command": "python -m bench.verify.verify_mutants " + " ".join(sys.argv[1:]),
            **summary(rows), "mutants": rows}, indent=2) + "\n")
    s = summary(rows)
    for kind, (k, n) in sorted(s["by_kind"].items()):
        print(f"{kind:34} {k}/{n}")
    print(f"killed {s['killed']}/{s['counted']} mutants ({time.time() - t0:.0f} s this run)")


if __name__ == "__main__":
    sys.exit(exit_status(main))
