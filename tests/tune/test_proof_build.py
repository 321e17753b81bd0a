"""The tuner proves the ELF it benched: the file and SHA-256 its evaluation
recorded, never a build of its own; a file gone since is evaluated again
before it is proved, and without a way to evaluate it, refused."""
from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from copygen.errors import CopygenError
from copygen.tune import run
from copygen.tune.session import Request, eval_profile, tune_sweep
from copygen.tune.store import Store
from copygen.verify.solver import cache as proof_cache

SWEEP = """target u74 { xlen 64; misaligned slow }
copy_user k for u74 { small below 71; align dst; words unroll 8 schedule loads_first;
                      shift unroll 1 schedule interleave; tail bytes; fault exact }
sweep s for k { words unroll [2, 4] }
"""


def _request(tmp_path, top: int) -> Request:
    src = tmp_path / "t.copy"
    src.write_text(SWEEP)
    return Request(str(src), db=str(tmp_path / "t.db"), top=top, workload="uniform:0-64",
                   build_cache=str(tmp_path / "cache"), proof_cache=str(tmp_path / "proofs"))


def _standin(handed: list):
    """verify.solver.cache.prove_cached as a stand-in that notes which file
    it was handed: which file the tuner proves is what is tested."""
    def prove_cached(elf, symbol, kind, cache, jobs=1, rules=None):
        handed.append((str(elf), hashlib.sha256(Path(elf).read_bytes()).hexdigest()))
        return SimpleNamespace(kind=kind, status={}, detail={}, seconds=0.0)
    return prove_cached


def test_the_elf_proved_is_the_elf_evaluated(tmp_path, monkeypatch):
    """The prover is handed the evaluated file, byte for byte, and the proof
    row records that file's hash."""
    handed: list = []
    monkeypatch.setattr(proof_cache, "prove_cached", _standin(handed))
    _, ranking = tune_sweep(_request(tmp_path, top=1))
    proved = [r for r in ranking.rows if r["verdict"]]
    assert len(proved) == 2 == len(handed)
    assert sorted(handed) == sorted((r["elf"], r["elf_sha256"]) for r in proved)
    assert all(r["proof_elf_sha256"] == r["elf_sha256"] for r in proved)
    assert all(Path(elf).is_relative_to((tmp_path / "cache").resolve()) for elf, _ in handed)


def _evaluated(tmp_path) -> tuple[Store, str, dict]:
    """A run evaluated and not proved, its store and its best row."""
    tune_sweep(_request(tmp_path, top=0))
    store = Store(tmp_path / "t.db", eval_profile)
    (run_id,) = [r["run"] for r in store.runs()]
    return store, run_id, store.results(run_id)[0]     # the first prove_top tries


def test_an_elf_changed_since_its_evaluation_is_not_proved(tmp_path, monkeypatch):
    store, run_id, row = _evaluated(tmp_path)
    with open(row["elf"], "ab") as f:
        f.write(b"\0")
    monkeypatch.setattr(proof_cache, "prove_cached", lambda *a, **kw: pytest.fail("proved"))
    with pytest.raises(CopygenError, match="not there as it was benched"):
        run.prove_top(store, run_id, "copy_user", 1, str(tmp_path / "proofs"), 1)


def test_an_elf_gone_since_its_evaluation_is_evaluated_again_and_that_proved(tmp_path, monkeypatch):
    store, run_id, row = _evaluated(tmp_path)
    Path(row["elf"]).unlink()
    store.close()
    handed: list = []
    monkeypatch.setattr(proof_cache, "prove_cached", _standin(handed))
    _, ranking = tune_sweep(_request(tmp_path, top=1))
    again = next(r for r in ranking.rows if r["code"] == row["code"])
    assert (again["elf"], again["elf_sha256"]) in handed and Path(again["elf"]).is_file()
    assert again["proof_elf_sha256"] == again["elf_sha256"]
    assert again["expected"] == row["expected"]
