"""What a one-shot query costs before the solver starts: the fresh context,
the translation of its facts into it, the solvers holding them.

    python -m bench.verify.query_overhead [ELF SYMBOL] [--rounds N] [--out FILE]

Proves SYMBOL of ELF (default: out/kernel2021's __asm_copy_to_user) once,
in one process, `replay=False`, no answer store, keeping the facts of
every `verify.solver.budget.Query` it makes; then makes each of those queries
again N times (default 3) and readies it as `Query.check` does (the
answer store's lookup, the SMT core's solver holding the facts) without
asking the solver.  Prints the proof's CPU seconds, the number of
queries and the CPU milliseconds per query (the best of the rounds), and
writes them to bench/verify/results/query_overhead.json (or --out).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("elf", nargs="?", default=str(ROOT / "out" / "kernel2021" / "kernel2021.elf"))
    ap.add_argument("symbol", nargs="?", default="__asm_copy_to_user")
    ap.add_argument("--rounds", type=int, default=3, help="times each query is made again")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "verify" / "results" / "query_overhead.json")
    args = ap.parse_args()
    if not Path(args.elf).is_file():
        print(f"query_overhead: no {args.elf}: run `copygen build examples/*.copy -o out` first",
              file=sys.stderr)
        return 2
    from copygen.verify.solver import answers, budget
    from copygen.verify.checks.prove import prove_routine
    from copygen.verify.contract.world import KINDS

    answers.configure(None)
    seen: list = []
    real = budget.Query.__init__

    def keep(self, facts, logic="QF_BV"):
        facts = list(facts)
        seen.append((facts, logic))
        real(self, facts, logic)

    budget.Query.__init__ = keep
    t0 = time.process_time()
    prove_routine(args.elf, args.symbol, KINDS[args.symbol], replay=False, jobs=1)
    proof = time.process_time() - t0
    budget.Query.__init__ = real

    def ready(facts, logic):
        q = budget.Query(facts, logic)
        answers._bucket(Path("/"), q.facts, 1)
        next(iter(q._solvers()))

    best = None
    for _ in range(args.rounds):
        t0 = time.process_time()
        for facts, logic in seen:
            ready(facts, logic)
        spent = time.process_time() - t0
        best = spent if best is None else min(best, spent)
    per_query_ms = 1000 * best / max(len(seen), 1)
    print(f"{Path(args.elf).stem} {args.symbol}: proof {proof:.1f} CPU s, {len(seen)} queries, "
          f"{per_query_ms:.2f} ms each to make and ready "
          f"({best:.2f} s in all, {100 * best / proof:.1f} % of the proof)")
    args.out.write_text(json.dumps({
        "command": "python -m bench.verify.query_overhead " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
        "elf": Path(args.elf).name, "symbol": args.symbol, "proof_cpu_seconds": round(proof, 1),
        "queries": len(seen), "ms_per_query": round(per_query_ms, 2),
        "share_of_proof": round(best / proof, 3)}, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
