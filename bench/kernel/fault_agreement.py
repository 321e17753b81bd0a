"""Does copygen's emulator do what the booted kernel does?  The fault
suite's calls (kernel.faultsuite) at one commit of a Linux tree: booted in
QEMU (the suite alone, without and with the V extension) and run in the
emulator (bench/kernel/fault_model.py) on the commit's
arch/riscv/lib/uaccess.S, and for the boot with V on it and
uaccess_vector.S through 6.12's dispatch, compared per test case by the
digest over every call's return value and destination window.

Usage: python -m bench.kernel.fault_agreement --tree DIR --rev REV --label NAME [--reuse]
REV is a commit of the tree (master: the stock tree; copygen/u74tuned-uaccess:
the patch).  --reuse takes the booted results from the record's entry for
NAME (same commit) instead of booting again.  Writes
bench/kernel/results/fault_agreement.json (one entry per label, the others
kept): the commit, the blobs of its two .S files (what the test replays),
per test case the kernel's digests and the model's, the KUnit results and
the seconds of each part.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

from bench.exits import exit_status  # noqa: E402

OUT = ROOT / "bench" / "kernel" / "results" / "fault_agreement.json"
FILES = ("arch/riscv/lib/uaccess.S", "arch/riscv/lib/uaccess_vector.S")
VLEN = 128            # kernel.kunit.VECTOR_CPU's


def case_args(name: str) -> tuple[str, int, int]:
    """copy_to_user_test.user+3 kernel+5 -> (copy_to_user, 3, 5)."""
    case, param = name.split(".", 1)
    offs = [int(p.split("+")[1]) for p in param.split()]
    return case[: -len("_test")], offs[0], offs[1] if len(offs) > 1 else 0


def model_cases(texts: list[str], names: list[str], workdir: Path,
                vector: tuple[int, int] | None = None) -> tuple[dict, float]:
    """Each test case in the emulator: the .S texts (uaccess.S, and
    uaccess_vector.S with `vector`) linked, every call of the case run."""
    from bench.kernel.fault_model import Model, linked
    workdir.mkdir(parents=True, exist_ok=True)
    srcs = []
    for text, rel in zip(texts, FILES):
        srcs.append(workdir / Path(rel).name)
        srcs[-1].write_text(text)
    t0 = time.monotonic()
    m, out = Model(linked(srcs, workdir / "obj"), vector=vector), {}
    for name in names:
        r = m.run_class(*case_args(name))
        out[name] = {"calls": r.calls, "digest": f"{r.digest:016x}", "failed": r.failed,
                     "first": r.first}
    return out, time.monotonic() - t0


def _boot(tree: Path, commit: str, label: str) -> dict:
    """The fault suite booted alone, without and with V."""
    from copygen.kernel import faultsuite, kunit
    runs = kunit.run_commit(tree, commit, label, only=faultsuite.SUITE,
                            tell=lambda s: print(s, file=sys.stderr))
    out = {}
    for r in runs:
        key = "v" if r.vector else "no_v"
        out[key] = {"digests": {n: c["digest"] for n, c in r.fault.items()},
                    "first_failing": {n: c["first"] for n, c in r.fault.items() if not c["ok"]},
                    "kunit": {s.name: f"{s.passed}/{s.total}" for s in r.suites},
                    "boot_seconds": round(r.run_seconds, 1),
                    "suite_seconds": r.suite_seconds.get(faultsuite.SUITE),
                    "threshold": r.vector_threshold}
    return out


def _reused(old: dict, commit: str) -> dict:
    if old.get("commit") != commit or "boots" not in old:
        raise SystemExit(f"--reuse: the record has no boots of {commit[:12]}")
    return old["boots"]


def main() -> int:
    from copygen.gen.toolchain import run_git
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--rev", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--reuse", action="store_true", help="the boots of the record, not new ones")
    args = ap.parse_args()
    tree = Path(args.tree)
    commit = run_git(["rev-parse", args.rev], tree).stdout.strip()
    blobs = [run_git(["rev-parse", f"{commit}:{rel}"], tree).stdout.strip() for rel in FILES]
    texts = [run_git(["cat-file", "blob", b], tree).stdout for b in blobs]
    results = json.loads(OUT.read_text()) if OUT.is_file() else {}
    if args.reuse:
        boots = _reused(results.get(args.label, {}), commit)
    else:   # kept at once: a model run that fails can be redone with --reuse
        boots = _boot(tree, commit, args.label)
        results[args.label] = {"commit": commit, "boots": boots}
        OUT.write_text(json.dumps(results, indent=2) + "\n")
    names = sorted(boots["no_v"]["digests"])
    with tempfile.TemporaryDirectory() as tmp:
        scalar, s_secs = model_cases(texts[:1], names, Path(tmp) / "s")
        vector, v_secs = model_cases(texts, names, Path(tmp) / "v",
                                     (boots["v"]["threshold"], VLEN))
    cases = {n: {"kernel": boots["no_v"]["digests"][n], "model": scalar[n]["digest"],
                 "kernel_v": boots["v"]["digests"].get(n), "model_v": vector[n]["digest"],
                 "calls": scalar[n]["calls"], "failed": scalar[n]["failed"],
                 "failed_v": vector[n]["failed"]} for n in names}
    agree = sum(c["kernel"] == c["model"] for c in cases.values())
    agree_v = sum(c["kernel_v"] == c["model_v"] for c in cases.values())
    results[args.label] = {
        "command": " ".join(["python -m bench.kernel.fault_agreement", *sys.argv[1:]]),
        "commit": commit, "uaccess_blob": blobs[0], "uaccess_vector_blob": blobs[1],
        "calls": sum(c["calls"] for c in cases.values()),
        "agree_no_v": f"{agree}/{len(cases)}", "agree_v": f"{agree_v}/{len(cases)}",
        "model_seconds": {"no_v": round(s_secs, 1), "v": round(v_secs, 1)},
        "boots": boots, "cases": cases}
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(f"{args.label}: emulator and kernel agree in {agree}/{len(cases)} test cases without V, "
          f"{agree_v}/{len(cases)} with V; model {s_secs:.0f} s + {v_secs:.0f} s", file=sys.stderr)
    return 0 if agree == agree_v == len(cases) else 1


if __name__ == "__main__":
    sys.exit(exit_status(main))
