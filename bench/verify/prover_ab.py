"""What one of the prover's switches saves: whole proofs with it and without it.

    python -m bench.verify.prover_ab --switch presolve|core [--only EXAMPLE:SYMBOL ...] [--out FILE]

`presolve`: verify.symbolic.presolve's rewrite of rounded addresses
(`presolve.REWRITE`); `core`: verify.solver.budget's SMT core asked before
QF_BV's default (`budget.CORE`).  Each proof runs twice, in two
processes side by side (one with the switch on, one with it off, so that
both see the same load), each proving in one process (`jobs=1`),
`replay=False`, no answer store (`COPYGEN_ANSWERS=`).  Reports CPU
seconds of each and whether the verdicts agree; writes
bench/results/SWITCH.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

# (example, routine): the copies whose proofs the test suite and the tuner
# run most, a memcpy, a memmove and a clear
PROOFS = [("kernel2021", "__asm_copy_to_user"), ("pre2021", "__asm_copy_to_user"),
          ("u74pipelined", "__asm_copy_from_user"), ("c910tuned", "__asm_copy_to_user"),
          ("u74tuned", "__asm_copy_to_user"), ("c910fast", "memcpy"),
          ("c910fast", "memmove"), ("tune_u74", "__asm_copy_to_user"),
          ("kernel2021", "__clear_user")]

# the module and the flag each switch turns off
SWITCHES = {"presolve": ("copygen.verify.symbolic.presolve", "REWRITE"),
            "core": ("copygen.verify.solver.budget", "CORE")}

CHILD = """
import importlib, json, sys
from copygen.verify.checks.prove import prove_routine
from copygen.verify.contract.world import KINDS
setattr(importlib.import_module(sys.argv[4]), sys.argv[5], sys.argv[3] == "on")
rep = prove_routine(sys.argv[1], sys.argv[2], KINDS[sys.argv[2]], replay=False, jobs=1)
print(json.dumps(rep.status))
"""


def _run(elf: str, symbol: str, mode: str, switch: str) -> subprocess.Popen:
    env = dict(os.environ, COPYGEN_ANSWERS="")
    return subprocess.Popen([sys.executable, "-c", CHILD, elf, symbol, mode, *SWITCHES[switch]],
                            env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _wait(p: subprocess.Popen) -> tuple[float, dict]:
    _, status, usage = os.wait4(p.pid, 0)
    out = p.stdout.read()
    p.returncode = os.waitstatus_to_exitcode(status)
    status = json.loads(out.strip().splitlines()[-1]) if p.returncode == 0 else {"error": p.returncode}
    return round(usage.ru_utime + usage.ru_stime, 1), status


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--switch", choices=sorted(SWITCHES), required=True,
                    help="the prover's switch to measure: on in one process, off in the other")
    ap.add_argument("--only", action="append", default=[], metavar="EXAMPLE:SYMBOL",
                    help="prove only this routine of out/EXAMPLE (repeatable)")
    ap.add_argument("--out", type=Path, help="results file (default bench/results/SWITCH.json)")
    args = ap.parse_args()
    out = args.out or ROOT / "bench" / "verify" / "results" / f"{args.switch}.json"
    proofs = [tuple(o.split(":", 1)) for o in args.only] or PROOFS
    missing = sorted({e for e, _ in proofs if not (ROOT / "out" / e / f"{e}.elf").is_file()})
    if missing:
        print(f"prover_ab: no ELF for {', '.join(missing)}: run "
              f"`copygen build {' '.join(f'examples/{e}.copy' for e in missing)} -o out` first",
              file=sys.stderr)
        return 2
    rows = []
    for example, symbol in proofs:
        elf = ROOT / "out" / example / f"{example}.elf"
        t0 = time.time()
        on, off = (_run(str(elf), symbol, m, args.switch) for m in ("on", "off"))
        (cpu_on, st_on), (cpu_off, st_off) = _wait(on), _wait(off)
        if "error" in st_on or "error" in st_off:
            print(f"prover_ab: the proof of {example} {symbol} exited with "
                  f"{st_off.get('error', 0)} (without) and {st_on.get('error', 0)} (with)",
                  file=sys.stderr)
            return 1
        rows.append({"example": example, "routine": symbol, "cpu_seconds_without": cpu_off,
                     "cpu_seconds_with": cpu_on, "same_verdicts": st_on == st_off,
                     "status": st_on})
        print(f"{example:14s} {symbol:22s} without {cpu_off:7.1f} s  with {cpu_on:7.1f} s  "
              f"{'same verdicts' if st_on == st_off else 'VERDICTS DIFFER'}  "
              f"({time.time() - t0:.0f} s)", flush=True)
    total_off = sum(r["cpu_seconds_without"] for r in rows)
    total_on = sum(r["cpu_seconds_with"] for r in rows)
    print(f"{'total':37s} without {total_off:7.1f} s  with {total_on:7.1f} s")
    out.write_text(json.dumps({
        "command": "python -m bench.verify.prover_ab " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
        "note": f"each proof twice side by side (with and without {args.switch}), one process "
                "each, replay=False, no answer store; CPU seconds",
        "rows": rows, "total_without": round(total_off, 1), "total_with": round(total_on, 1)},
        indent=1) + "\n")
    print(f"wrote {out}")
    return 0 if all(r["same_verdicts"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
