"""The composed user copy of a vector kernel (verify.vector.vcompose): the
dispatch, the C glue's arithmetic, the vector routine and the scalar copy
together against the scalar contract."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from copygen.verify.vector import vcompose
from copygen.verify.checks.prove import RoutineReport
from copygen.verify.contract.verdict import verdict


@pytest.fixture(scope="module")
def kernels_glue():
    return vcompose.lemma(glue_int=True)


def test_the_kernels_glue_keeps_the_contract_below_2_31_only(kernels_glue):
    got = kernels_glue
    assert {c for c, o in got.items() if o.status == "proved"} == {"C1", "C4", "C5"}
    for c in ("C2", "C3", "C6", "B1"):
        assert got[c].status == vcompose.BELOW_INT, (c, got[c].detail)
        assert got[c].example["n"] >= 1 << 31
    # the counterexample a reader can follow: 4 GiB asked, a fault at its
    # first byte, the scalar copy's 2^32 becomes the int 0: "all copied"
    ex = got["C3"].example
    assert ex["n"] == 1 << 32 and ex["fault_offset"] == 0 and ex["returns"] == 0
    # the vector path hands the scalar copy a piece outside the buffers
    assert got["B1"].example["path"] == "vector, then scalar"


def test_a_glue_that_keeps_the_count_whole_is_proved_for_every_n():
    got = vcompose.lemma(glue_int=False)
    assert {o.status for o in got.values()} == {"proved"}


def test_without_the_scalar_hand_over_a_load_fault_loses_bytes():
    """The glue's hand-over is what makes a vector routine with plain loads
    (a whole chunk counted on a load fault) exact: return its count
    directly and C5 breaks for small n."""
    got = vcompose.lemma(glue_int=False, hand_over=False)
    assert got["C5"].status == "violated"
    ex = got["C5"].example
    assert ex["n"] < 1 << 31 and ex["fault_offset"] > 0 and ex["returns"] == ex["n"]


def _report(symbol, kind, clauses, **override):
    rep = RoutineReport(symbol, kind)
    rep.status = {c: "proved" for c in clauses} | override
    rep.detail = {c: "" for c in rep.status}
    return rep


VECTOR = ["C1", "C2", "C3", "C4", "C5", "C6", "V5", "S1", "S2", "A1", "B1", "B2", "B2s", "X1", "T1", "V0"]
SCALAR = ["C1", "C2", "C3", "C4", "C5", "C6", "S1", "S2", "A1", "B1", "B2", "B2s", "X1", "T1"]


def test_the_composed_report_rests_on_both_parts(kernels_glue):
    vec = _report("__asm_vector_usercopy", "vector", VECTOR)
    to = _report("__asm_copy_to_user", "to", SCALAR)
    (rep,) = vcompose.compose_reports([to, vec])
    assert rep.symbol == "__asm_copy_to_user+vector" and rep.kind == "to"
    assert rep.status["C1"] == rep.status["S1"] == "proved"
    assert rep.status["C3"] == vcompose.BELOW_INT and "n = 0x100000000" in rep.detail["C3"]
    assert verdict(rep) == "bounded"
    # a part's unknown clause leaves the whole unknown, a violated one breaks it
    weak = _report("__asm_vector_usercopy", "vector", VECTOR, C4="unknown", S1="violated")
    rep = vcompose.compose(weak, to)
    assert rep.status["C4"] == "unknown" and "__asm_vector_usercopy C4: unknown" in rep.detail["C4"]
    assert rep.status["S1"] == "violated" and verdict(rep) == "violated"
    # a part's violation of another clause the composed one rests on
    # leaves it unknown: the scalar copy's C4 says nothing of the whole's C3
    rep = vcompose.compose(vec, _report("s", "to", SCALAR, C4="violated"))
    assert rep.status["C4"] == "violated" and rep.status["C3"] == "unknown"
    # the scalar's C5 matters, the vector's (plain loads: V5 instead) does not
    assert vcompose.compose(_report("v", "vector", VECTOR, C5="unknown"), to).status["C5"] != "unknown"
    assert vcompose.compose(vec, _report("s", "to", SCALAR, C5="unknown")).status["C5"] == "unknown"
    # no vector routine, or only an entry that runs with SUM held: nothing composed
    assert vcompose.compose_reports([to]) == []
    assert vcompose.compose_reports([_report("x_sum_enabled", "to", SCALAR), vec]) == []


def test_copygen_verify_adds_the_composed_column(tmp_path, monkeypatch, kernels_glue):
    """A file with a vector routine and a scalar copy gets a column for the
    composition; the parts' proofs are stood in for (their own tests prove
    them) to keep this fast."""
    from click.testing import CliRunner
    from copygen import commands_verify
    from copygen.cli import main
    from tests.verify.test_vector_proof import SCALAR as PHASES

    def fake(elf, sym, kind, *rest):
        return _report(sym, kind, VECTOR if kind == "vector" else SCALAR)
    monkeypatch.setattr(commands_verify, "_prove", fake)
    src = tmp_path / "v.copy"
    src.write_text("target x60 {\n    xlen 64\n    misaligned slow\n}\n"
                   f"copy_user v for x60 {{\n{PHASES}    vector e8 m8 above 768 loads plain\n}}\n")
    r = CliRunner().invoke(main, ["verify", str(src), "--json", "--no-cache", "--workdir", str(tmp_path / "w")])
    # proved below 2^31 only, and no --bounded asked for that bound: unknown, exit 4
    # (tests/verify/test_verify_glue_bound.py)
    assert r.exit_code == 4, r.output
    doc = json.loads(r.stdout)
    reps = {x["symbol"]: x for x in doc["files"][0]["reports"]}
    assert {"__asm_copy_to_user+vector", "__asm_copy_from_user+vector"} <= set(reps)
    assert reps["__asm_copy_to_user+vector"]["verdict"] == "unknown" and doc["verdict"] == "unknown"
    assert reps["__asm_copy_to_user+vector"]["counterexamples"]["C3"]["n"] == 1 << 32
    r = CliRunner().invoke(main, ["verify", str(src), "--no-cache", "--workdir", str(tmp_path / "w")])
    assert r.exit_code == 4 and "copy_to_user+vector" in r.output
    assert "is proved for every n <= 2147483647 only" in r.output


def test_a_trees_two_files_given_together_are_composed(tmp_path, monkeypatch, kernels_glue):
    """uaccess_vector.S and uaccess.S are two files in a tree: verified in
    one run they get the composed column, after the vector file's routine."""
    from click.testing import CliRunner
    from copygen import commands_verify
    from copygen.cli import main
    from tests.conftest import ROOT

    def fake(elf, sym, kind, *rest):
        return _report(sym, kind, VECTOR if kind == "vector" else SCALAR)
    monkeypatch.setattr(commands_verify, "_prove", fake)
    style = ROOT / "tests" / "kernel_style"
    r = CliRunner().invoke(main, ["verify", str(style / "uaccess_2021_ok.S"), str(style / "vector_6_12.S"),
                                  "--json", "--no-cache", "--workdir", str(tmp_path / "w")])
    assert r.exit_code == 4, r.output          # the composed columns hold below 2^31 only
    files = {Path(f["file"]).name: [x["symbol"] for x in f["reports"]] for f in json.loads(r.stdout)["files"]}
    assert files["vector_6_12.S"] == ["__asm_vector_usercopy", "__asm_copy_to_user+vector",
                                      "__asm_copy_from_user+vector"]
    assert not any("+vector" in s for s in files["uaccess_2021_ok.S"])
