"""A point is proved only when every entry point of its routine is: both
directions of a user copy (their faults are on different sides: stores for
copy_to_user, loads for copy_from_user), every function of a string block.
A point whose copy_to_user proves but whose copy_from_user does not is
never the winner, the report says why, and the next best is proved
instead; a store's record from before entry points were kept is never
read as a proof of the point.  The prover is a stand-in here (what is
tested is what the tuner asks of it and makes of its answers); the real
one decides in the slow test at the end."""
from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pytest

from copygen.gen import build as gen_build
from copygen.tune import run
from copygen.tune.session import Request, eval_profile, show_store, tune_sweep
from copygen.tune.store import Store
from copygen.verify.contract.clauses import required
from copygen.verify.solver import cache as proof_cache

SWEEP = """target u74 { xlen 64; misaligned slow }
copy_user k for u74 { small below 71; align dst; words unroll 8 schedule loads_first;
                      shift unroll 1 schedule interleave; tail bytes; fault exact }
sweep s for k { words unroll [2, 4, 8] }
"""
FROM = "__asm_copy_from_user"
UNKNOWN = ("C1", "C3", "C4", "C6")


def _request(tmp_path, top: int, report: bool = False, cache=None) -> Request:
    src = tmp_path / "t.copy"
    src.write_text(SWEEP)
    return Request(str(src), db=str(tmp_path / "t.db"), top=top, workload="uniform:0-64",
                   build_cache=str(cache or tmp_path / "cache"),
                   proof_cache=str(tmp_path / "proofs"),
                   report_dir=str(tmp_path / "rep") if report else None)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """The sweep evaluated once, not proved (each test proves a copy of its
    store): its directory, its rows in rank order and the routines built."""
    d = tmp_path_factory.mktemp("evaluated")
    built: list = []
    real = gen_build._build

    def counting(st, source, outdir, link):
        built.append(source)
        return real(st, source, outdir, link)
    gen_build._build = counting
    try:
        _, ranking = tune_sweep(_request(d, top=0))
    finally:
        gen_build._build = real
    rows = [r for r in ranking.rows if r["expected"] is not None]
    return SimpleNamespace(dir=d, rows=rows, built=built)


def _from(evaluated, tmp_path, top: int, report: bool = False) -> Request:
    """A request on a copy of the evaluated store (its ELFs where they were
    benched): what it does is prove."""
    shutil.copy(evaluated.dir / "t.db", tmp_path / "t.db")
    return _request(tmp_path, top, report, evaluated.dir / "cache")


def _prover(asked: list, fails: set[tuple[str, str]]):
    """verify.solver.cache.prove_cached as a stand-in: every clause proved,
    but C1, C3, C4 and C6 unknown for each (ELF, symbol) in `fails`; notes
    each (ELF, symbol) it is asked."""
    def prove_cached(elf, symbol, kind, cache, jobs=1, rules=None, **kw):
        asked.append((str(elf), symbol))
        status = {c: "proved" for c in required(kind)}
        detail = {}
        if (str(elf), symbol) in fails:
            status.update({c: "unknown" for c in UNKNOWN})
            detail = {c: "stand-in: the invariants are too weak" for c in UNKNOWN}
        return SimpleNamespace(kind=kind, status=status, detail=detail, seconds=0.0)
    return prove_cached


def test_a_point_whose_copy_from_user_is_not_proved_is_never_the_winner(evaluated, tmp_path,
                                                                       monkeypatch):
    """The best point's copy_to_user proves and its copy_from_user does not:
    the second best, proved both ways, wins; the best is disqualified,
    naming the direction and its clauses, in the table, the JSON rows and
    report.md."""
    best, second = evaluated.rows[0], evaluated.rows[1]
    asked: list = []
    monkeypatch.setattr(proof_cache, "prove_cached", _prover(asked, {(best["elf"], FROM)}))
    _, ranking = tune_sweep(_from(evaluated, tmp_path, top=1, report=True))
    assert ranking.winner is not None and ranking.winner["code"] == second["code"]
    shown = {r["point"]: r for r in ranking.table}
    bad = shown[best["label"]]
    assert bad["proof"] == ("DISQUALIFIED: copy_from_user C1, C3, C4 unknown "
                            "(copy_to_user proved)")
    assert bad["entry_points"] == {"__asm_copy_to_user": "proved", FROM: "unknown"}
    assert shown[second["label"]]["proof"] == "proved (copy_to_user, copy_from_user)"
    # each point's own ELF, both of its entry points; the third is not tried
    assert asked == [(best["elf"], "__asm_copy_to_user"), (best["elf"], FROM),
                     (second["elf"], "__asm_copy_to_user"), (second["elf"], FROM)]
    out = json.loads((tmp_path / "rep" / "results.json").read_text())
    by_code = {r["code"]: r for r in out["rows"]}
    assert by_code[best["code"]]["entries"][FROM]["status"]["C1"] == "unknown"
    assert by_code[second["code"]]["verdict"] == "proved"
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "DISQUALIFIED: copy_from_user C1, C3, C4 unknown" in md
    assert f"{second['label']}, " in md.split("**Winner**")[1].splitlines()[0]
    assert "of each of its entry points (copy_to_user, copy_from_user)" in md


def test_the_other_entry_points_are_proved_only_until_a_point_has_them_all(evaluated, tmp_path,
                                                                          monkeypatch):
    """The benched entry point of each of the top K, the others of the best
    only once it is proved: the rest are shown partly proved, not proved,
    and `tune show` says the same from the store."""
    rows = evaluated.rows
    asked: list = []
    monkeypatch.setattr(proof_cache, "prove_cached", _prover(asked, set()))
    _, ranking = tune_sweep(_from(evaluated, tmp_path, top=3))
    assert [s for _, s in asked] == ["__asm_copy_to_user", FROM, "__asm_copy_to_user",
                                     "__asm_copy_to_user"]
    proofs = [r["proof"] for r in ranking.table]
    assert proofs[0] == "proved (copy_to_user, copy_from_user)"
    assert proofs[1:] == ["partly proved: copy_to_user proved, copy_from_user not tried"] * 2
    assert ranking.winner["code"] == rows[0]["code"]
    assert show_store(str(tmp_path / "t.db")).table == ranking.table
    # run again: nothing is proved again (the store has every verdict)
    asked.clear()
    tune_sweep(_request(tmp_path, top=3, cache=evaluated.dir / "cache"))
    assert asked == []


def test_a_proved_record_from_before_entry_points_is_not_a_proof(evaluated, tmp_path, monkeypatch):
    """A store written when tune proved copy_to_user alone: its "proved"
    crowns nothing and shows as not proved; the next run proves the point
    entry by entry (the benched one again, through the proof cache) and
    only then crowns it."""
    rows = evaluated.rows
    shutil.copy(evaluated.dir / "t.db", tmp_path / "t.db")
    store = Store(tmp_path / "t.db", eval_profile)
    for r in rows:
        store.add_proof(r["code"], "proved", {}, {}, 1.0, "an older prover", r["elf_sha256"])
    store.close()
    old = show_store(str(tmp_path / "t.db"))
    assert old.winner is None
    assert all(r["proof"].startswith("not proved: only its benched entry point proved")
               for r in old.table)
    asked: list = []
    monkeypatch.setattr(proof_cache, "prove_cached", _prover(asked, set()))
    _, ranking = tune_sweep(_request(tmp_path, top=1, cache=evaluated.dir / "cache"))
    assert asked[:2] == [(rows[0]["elf"], "__asm_copy_to_user"), (rows[0]["elf"], FROM)]
    assert ranking.winner["code"] == rows[0]["code"]
    assert ranking.winner["entry_points"] == ["__asm_copy_to_user", FROM]


def test_every_entry_point_is_proved_in_the_one_elf_that_was_benched(evaluated, tmp_path,
                                                                     monkeypatch):
    """Each distinct routine is built once, by its evaluation; every entry
    point's proof reads that file (none is built for it), and each entry
    proof records its hash."""
    assert len(evaluated.built) == 3            # three distinct routines, each built once
    monkeypatch.setattr(gen_build, "_build", lambda *a, **kw: pytest.fail("built again"))
    asked: list = []
    monkeypatch.setattr(proof_cache, "prove_cached", _prover(asked, set()))
    _, ranking = tune_sweep(_from(evaluated, tmp_path, top=1))
    best = ranking.rows[0]
    assert asked[:2] == [(best["elf"], "__asm_copy_to_user"), (best["elf"], FROM)]
    store = Store(tmp_path / "t.db", eval_profile)
    for sym in ("__asm_copy_to_user", FROM):
        assert store.entry_proof(best["code"], sym)["elf_sha256"] == best["elf_sha256"]
    assert best["proof_elf_sha256"] == best["elf_sha256"]


def test_the_entry_points_are_what_verify_proves(tmp_path):
    """A clear_user point has one entry point; a string block's memcpy
    sweep proves memcpy first, then memset and memmove (its ELF's); a
    copy_user with a vector phase, both directions and the vector routine."""
    text = {"clear": """target u74 { xlen 64; misaligned slow }
clear_user c for u74 { small below 16; align dst; words unroll 4; tail bytes; fault exact }
sweep s for c { words unroll [2] }
""", "memcpy": """target u74 { xlen 64; misaligned slow }
string lib for u74 {
    memcpy { small below 16; align dst; words unroll 1; shift unroll 1; tail bytes }
    memset { small below 16; align dst; words unroll 1; tail bytes }
}
sweep s for lib.memcpy { words unroll [2] }
"""}
    got = {}
    for name, t in text.items():
        src = tmp_path / f"{name}.copy"
        src.write_text(t)
        _, ranking = tune_sweep(Request(str(src), db=str(tmp_path / f"{name}.db"), top=0,
                                        workload="uniform:0-64",
                                        build_cache=str(tmp_path / "cache"),
                                        proof_cache=str(tmp_path / "proofs")))
        (row,) = ranking.rows
        got[name] = run.entry_points(row["elf"], ranking.meta["kind"])
    assert got["clear"] == [("__clear_user", "clear")]
    assert got["memcpy"] == [("memcpy", "memcpy"), ("memset", "memset"), ("memmove", "memmove")]
    # a copy_user with a vector line: its vector routine too (proved at every VLEN)
    vec = tmp_path / "vec.copy"
    vec.write_text("target x60 { xlen 64; misaligned slow }\n"
                   "copy_user cu for x60 { small below 71; words unroll 8; tail bytes; "
                   "fault exact; vector e8 m8 above 768 loads plain }\n")
    elf = gen_build.build_cached(vec, tmp_path / "cache").elf
    assert run.entry_points(elf, "copy_user") == [("__asm_copy_to_user", "to"), (FROM, "from"),
                                                  ("__asm_vector_usercopy", "vector")]
