"""Proof cache: a routine's report kept under a hash of its machine code.

The key covers everything a proof reads: the loaded segments (the routine,
whatever it calls or falls into, its data), the `__ex_table`, the symbol
and its address, the routine kind, the options that change a report
(--bounded, --all-clauses, register rules), and the prover itself (a hash of the verify
and emu sources but the timing models: a changed prover never reuses an
old verdict, a recalibrated cost model does not throw the cache away).
The same code is never proven twice; the tuner and `copygen verify` share
one cache directory.  Entries are JSON
written atomically (a killed run leaves no half entry).

Role: store and fetch reports.  May import emu (TIMING_MODULES), emu.elf, verify.checks.prove (the
report type), verify.contract.rules, verify.solver.answers, the standard library.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from importlib.resources import files
from pathlib import Path

from copygen import __version__
from copygen.emu.elf import read_elf
from copygen.emu import TIMING_MODULES
from copygen.verify.solver import answers
from copygen.verify.checks.prove import RoutineReport
from copygen.verify.contract.rules import RegisterRules


# emu modules that only time a run: the prover runs machines without a cost
# profile (emu.api.Machine(image)), so a change to them cannot change a verdict
TIMING_ONLY = TIMING_MODULES


def sources_hash(dirs: list, skip: frozenset = frozenset()) -> str:
    """A hash of the .py sources below each directory (importlib Traversables
    or Paths), sub-packages included, in path order, leaving out the paths
    (relative to their directory, e.g. timing/cost.py) in `skip`."""
    h = hashlib.sha256(__version__.encode())
    for root in dirs:
        base = Path(str(root))
        for f in sorted(base.rglob("*.py")):
            rel = f.relative_to(base).as_posix()
            if "__pycache__" not in rel and rel not in skip:
                h.update(rel.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def prover_fingerprint() -> str:
    """A hash of the prover's and the machine model's sources, the timing
    models and cost profiles left out."""
    return sources_hash([files("copygen.verify"), files("copygen.emu")], TIMING_ONLY)


def code_key(elf: str | Path, symbol: str, kind: str, bounded: int = 0,
             all_clauses: bool = False, rules: RegisterRules | None = None) -> str:
    image = read_elf(elf)
    h = hashlib.sha256(f"{prover_fingerprint()}\0{symbol}\0{kind}\0{bounded}\0"
                       f"{'all' if all_clauses else ''}\0".encode())
    if rules:           # a proof without rules keeps the key it had
        h.update(rules.key().encode() + b"\0")
    h.update(image.address_of(symbol).to_bytes(8, "little"))
    for seg in sorted(image.segments, key=lambda s: s.vaddr):
        h.update(seg.vaddr.to_bytes(8, "little"))
        h.update(bytes(seg.data))
    for pc, fixup in sorted(image.extable.items()):
        h.update(pc.to_bytes(8, "little") + fixup.to_bytes(8, "little"))
    return h.hexdigest()


class ProofCache:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> RoutineReport | None:
        try:
            d = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        rep = RoutineReport(d["symbol"], d["kind"], d["status"], d["detail"], d["seconds"],
                            {int(k, 16): v for k, v in d.get("invariants", {}).items()},
                            d.get("counterexamples", {}), d.get("calls", {}),
                            d.get("held_up_to", {}))
        return rep

    def put(self, key: str, rep: RoutineReport) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(rep.as_dict(), indent=1))
        tmp.replace(path)


def prove_cached(elf: str | Path, symbol: str, kind: str, cache: ProofCache | None,
                 prove=None, bounded: int = 0, all_clauses: bool = False,
                 jobs: int = 1, rules: RegisterRules | None = None) -> RoutineReport:
    """The report of `symbol` in `elf`: the cache's when it holds this very
    code (and prover), else a new proof, which goes into the cache.  The one
    way every command proves through the cache (verify, tune, patch);
    `prove(callee)` runs the proof when the caller has its own (progress,
    --bounded), else verify.checks.prove.prove_routine does.  `callee` proves a
    routine the proof takes by its own contract (verify.symbolic.summary) through
    the same cache.  The solver's answers go to the cache's `answers/`
    (verify.solver.answers): a routine that shares queries with one proved
    before, another variant of a sweep or the same code at another
    address, proves faster.  With register `rules` (clause R1) the proof,
    its callees' and the key are theirs."""
    answers.configure(cache.root / "answers" if cache else None)
    key = code_key(elf, symbol, kind, bounded, all_clauses, rules) if cache else None
    rep = cache.get(key) if cache else None
    if rep is None:
        def callee(sym: str, kind: str) -> RoutineReport:
            return prove_cached(elf, sym, kind, cache, jobs=jobs, rules=rules)
        if prove is None:
            from copygen.verify.checks.prove import prove_routine
            rep = prove_routine(str(elf), symbol, kind, jobs=jobs, callee=callee, rules=rules)
        else:
            rep = prove(callee)
        if cache:
            cache.put(key, rep)
    return rep
