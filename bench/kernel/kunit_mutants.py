"""What copygen's proofs and its fault suite add to the kernel's own tests
(issue 33 item 5, issue 64): five mutants of the generated code (the
scalar fallback, or __clear_user where a kind has no site in the copy),
each booted in the kernel and run through the kernel's usercopy suite and
copygen's fault suite (kernel.faultsuite, put on top of the mutant's
commit), and each given to `copygen verify`.

Usage: python -m bench.kernel.kunit_mutants [--tree DIR] [--branch B] [--kinds K,...]
The branch is a u74tuned uaccess patch on a Linux 6.12 tree (made by
bench/kernel/kernel_loop.py, or `copygen patch examples/u74tuned.copy --kernel-tree
DIR --branch copygen/u74tuned-uaccess`).  For each kind the first mutant
inside fallback_scalar_usercopy's body that assembles is committed on top
of the branch (plumbing: the checkout is not touched), built by Kbuild and
booted without the V extension (so every size takes the scalar copy) with
the usercopy and usercopy_fault suites (those that call these routines;
--suite), and proved.  Writes bench/kernel/results/kunit_mutants.json
after each mutant: per suite what passed, and the fault suite's first
failing call.
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

OUT = ROOT / "bench" / "kernel" / "results" / "kunit_mutants.json"
KINDS = ("fixup_offset", "missing_extable", "fixup_return_constant", "loop_bound_off_by_one",
         "wrong_shift")


def _site(text: str, kind: str):
    """The first assembling mutant of `kind` inside the generated scalar
    copy's body, else inside the generated __clear_user's."""
    from copygen.mutate.edits import all_mutants, assembles
    from copygen.patch import kernelfile
    lines = text.splitlines(keepends=True)
    _, places = kernelfile.places(lines, "uaccess.S", ("copy_user", "clear_user"))
    mutants = all_mutants(text, [kind])
    for place in places:
        lo, hi = place.function.body_start + 1, place.function.body_end
        for m in mutants:
            if lo <= m.site <= hi and assembles(m.text):
                return m
    return None


def _verify(text: str, workdir: Path, clear: bool) -> dict:
    """The mutant's verdict: __clear_user's, or the worse of the copy's two
    directions (a load of src is a user access only in copy_from_user, so
    a mutant of it can prove as copy_to_user), stopping at the first that
    is not proved: copy_from_user first, where every access may fault."""
    from copygen.inputs import linked_elf
    from copygen.verify.checks.prove import prove_routine
    from copygen.verify.contract.verdict import verdict
    src = workdir / "mutant.S"
    src.write_text(text)
    elf = str(linked_elf(str(src), workdir))
    entries = ([("__clear_user", "clear")] if clear else
               [("__asm_copy_from_user", "from"), ("__asm_copy_to_user", "to")])
    out = {"verdict": "proved", "violated": {}, "seconds": 0.0, "entries": {}}
    for sym, kind in entries:
        rep = prove_routine(elf, sym, kind, jobs=2)
        v = verdict(rep)
        out["entries"][sym] = v
        out["seconds"] = round(out["seconds"] + rep.seconds, 1)
        if v != "proved":
            out["verdict"] = v
            out["violated"] = {c: f"{sym}: " + rep.detail.get(c, "")[:400]
                               for c, st in rep.status.items() if st == "violated"}
            break
    return out


def _in_clear(text: str, site: int) -> bool:
    from copygen.patch import kernelfile
    fns = kernelfile.functions(text.splitlines(keepends=True), "uaccess.S")
    f = fns["__clear_user"]
    return f.body_start < site <= f.body_end


def _kunit_columns(run) -> dict:
    """The kernel's suites and the fault suite, each caught or not; the
    fault suite's failing cases with their first failing call."""
    fault = "usercopy_fault"
    stock = [t for t in run.failed() if not t.startswith(fault + ".")]
    ours = [t for t in run.failed() if t.startswith(fault + ".")]
    ran = {s.name for s in run.suites}
    return {"kunit_failed": stock, "kunit": {s.name: f"{s.passed}/{s.total}" for s in run.suites},
            "kunit_catches": bool(stock),
            "fault_suite_catches": bool(ours) if fault in ran else None,
            "fault_suite_failed": ours,
            "fault_suite_first": {n: c["first"] for n, c in run.fault.items() if not c["ok"]}}


def main() -> int:
    from copygen.gen.toolchain import run_git
    from copygen.kernel import kunit
    from copygen.kernel.tree import cache_dir
    from copygen.patch import git
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", default=str(cache_dir() / "linux-source-6.12"))
    ap.add_argument("--branch", default="copygen/u74tuned-uaccess")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--suite", default="usercopy*",
                    help="the KUnit suites to boot with, a glob (default: usercopy and "
                         "usercopy_fault; every suite: --suite '*')")
    args = ap.parse_args()
    tree_dir = Path(args.tree)
    tip = run_git(["rev-parse", "--verify", args.branch], tree_dir).stdout.strip()
    tree = git.Tree(tree_dir, "arch/riscv/lib/uaccess.S", tip, "")
    text = git.show(tree, tip, tree.rel)
    results = json.loads(OUT.read_text()) if OUT.is_file() else {}
    results["branch"], results["commit"] = args.branch, tip
    for kind in args.kinds.split(","):
        m = _site(text, kind)
        if m is None:
            results[kind] = {"error": "no site in the scalar copy's body"}
            continue
        t0 = time.monotonic()
        commit = git.commit_files(tree, tip, {tree.rel: m.text}, f"mutant: {m.description}\n")
        (run,) = kunit.run_commit(tree_dir, commit, f"mutant-{kind}", vector_too=False,
                                  tell=lambda s: print(s, file=sys.stderr), only=args.suite)
        with tempfile.TemporaryDirectory() as tmp:
            proof = _verify(m.text, Path(tmp), _in_clear(text, m.site))
        results[kind] = {"mutant": m.description, "expected": list(m.expected_clauses),
                         **_kunit_columns(run), "verify": proof,
                         "seconds": round(time.monotonic() - t0, 1)}
        OUT.write_text(json.dumps(results, indent=2) + "\n")
        print(f"{kind}: usercopy {'caught' if results[kind]['kunit_catches'] else 'passed'}, "
              f"fault suite {'caught' if results[kind]['fault_suite_catches'] else 'passed'}; "
              f"verify {proof['verdict']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(exit_status(main))
