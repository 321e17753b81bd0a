"""`copygen tune --vector-state`: the share of vector calls whose kernel
vector section saves and restores the user's dirty vector state prices a
vector point's calls (measure.dispatch), keys its evaluations apart from
every other state's, and is stated in the run's JSON and report."""
from __future__ import annotations

import json
import re
import sqlite3

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.errors import CopygenError
from copygen.gen.build import build_cached, build_vector_section
from copygen.measure.bench import Bench, Case
from copygen.measure.dispatch import (parse_vector_state, section_cost, section_cycles,
                                      vector_state_name)
from copygen.tune import evaluate as ev
from copygen.tune.store import eval_workload
from tests.conftest import ROOT

X60 = ROOT / "examples" / "x60vector.copy"
# a scalar sweep on a scalar core: cheap to evaluate, and the state changes none of its cycles
SCALAR = """target u74 { xlen 64; misaligned slow }
copy_user k for u74 { small below 71; align dst; words unroll 8 schedule loads_first;
                      shift unroll 1 schedule interleave; tail bytes; fault exact }
sweep s for k { words unroll [2, 4] }
"""


def _tune(tmp_path, *args):
    return CliRunner().invoke(main, ["tune", *map(str, args), "--build-cache", str(tmp_path / "cache"),
                                     "--proof-cache", str(tmp_path / "proofs")])


@pytest.mark.parametrize("text,share,name", [
    ("clean", 0.0, "clean"), ("dirty", 1.0, "dirty"), ("DIRTY", 1.0, "dirty"), ("0", 0.0, "clean"),
    ("1", 1.0, "dirty"), ("0.25", 0.25, "0.25"), (".5", 0.5, "0.5"), ("0.100", 0.1, "0.1"),
])
def test_a_state_reads_as_a_share_and_back_as_one_name(text, share, name):
    assert parse_vector_state(text) == share
    assert vector_state_name(share) == name
    assert parse_vector_state(name) == share


@pytest.mark.parametrize("bad", ["bogus", "1.5", "-0.1", "nan", "inf", "", "half"])
def test_a_bad_state_is_refused_with_one_line_and_exit_2(tmp_path, bad):
    with pytest.raises(CopygenError, match="--vector-state"):
        parse_vector_state(bad)
    src = tmp_path / "t.copy"
    src.write_text(SCALAR)
    r = _tune(tmp_path, src, "--dry-run", "--vector-state", bad)
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: --vector-state {bad!r}: give clean, dirty")
    as_json = _tune(tmp_path, src, "--dry-run", "--json", "--vector-state", bad)
    assert as_json.exit_code == 2
    assert "--vector-state" in json.loads(as_json.stdout)["error"]["message"]


def test_the_help_names_the_option_and_its_values():
    r = CliRunner().invoke(main, ["tune", "--help"])
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    assert "--vector-state clean|dirty|SHARE" in text and "never reused for another" in text


def test_the_eval_key_differs_per_state_and_keeps_the_clean_one():
    """Clean keeps the key stores written before the state existed hold;
    each other state has its own."""
    keys = {s: eval_workload("tcp", "spec", s) for s in ("clean", "dirty", "0.25")}
    assert keys["clean"] == "tcp"
    assert len(set(keys.values())) == 3
    assert eval_workload("tcp", "all", "dirty") not in (keys["dirty"], eval_workload("tcp", "all"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("vstate")
    return build_cached(X60, d / "cache").elf, build_vector_section(d / "section")


def test_a_dirty_state_costs_a_vector_call_the_save_and_restore(tmp_path, built):
    """The same vector point: a case of its threshold or more costs more
    with dirty state, by the dirty section's extra cycles (the ones
    bench/tune/vector_threshold.py measures), and a share of dirty calls that
    share of them; below the threshold the state changes nothing."""
    elf, section = built
    bench = Bench(elf, "x60", 4096)
    text = re.sub(r"above \d+", "above 1024", X60.read_text())

    def cycles(share, n):
        job = ev.Job(code="c", text=text, kind="copy_user", profile="x60", workload="tcp",
                     align_mix="spec", cache=str(tmp_path), vector_dirty=share)
        return ev._dispatched(job, bench).run(Case("__asm_copy_to_user", n, 0, 0)).cycles

    s = section_cycles(section, "x60")
    extra = s["dirty"] - s["clean"]
    assert extra > 150                      # ~200 cycles of save and restore on the x60
    clean, quarter, dirty = (cycles(share, 2048) for share in (0.0, 0.25, 1.0))
    assert dirty == clean + extra
    assert quarter == pytest.approx(clean + extra / 4)
    assert section_cost(s, 0.25) == pytest.approx(s["clean"] + extra / 4)
    assert cycles(0.0, 512) == cycles(1.0, 512)


def test_a_state_keeps_its_own_evaluations_and_resumes_from_them(tmp_path):
    """Over one store, a dirty run evaluates every routine again (no clean
    row is reused), a second dirty run takes them all from the store, and
    the JSON, results.json and report.md say the state."""
    src, db = tmp_path / "t.copy", tmp_path / "v.db"
    src.write_text(SCALAR)
    common = ("--db", db, "--top", "0", "--workload", "tcp", "--json")
    clean = _tune(tmp_path, src, *common)
    assert clean.exit_code == 0, clean.output
    assert json.loads(clean.stdout)["vector_state"] == "clean"
    dirty = _tune(tmp_path, src, *common, "--vector-state", "dirty", "--report", tmp_path / "rep")
    assert dirty.exit_code == 0, dirty.output
    assert "evaluated 2 routines (0 from the store" in dirty.stderr
    out = json.loads(dirty.stdout)
    assert out["vector_state"] == "dirty" and out["run"]["args"]["vector_state"] == "dirty"
    assert out["run"]["run"] != json.loads(clean.stdout)["run"]["run"]
    assert json.loads((tmp_path / "rep" / "results.json").read_text())["vector_state"] == "dirty"
    assert "vector state `dirty`" in (tmp_path / "rep" / "report.md").read_text()
    again = _tune(tmp_path, src, *common, "--vector-state", "1")
    assert "evaluated 0 routines (2 from the store" in again.stderr
    with sqlite3.connect(db) as con:
        keys = sorted(w for (w,) in con.execute("SELECT DISTINCT workload FROM evals"))
    assert keys == ["tcp", "tcp+vector:dirty"]
    shown = CliRunner().invoke(main, ["tune", "show", str(db), "--json"])
    assert json.loads(shown.stdout)["vector_state"] == "dirty"


def test_a_vector_sweep_ranks_by_the_state_it_is_given(tmp_path, monkeypatch):
    """A point that takes the vector path at the workload's size costs the
    section's difference more under dirty state; one whose threshold is
    above every size benched costs the same in both."""
    monkeypatch.setattr(ev, "GRID_SIZES", (64, 1024))       # a short grid: the test stays fast
    src = tmp_path / "v.copy"
    src.write_text(X60.read_text().replace("above 768", "above 128")
                   + "sweep s for x60vector { vector above [128, 2048] }\n")
    runs = {}
    for state in ("clean", "dirty"):
        r = _tune(tmp_path, src, "--db", tmp_path / "v.db", "--top", "0", "--workload", "tcp",
                  "--json", "--vector-state", state)
        assert r.exit_code == 0, r.output
        runs[state] = {row["point"]: row["expected_cycles"] for row in json.loads(r.stdout)["rows"]}
    low, high = "vector above 128", "vector above 2048"
    assert runs["dirty"][high] == runs["clean"][high]
    assert runs["dirty"][low] > runs["clean"][low] + 150
    assert min(runs["clean"], key=runs["clean"].get) == low
