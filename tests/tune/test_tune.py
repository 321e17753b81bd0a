"""copygen tune: the store survives SIGKILL, -j and Dask rank alike, a broken
variant is disqualified, bad sweeps are refused, the winner builds."""
from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from copygen.cli import main
from tests.conftest import ROOT

HEAD = """target u74 { xlen 64; misaligned slow }
copy_user k for u74 { small below 71; align dst; words unroll 8 schedule loads_first;
                      shift unroll 1 schedule interleave; tail bytes; fault exact }
"""
EIGHT = HEAD + "sweep s for k { small below [71, 96]; words unroll [2, 4, 8, 16] }\n"
SIX = HEAD + "sweep s for k { small below [71, 96]; words unroll [1, 2, 4] }\n"
FOUR = HEAD + "sweep s for k { words unroll [2, 4] schedule [loads_first, pipelined] }\n"
BROKEN = HEAD + "sweep s for k { words unroll [4]; fault [exact, block] }\n"

LIB = HEAD + """clear_user c for u74 { small below 16; align dst; words unroll 4; tail bytes; fault exact }
string lib for u74 {
    memcpy { small below 16; align dst; words unroll 1; shift unroll 1; tail bytes }
    memset { small below 16; align dst; words unroll 1; tail bytes }
}
"""


def _file(tmp_path, text, name="t.copy"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _tune(tmp_path, *args):
    r = CliRunner().invoke(main, ["tune", *map(str, args),
                                                  "--build-cache", str(tmp_path / "cache"),
                                                  "--proof-cache", str(tmp_path / "proofs")])
    return r


def _rows(r):
    assert r.exit_code == 0, (r.output, r.stderr)
    out = json.loads(r.stdout)
    return [(row["rank"], row["point"], row["expected_cycles"]) for row in out["rows"]]


def test_dry_run_counts_points_and_distinct_routines(tmp_path):
    src = _file(tmp_path, EIGHT)
    r = _tune(tmp_path, src, "--dry-run", "--json", "--db", tmp_path / "t.db")
    out = json.loads(r.stdout)
    # unroll 16 raises both thresholds to 135: those two points emit one routine
    assert (out["points"], out["distinct"]) == (8, 7)
    assert not (tmp_path / "t.db").exists()


def test_a_killed_run_resumes_without_losing_or_redoing(tmp_path):
    """Killed after two of six routines: the run again evaluates the other
    four only, and its store ranks as a run never killed does."""
    src, db = _file(tmp_path, SIX), tmp_path / "k.db"
    argv = [sys.executable, "-m", "copygen", "tune", str(src), "--db", str(db), "--top", "0",
            "--build-cache", str(tmp_path / "cache"), "--workload", "small"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    evaluated = 0
    while time.time() < deadline and evaluated < 2 and proc.poll() is None:
        time.sleep(0.1)
        if db.exists():
            try:
                evaluated = sqlite3.connect(db).execute("SELECT count(*) FROM evals").fetchone()[0]
            except sqlite3.OperationalError:
                evaluated = 0
    assert 2 <= evaluated < 6, evaluated
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {r[0]: r[1] for r in sqlite3.connect(db).execute("SELECT code, seconds FROM evals")}
    again = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"evaluated {6 - len(before)} routines ({len(before)} from the store" in again.stderr
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*) FROM points").fetchone()[0] == 6
    after = {r[0]: r[1] for r in con.execute("SELECT code, seconds FROM evals")}
    assert len(after) == 6 and all(after[k] == v for k, v in before.items())
    resumed = _tune(tmp_path, src, "--db", db, "--top", "0", "--workload", "small", "--json")
    fresh = _tune(tmp_path, src, "--db", tmp_path / "fresh.db", "--top", "0", "--workload", "small",
                  "--json")
    assert _rows(resumed) == _rows(fresh)


@pytest.mark.slow
def test_local_workers_and_dask_rank_alike(tmp_path):
    from distributed import LocalCluster
    src = _file(tmp_path, FOUR)
    one = _rows(_tune(tmp_path, src, "--db", tmp_path / "a.db", "--top", "0", "-j", "1", "--json"))
    two = _rows(_tune(tmp_path, src, "--db", tmp_path / "b.db", "--top", "0", "-j", "2", "--json"))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        dask = _rows(_tune(tmp_path, src, "--db", tmp_path / "c.db", "--top", "0",
                           "--dask", cl.scheduler_address, "--json"))
    assert one == two == dask and len(one) == 4


@pytest.mark.slow
def test_a_broken_variant_is_disqualified_and_never_the_winner(tmp_path):
    src = _file(tmp_path, BROKEN)
    r = _tune(tmp_path, src, "--db", tmp_path / "b.db", "--top", "2", "--workload", "small",
              "--json", "--report", tmp_path / "rep")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    proofs = {row["point"]: row["proof"] for row in out["rows"]}
    block = proofs["words unroll 4 schedule loads_first, fault block"]
    assert block.startswith("DISQUALIFIED") and "C5" in block
    # proved: both directions of the copy, each under its own faults
    assert proofs["words unroll 4 schedule loads_first, fault exact"] == \
        "proved (copy_to_user, copy_from_user)"
    assert "fault exact" in out["winner"]["label"]
    win = tmp_path / "rep" / "winner.copy"
    assert "fault exact" in win.read_text() and (tmp_path / "rep" / "report.md").is_file()
    # the winner is a file copygen builds, and its bench and proof match the store's
    built = CliRunner().invoke(main, ["build", str(win), "-o", str(tmp_path / "out")])
    assert built.exit_code == 0, built.output
    rank = CliRunner().invoke(main, ["rank", str(win), "--routine", "copy_to_user",
                                     "--workload", "small", "--json",
                                     "--build-cache", str(tmp_path / "cache")])
    (row,) = json.loads(rank.stdout)["ranking"]["copy_to_user"]
    assert row["expected_cycles"] == pytest.approx(out["winner"]["expected_cycles"], abs=0.01)
    proved = CliRunner().invoke(main, ["verify", str(win), "--routine", "copy_to_user",
                                                       "--proof-cache", str(tmp_path / "proofs"),
                                                       "--workdir", str(tmp_path / "w")])
    assert proved.exit_code == 0, proved.output


def test_show_renders_the_store_without_recomputing(tmp_path, monkeypatch):
    src, db = _file(tmp_path, HEAD + "sweep s for k { words unroll [2, 4] }\n"), tmp_path / "s.db"
    first = _rows(_tune(tmp_path, src, "--db", db, "--top", "0", "--workload", "small", "--json"))
    from copygen.tune import run
    monkeypatch.setattr(run, "evaluate", lambda job: pytest.fail("recomputed"))
    shown = CliRunner().invoke(main, ["tune", "show", str(db), "--json"])
    assert _rows(shown) == first
    csv_out = CliRunner().invoke(main, ["tune", "show", str(db), "--csv"])
    assert csv_out.stdout.splitlines()[0].startswith("rank,point,expected_cycles")


@pytest.mark.parametrize("sweep,message", [
    ("sweep s for k { unroll [2] }", "syntax error"),
    ("sweep s for k { words unroll [] }", "syntax error"),
    ("sweep s for k { small below [0, 100000000000000000000] }", "small below"),
    ("sweep s for nobody { words unroll [2] }", "unknown routine `nobody`"),
    ("sweep s for lib { words unroll [2] }", "a string block"),
    ("sweep s for lib.memmove { words unroll [2] }", "memmove has no phases"),
    ("sweep s for lib.strcpy { words unroll [2] }", "not a function a sweep can tune"),
    ("sweep s for k.memcpy { words unroll [2] }", "has no functions"),
    ("sweep s for lib.memset { shift unroll [1] }", "no source"),
    ("sweep s for lib.memcpy { fault [exact] }", "`fault` does not apply to memcpy"),
    ("sweep s for lib.memcpy { ends [pieces] }", "`ends` applies to copy_user, clear_user and memcpy"),
    ("sweep s for k { expect [aligned] }", "`expect` applies to the string functions"),
])
def test_bad_sweeps_are_located_errors(tmp_path, sweep, message):
    src = _file(tmp_path, LIB + sweep + "\n")
    r = _tune(tmp_path, src, "--db", tmp_path / "x.db")
    assert r.exit_code == 2, r.output
    assert message in r.stderr and f"{src}:" in r.stderr
    assert not (tmp_path / "x.db").exists()


def test_an_unwritable_or_corrupt_store_is_refused_untouched(tmp_path):
    src = _file(tmp_path, HEAD + "sweep s for k { words unroll [2] }\n")
    corrupt = tmp_path / "bad.db"
    corrupt.write_bytes(b"not a database at all" * 100)
    before = corrupt.read_bytes()
    r = _tune(tmp_path, src, "--db", corrupt)
    assert r.exit_code == 2 and "not a copygen tuning store" in r.stderr
    assert corrupt.read_bytes() == before
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    before = other.read_bytes()
    r = _tune(tmp_path, src, "--db", other)
    assert r.exit_code == 2 and "not a copygen tuning store" in r.stderr and other.read_bytes() == before
    if os.geteuid() != 0:                      # root writes anywhere: the run would go on
        (tmp_path / "ro").mkdir()
        (tmp_path / "ro").chmod(0o500)
        r = _tune(tmp_path, src, "--db", tmp_path / "ro" / "sub" / "t.db")
        assert r.exit_code == 2 and "writable" in r.stderr
    r = _tune(tmp_path, src, "--db", tmp_path)
    assert r.exit_code == 2 and "is a directory" in r.stderr


def test_points_invalid_in_combination_are_pruned_with_the_reason(tmp_path):
    src = _file(tmp_path, HEAD + "sweep s for k { words unroll [4, 16] schedule [loads_first, pipelined] }\n")
    r = _tune(tmp_path, src, "--dry-run", "--json", "--db", tmp_path / "t.db")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["points"] == 3
    (pruned,) = out["pruned"]
    assert pruned["point"] == "words unroll 16 schedule pipelined" and "registers" in pruned["reason"]
    assert "pruned 1 point: " in r.stderr and "\n    words unroll 16 schedule pipelined\n" in r.stderr


def test_dry_run_says_its_summary_first_and_groups_the_reasons(tmp_path):
    src = _file(tmp_path, HEAD + "sweep s for k { words unroll [4, 12, 16] schedule [loads_first, pipelined] "
                "shift unroll [1, 8] schedule [interleave, pipelined] }\n")
    r = _tune(tmp_path, src, "--dry-run", "--db", tmp_path / "t.db")
    assert r.exit_code == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == f"{src}: sweep `s` over copy_user k: 12 points (12 pruned), 12 distinct routines"
    reasons = [ln for ln in lines if ln.startswith("pruned ")]
    assert len(reasons) == 3 and all(ln.startswith("pruned 4 points: ") for ln in reasons)
    listed = [ln for ln in lines if ln.startswith("    ")]
    assert len(listed) == len(set(listed)) == 12
    # a real run: one line per reason, with an example (said before any work)
    from copygen.commands_tune import _say_plan
    from copygen.tune.run import plan
    runner = CliRunner()
    with runner.isolation() as (_, err, _):
        _say_plan(str(src), plan(str(src), None, "u74", "network", "spec"), listed=False)
        quiet = err.getvalue().decode().splitlines()
    assert quiet[0] == lines[0]
    assert quiet[1:] == [ln + f" (e.g. {lines[lines.index(ln) + 1].strip()}; --dry-run lists them)"
                         for ln in reasons]


def test_top_zero_ranks_without_proving_and_says_so(tmp_path):
    src = _file(tmp_path, HEAD + "sweep s for k { small below [71, 96] }\n")
    r = _tune(tmp_path, src, "--db", tmp_path / "t.db", "--top", "0", "--workload", "uniform:0-64")
    assert r.exit_code == 0, r.stderr
    assert "no winner: --top 0 ranks without proving" in r.stdout
    assert "proved" not in r.stdout.replace("not proved", "")


def test_the_patches_directories_the_docs_write_are_ignored():
    for d in ("patches", "outgoing"):
        r = subprocess.run(["git", "check-ignore", "-q", f"{d}/0001-x.patch"], cwd=ROOT)
        assert r.returncode == 0, f"{d}/ is not in .gitignore"


GUARDED = HEAD + "sweep s for k { small below [71, 1000] }\n"


def test_a_guard_ranks_a_point_slower_in_some_cell_after_the_rest(tmp_path):
    """udp sizes (6500 B, 50000 B) cost both thresholds the same, and the label
    puts 1000 first; a guard at threshold 71 (the routine itself) pushes the
    point that is slower at 72-999 B below it, here and in `tune show`."""
    src, guard = _file(tmp_path, GUARDED), _file(tmp_path, HEAD, "guard.copy")
    plain = _rows(_tune(tmp_path, src, "--db", tmp_path / "p.db", "--top", "0", "--workload",
                        "udp", "--json"))
    assert [p for _, p, _ in plain] == ["small below 1000", "small below 71"]
    assert plain[0][2] == plain[1][2]
    r = _tune(tmp_path, src, "--db", tmp_path / "g.db", "--top", "0", "--workload", "udp",
              "--guard", guard, "--json")
    rows = json.loads(r.stdout)["rows"]
    assert [row["point"] for row in rows] == ["small below 71", "small below 1000"]
    assert re.search(r"\d+ cells? slower than", rows[1]["proof"]) and "slower" not in rows[0]["proof"]
    assert f"vs {guard.stem}" in rows[0]                  # a guard is shown as a baseline, by name
    shown = CliRunner().invoke(main, ["tune", "show", str(tmp_path / "g.db"), "--json"])
    again = json.loads(shown.stdout)["rows"]
    assert [row["point"] for row in again] == ["small below 71", "small below 1000"]


def test_the_winner_is_proved_and_nowhere_slower_than_a_guard():
    from copygen.tune.run import ranked, winner
    grid = {"aligned": {"8": 10.0, "16": 20.0}}
    rows = [{"label": "fast but slower at 16", "expected": 1.0, "verdict": "proved",
             "grid": {"aligned": {"8": 5.0, "16": 21.0}}},
            {"label": "unproved", "expected": 2.0, "verdict": None,
             "grid": {"aligned": {"8": 9.0, "16": 19.0}}},
            {"label": "guarded", "expected": 3.0, "verdict": "proved",
             "grid": {"aligned": {"8": 10.0, "16": 20.0}}}]
    out = ranked([dict(r) for r in rows], {"g": {"grid": grid}})
    assert [r["label"] for r in out] == ["unproved", "guarded", "fast but slower at 16"]
    assert out[2]["guard"] == {"g": 1}
    assert winner(out)["label"] == "guarded"
    assert winner(ranked([dict(r) for r in rows]))["label"] == "fast but slower at 16"


def test_alignment_mixes_keep_their_own_evaluations_in_one_store(tmp_path):
    """The cycles of a point depend on the alignment mix: a second run over
    the same store under another mix evaluates again and ranks by its own
    figures, and each run's rows stay as they were."""
    src, db = _file(tmp_path, HEAD + "sweep s for k { words unroll [2, 4] }\n"), tmp_path / "m.db"
    spec = _rows(_tune(tmp_path, src, "--db", db, "--top", "0", "--workload", "tcp", "--json"))
    mixed = _rows(_tune(tmp_path, src, "--db", db, "--top", "0", "--workload", "tcp",
                        "--align-mix", "all", "--json"))
    assert [c for _, _, c in spec] != [c for _, _, c in mixed]
    alone = _rows(_tune(tmp_path, src, "--db", tmp_path / "fresh.db", "--top", "0",
                        "--workload", "tcp", "--align-mix", "all", "--json"))
    assert mixed == alone
    again = _rows(_tune(tmp_path, src, "--db", db, "--top", "0", "--workload", "tcp", "--json"))
    assert again == spec


def test_a_rerun_after_a_generator_change_ranks_the_new_code(tmp_path, monkeypatch):
    """The points of a run are keyed by the code they emit now: when the
    generator changes, the same command evaluates the new routines and its
    ranking joins their rows, not the figures of the code emitted before."""
    from copygen.gen.emission import emit
    src, db = _file(tmp_path, FOUR), tmp_path / "g.db"
    first = _rows(_tune(tmp_path, src, "--db", db, "--top", "0", "--workload", "tcp", "--json"))
    with sqlite3.connect(db) as con:
        old = {c for (c,) in con.execute("SELECT code FROM points")}
    render = emit.render_uaccess
    monkeypatch.setattr(emit, "render_uaccess",
                        lambda st, source: render(st, source) + "/* regenerated */\n")
    r = _tune(tmp_path, src, "--db", db, "--top", "0", "--workload", "tcp", "--json")
    assert f"evaluated {len(old)} routines (0 from the store" in r.stderr
    with sqlite3.connect(db) as con:
        new = {c for (c,) in con.execute("SELECT code FROM points")}
        joined = con.execute("SELECT count(*) FROM points p JOIN evals e ON e.code = p.code"
                             ).fetchone()[0]
    assert new and not new & old and joined == 4
    assert _rows(r) == first            # the same machine code, so the same cycles


def test_an_unknown_left_by_another_prover_is_proved_again(tmp_path, monkeypatch):
    """A proof that gave up says nothing about the code, only about the
    prover's limits: a rerun after the prover changed asks again, while a
    verdict of the same prover stands.  A "proved" recorded before tune
    proved every entry point (one proof per code, of copy_to_user alone)
    is no proof of the point: it is proved again, entry by entry."""
    from copygen.tune import run
    from copygen.tune.session import eval_profile
    from copygen.tune.store import Store
    from copygen.verify.solver.cache import prover_fingerprint
    src, db = _file(tmp_path, HEAD + "sweep s for k { words unroll [2, 4, 8] }\n"), tmp_path / "p.db"
    _rows(_tune(tmp_path, src, "--db", db, "--top", "0", "--workload", "small", "--json"))
    store = Store(db, eval_profile)
    (run_id,) = [r["run"] for r in store.runs()]
    codes = [r["code"] for r in run.ranked(store.results(run_id))]
    store.add_proof(codes[0], "unknown", {}, {}, 1.0, "an older prover")
    store.add_proof(codes[1], "unknown", {}, {}, 1.0, prover_fingerprint())
    store.add_proof(codes[2], "proved", {}, {}, 1.0, "an older prover")
    # until anything is asked again, the older prover's unknown disqualifies
    # nothing, and the old "proved" proves only one entry point
    label = {r["code"]: r["label"] for r in store.results(run_id)}
    out = CliRunner().invoke(main, ["tune", "show", str(db), "--json"])
    shown = {r["point"]: r["proof"] for r in json.loads(out.stdout)["rows"]}
    assert shown[label[codes[0]]] == "not proved (an earlier prover's unknown)"
    assert shown[label[codes[1]]].startswith("DISQUALIFIED")
    assert shown[label[codes[2]]].startswith("not proved: only its benched entry point proved")
    assert json.loads(out.stdout)["winner"] is None
    asked = []
    monkeypatch.setattr(run, "_prove", lambda st, row, sym, *rest: asked.append((row["code"], sym)))
    run.prove_top(store, run_id, "copy_user", 3, str(tmp_path / "proofs"), 1)
    assert [c for c, _ in asked] == [codes[0], codes[2]]
    assert [s for _, s in asked] == ["__asm_copy_to_user"] * 2


def test_a_store_from_before_proofs_named_their_prover_opens_and_keeps_its_rows(tmp_path):
    from copygen.tune.session import eval_profile
    from copygen.tune.store import Store
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as con:
        con.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
                          "INSERT INTO meta VALUES ('schema', '1');"
                          "CREATE TABLE proofs (code TEXT PRIMARY KEY, verdict TEXT, "
                          "status TEXT, detail TEXT, seconds REAL);"
                          "INSERT INTO proofs VALUES ('a', 'unknown', '{}', '{}', 1.0);"
                          "INSERT INTO proofs VALUES ('b', 'proved', '{}', '{}', 1.0);")
    store = Store(db, eval_profile)
    # kept as they were, and read for what they are: the unknown of a prover
    # not named (no verdict for this one), one entry point's proof
    assert store.proof_of("a") == "unknown" and store.proof_of("a", "this prover") is None
    assert store.proof_of("b") == "partial" and store.proof_fields("b")["legacy"]
    assert store.proof_of("c") is None


def _rank_of(path, routine, workload, cache):
    r = CliRunner().invoke(main, ["rank", str(path), "--routine", routine, "--workload", workload,
                                  "--json", "--build-cache", str(cache)])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)["ranking"][routine]
    return row["expected_cycles"]


def test_a_memset_sweep_ranks_the_string_function(tmp_path):
    src = _file(tmp_path, LIB + "sweep ms for lib.memset { words unroll [1, 4]; tail [bytes, words] }\n")
    r = _tune(tmp_path, src, "--db", tmp_path / "s.db", "--top", "0", "--workload", "small",
              "--json", "--baseline", ROOT / "examples" / "string2021.copy",
              "--report", tmp_path / "rep")
    rows = _rows(r)
    assert len(rows) == 4 and "over memset lib.memset: 4 points" in r.stderr
    assert rows[0][2] <= rows[-1][2]
    base = json.loads(r.stdout)["baselines"][str(ROOT / "examples" / "string2021.copy")]
    assert base["expected"] == pytest.approx(
        _rank_of(ROOT / "examples" / "string2021.copy", "memset", "small", tmp_path / "cache"),
        abs=0.06)
    # each row's figure is the memset of its point, as `copygen rank` measures it
    from copygen.gen.front.variants import sweep_space
    texts = {v.label: v.text for v in sweep_space(str(src), "ms").variants}
    for _, label, cycles in (rows[0], rows[-1]):
        assert cycles == pytest.approx(
            _rank_of(_file(tmp_path, texts[label], "point.copy"), "memset", "small",
                     tmp_path / "cache"), abs=0.06)


def test_copy_and_clear_sweeps_share_a_store_without_mixing_their_rows(tmp_path):
    """A baseline's uaccess.S holds both its copy_user and its clear_user:
    the sweeps of one file share its default store, and each must see the
    baseline's own routine of the kind it tunes."""
    src = _file(tmp_path, LIB + "sweep a for k { words unroll [4, 8] schedule [loads_first] }\n"
                               "sweep b for c { words unroll [2, 4] }\n")
    base = ROOT / "examples" / "kernel2021.copy"
    got = {}
    for sweep, routine in (("a", "copy_to_user"), ("b", "clear_user")):
        r = _tune(tmp_path, src, "--sweep", sweep, "--db", tmp_path / "one.db", "--top", "0",
                  "--workload", "small", "--baseline", base, "--json")
        assert r.exit_code == 0, r.stderr
        got[routine] = json.loads(r.stdout)["baselines"][str(base)]["expected"]
    for routine, cycles in got.items():
        assert cycles == pytest.approx(_rank_of(base, routine, "small", tmp_path / "cache"), abs=0.06)


@pytest.mark.slow
def test_a_memcpy_sweep_proves_its_winner_which_builds(tmp_path):
    src = _file(tmp_path, LIB + "sweep mc for lib.memcpy { words unroll [1, 4]; shift unroll [1, 2] }\n")
    r = _tune(tmp_path, src, "--db", tmp_path / "m.db", "--top", "1", "--workload", "small",
              "--json", "--report", tmp_path / "rep")
    rows = json.loads(r.stdout)["rows"]
    assert r.exit_code == 0 and rows[0]["proof"] == "proved (memcpy, memset, memmove)"
    win = tmp_path / "rep" / "winner.copy"
    assert rows[0]["point"] in win.read_text()
    assert json.loads(r.stdout)["winner"]["expected_cycles"] == pytest.approx(
        _rank_of(win, "memcpy", "small", tmp_path / "cache"), abs=0.06)
    proved = CliRunner().invoke(main, ["verify", str(win), "--routine", "memcpy",
                                       "--proof-cache", str(tmp_path / "proofs"),
                                       "--workdir", str(tmp_path / "w")])
    assert proved.exit_code == 0, proved.output


def test_a_string_sweep_takes_its_profile_from_the_string_block_target(tmp_path):
    src = _file(tmp_path, """target u74 { xlen 64; misaligned slow }
target c910 { xlen 64; misaligned fast; profile c910 }
string lib for c910 {
    memcpy { small below 16; align dst; words unroll 1; shift off; tail bytes }
    memset { small below 16; align dst; words unroll 1; tail bytes }
}
sweep s for lib.memset { words unroll [1, 2] }
""")
    r = _tune(tmp_path, src, "--db", tmp_path / "p.db", "--top", "0", "--workload", "small",
              "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["run"]["profile"] == "c910" and out["run"]["kind"] == "memset"
    assert out["run"]["routine"] == "lib.memset" and len(out["rows"]) == 2


def test_the_workflow_runs_without_the_command_line(tmp_path):
    """tune.session is the one function behind `copygen tune`: a library
    caller gets the plan, the stages and the ranking without click."""
    from copygen.tune.session import Request, Watch, show_store, tune_sweep
    src = _file(tmp_path, HEAD + "sweep s for k { small below [71, 96] }\n")
    seen = []
    watch = Watch(planned=lambda p: seen.append(("plan", len(p.points))), tell=lambda m: seen.append(m))
    req = Request(str(src), db=str(tmp_path / "t.db"), top=0, workload="uniform:0-64",
                  build_cache=str(tmp_path / "cache"), proof_cache=str(tmp_path / "proofs"))
    p, ranking = tune_sweep(Request(**{**req.__dict__, "dry_run": True}), watch)
    assert ranking is None and seen == [("plan", 2)] and not (tmp_path / "t.db").exists()
    p, ranking = tune_sweep(req, watch)
    assert [r["label"] for r in ranking.rows] and ranking.winner is None and ranking.ranked_only
    assert ranking.meta["args"]["align_mix"] == "spec"
    again = show_store(str(tmp_path / "t.db"))
    assert again.table == ranking.table


def test_evaluations_are_kept_per_timing_model(tmp_path, monkeypatch):
    """The store keys evaluations by the profile and a fingerprint of the
    timing model: a rerun under the same model measures nothing again, a
    rerun after the model changed measures every point again (cycles of
    two models are never ranked together)."""
    from copygen.tune import session
    from copygen.tune.store import Store
    src, db = _file(tmp_path, HEAD + "sweep s for k { words unroll [2, 4] }\n"), tmp_path / "m.db"
    args = ("--db", db, "--top", "0", "--workload", "small", "--json")
    first = _rows(_tune(tmp_path, src, *args))
    measured = []
    real = session.evaluate_all

    def counting(store, p, *rest, **kw):
        before = len(store.evaluated(rest[0], "small"))
        out = real(store, p, *rest, **kw)
        measured.append(len(store.evaluated(rest[0], "small")) - before)
        return out
    monkeypatch.setattr(session, "evaluate_all", counting)
    assert _rows(_tune(tmp_path, src, *args)) == first and measured == [0]
    monkeypatch.setattr(session, "timing_fingerprint", lambda profile: "another model")
    _rows(_tune(tmp_path, src, *args))
    assert measured == [0, 2]
    keys = {r[0] for r in Store(db).db.execute("SELECT DISTINCT profile FROM evals")}
    assert len(keys) == 2 and all(k.startswith("u74@") for k in keys), keys


def test_a_target_with_register_rules_proves_its_points_under_them(tmp_path, monkeypatch):
    """`reserve`/`jump` in the swept routine's target reach the prover: the
    winner's proof includes clause R1 under those rules; without them, none."""
    from copygen.verify.contract.rules import RegisterRules
    seen = []

    def fake(elf, symbol, kind, cache, jobs=1, rules=None):
        seen.append(rules)
        raise RuntimeError("stop here: the rules are what is tested")
    monkeypatch.setattr("copygen.verify.solver.cache.prove_cached", fake)
    ruled = HEAD.replace("misaligned slow }", "misaligned slow; reserve t6; jump t2 }")
    for text in (ruled + "sweep s for k { words unroll [2] }\n", FOUR):
        src = _file(tmp_path, text, f"r{len(seen)}.copy")
        r = _tune(tmp_path, src, "--db", tmp_path / f"{src.stem}.db", "--top", "1",
                  "--workload", "small")
        assert isinstance(r.exception, RuntimeError), r.output
    assert seen == [RegisterRules(("t6",), "t2"), None]
