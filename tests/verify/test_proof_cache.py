"""One way to prove through the proof cache (issue 35 item 2):
verify.solver.cache.prove_cached, used by verify, tune and patch alike."""
from __future__ import annotations

import re

from copygen.gen.build import build_file
from copygen.verify.solver.cache import ProofCache, prove_cached
from copygen.verify.checks.prove import RoutineReport
from tests.conftest import ROOT


def test_the_same_code_is_proved_once(tmp_path):
    elf = build_file(ROOT / "examples" / "pre2021.copy", tmp_path / "out").elf
    cache, calls = ProofCache(tmp_path / "proofs"), []

    def prove(callee):
        calls.append(1)
        return RoutineReport("__clear_user", "clear", {"C1": "proved"}, {}, 0.5)
    first = prove_cached(elf, "__clear_user", "clear", cache, prove)
    again = prove_cached(elf, "__clear_user", "clear", cache, prove)
    assert calls == [1] and again.status == first.status == {"C1": "proved"}
    # another entry point, another bound, or no cache: proved again
    prove_cached(elf, "__clear_user", "clear", cache, prove, bounded=8)
    prove_cached(elf, "__clear_user", "clear", None, prove)
    assert len(calls) == 3


def test_no_module_but_the_cache_reads_or_fills_it():
    users = []
    for path in ROOT.glob("*/**/*.py"):
        top = path.relative_to(ROOT).parts[0]
        if top in ("tests", "bench", "build") or path.name == "cache.py":
            continue
        if re.search(r"\bcache\.(get|put)\(", path.read_text()):
            users.append(str(path.relative_to(ROOT)))
    assert users == []


def test_the_prover_fingerprint_follows_semantics_not_timing(tmp_path):
    """A verdict depends on the semantics, never on the cost model: the
    prover runs its machines without a profile.  Changing a timing-only
    module keeps the cache; changing the semantics empties it."""
    import shutil
    from copygen.emu.api import Machine
    from copygen.verify.solver import cache
    assert Machine().cost is None
    emu = tmp_path / "emu"
    shutil.copytree(ROOT / "emu", emu)
    base = cache.sources_hash([emu], cache.TIMING_ONLY)
    for name in cache.TIMING_ONLY:
        assert (emu / name).exists(), name
        (emu / name).write_text((emu / name).read_text() + "\n# retimed\n")
    assert cache.sources_hash([emu], cache.TIMING_ONLY) == base
    (emu / "insn" / "semantics.py").write_text((emu / "insn" / "semantics.py").read_text() + "\n# changed\n")
    assert cache.sources_hash([emu], cache.TIMING_ONLY) != base
