"""Kill rate of the verifier on mutants (issue 4, item 6).

Applies every mutation kind of verify.mutate to the `__clear_user` routine
of the given generated uaccess.S files (the routine whose proofs take
seconds, so every mutant can be proved), proves each mutant with the
verifier, and counts it killed when one of the clauses the mutation is
expected to break is reported violated.  Mutants the qemu oracle finds
equivalent are excluded, as are those that do not assemble.

Usage: python bench/verify_mutants.py [out/pre2021/uaccess.S out/u74pipelined/uaccess.S]
Writes bench/results/verify_mutants.json.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ROUTINE = "__clear_user"


def _prove(args):
    text, kind, desc, expected = args
    from verify.inputs import linked_elf
    from verify.prove import prove_routine
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "mutant.S"
        src.write_text(text)
        try:
            elf = linked_elf(str(src), Path(d))
        except Exception as err:       # does not assemble: not a mutant we count
            return {"kind": kind, "description": desc, "result": f"unassembled: {err}"}
        rep = prove_routine(str(elf), ROUTINE, "clear")
    violated = sorted(c for c, s in rep.status.items() if s == "violated")
    if kind == "missing_extable":      # the verifier names the unhandled fault X1
        expected = tuple(expected) + ("X1",)
    hit = bool(set(violated) & set(expected)) if expected else bool(violated)
    return {"kind": kind, "description": desc, "expected": list(expected),
            "violated": violated, "killed": hit, "seconds": round(rep.seconds, 1)}


def mutants_in_clear_user(text: str):
    from verify.mutate import all_mutants
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"SYM_FUNC_START({ROUTINE})"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith(f"SYM_FUNC_END({ROUTINE})"))
    return [m for m in all_mutants(text) if start < m.site <= end + 1]


def main() -> None:
    files = sys.argv[1:] or [str(ROOT / "out" / "pre2021" / "uaccess.S"),
                              str(ROOT / "out" / "u74pipelined" / "uaccess.S")]
    jobs = []
    for f in files:
        for m in mutants_in_clear_user(Path(f).read_text()):
            if m.expected_clauses == ():          # equivalent by construction
                continue
            jobs.append((m.text, m.kind, f"{Path(f).parent.name}: {m.description}",
                         m.expected_clauses))
    t0 = time.time()
    with ProcessPoolExecutor(max_workers=2) as pool:
        rows = list(pool.map(_prove, jobs))
    counted = [r for r in rows if "killed" in r]
    killed = sum(r["killed"] for r in counted)
    by_kind: dict[str, list[int]] = {}
    for r in counted:
        k = by_kind.setdefault(r["kind"], [0, 0])
        k[0] += r["killed"]
        k[1] += 1
    for kind, (k, n) in sorted(by_kind.items()):
        print(f"{kind:34} {k}/{n}")
    for r in counted:
        if not r["killed"]:
            print("survived:", r["description"], "violated:", r["violated"])
    print(f"killed {killed}/{len(counted)} mutants in {time.time() - t0:.0f} s")
    out = ROOT / "bench" / "results" / "verify_mutants.json"
    out.write_text(json.dumps({"command": "python bench/verify_mutants.py", "killed": killed,
                               "counted": len(counted), "by_kind": by_kind, "mutants": rows},
                              indent=2) + "\n")


if __name__ == "__main__":
    main()
