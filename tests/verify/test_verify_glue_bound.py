"""`copygen verify` of a vector strategy: the composed copy (dispatch, C
glue, vector loop, scalar copy) is proved for n < 2^31 only, because the
kernel's glue returns the routines' counts as an int.  The glue takes n as
a size_t and __copy_{to,from}_user pass larger sizes unchecked, so that is
not a proof for every n the kernel can pass: the verdict is unknown (exit
4) unless --bounded N asks for a bound the proof covers.

The component reports are made here, every clause proved (the proofs
themselves are tests/verify/test_vector_*'s); the composition is
verify.vector.vcompose's own, and the command is the real one.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from copygen import commands_verify
from copygen.cli import main
from copygen.verify.checks.prove import RoutineReport
from copygen.verify.contract.junit import junit_xml
from copygen.verify.contract.verdict import verdict
from copygen.verify.vector import vcompose
from tests.conftest import ROOT

SOURCE = str(ROOT / "examples" / "x60vector.copy")
VECTOR = ["C1", "C2", "C3", "C4", "C5", "C6", "V5", "S1", "S2", "A1", "B1", "B2", "B2s", "X1",
          "T1", "V0"]
SCALAR = ["C1", "C2", "C3", "C4", "C5", "C6", "S1", "S2", "A1", "B1", "B2", "B2s", "X1", "T1"]


def _report(symbol: str, kind: str, clauses: list[str]) -> RoutineReport:
    rep = RoutineReport(symbol, kind)
    rep.status = dict.fromkeys(clauses, "proved")
    rep.detail = dict.fromkeys(clauses, "")
    return rep


@pytest.fixture
def proved_parts(monkeypatch, tmp_path):
    """`copygen verify` whose proofs give both parts every clause."""
    elf = tmp_path / "x60vector.elf"
    todo = [("__asm_vector_usercopy", "vector"), ("__asm_copy_to_user", "to")]
    monkeypatch.setattr(commands_verify, "_plan", lambda files, only, workdir: [(SOURCE, elf, todo)])
    monkeypatch.setattr(commands_verify, "_run", lambda plan, *a, **k: {SOURCE: [
        _report("__asm_vector_usercopy", "vector", VECTOR), _report("__asm_copy_to_user", "to", SCALAR)]})


def _verify(tmp_path, *args):
    return CliRunner().invoke(main, ["verify", SOURCE, "--workdir", str(tmp_path / "w"),
                                     "--proof-cache", str(tmp_path / "proofs"), *args])


def test_without_bounded_the_composed_copy_is_unknown_and_says_why(proved_parts, tmp_path):
    r = _verify(tmp_path)
    assert r.exit_code == 4, r.output
    first = " ".join(r.stdout.split("copygen verify")[0].split())
    assert first.startswith("unknown: __asm_copy_to_user+vector is proved for every n <= "
                            "2147483647 only, not for every n")
    assert "enter_vector_usercopy" in first and "size_t" in first and "int" in first
    assert "--bounded N with N <= 2147483647 accepts that bound" in first
    assert "n <= 2147483647 only" in r.stdout           # the clause cells say the bound
    r = _verify(tmp_path, "--json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 4 and doc["verdict"] == "unknown" and not doc["ok"]
    composed = next(x for x in doc["files"][0]["reports"] if x["symbol"].endswith("+vector"))
    assert composed["verdict"] == "unknown"
    assert composed["status"]["C3"] == vcompose.BELOW_INT        # the proof's own finding is kept


def test_a_bound_the_proof_covers_is_accepted_and_one_it_does_not_is_not(proved_parts, tmp_path):
    r = _verify(tmp_path, "--bounded", "64")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("bounded: every required clause proved or holding for every n <= 64")
    r = _verify(tmp_path, "--bounded", str(1 << 31), "--json")
    assert r.exit_code == 4 and json.loads(r.stdout)["verdict"] == "unknown"


def test_the_verdict_and_junit_count_a_bound_only_when_asked_for_and_covered():
    vec, to = _report("v", "vector", VECTOR), _report("__asm_copy_to_user", "to", SCALAR)
    (rep,) = vcompose.compose_reports([vec, to])
    assert rep.status["C3"] == vcompose.BELOW_INT
    assert verdict(rep) == "bounded"                 # a caller that does not say: as before
    assert verdict(rep, asked=0) == "unknown"        # no --bounded
    assert verdict(rep, asked=100) == "bounded"
    assert verdict(rep, asked=1 << 31) == "unknown"  # asked beyond what the proof covers
    # --bounded's own runs: the bound asked is the bound held
    to.status["C5"] = "holds for n <= 100"
    assert verdict(to, asked=100) == "bounded" and verdict(to, asked=0) == "unknown"
    xml = junit_xml({"f": [rep]}, asked=0)
    assert 'message="C3 holds for n &lt;= 2147483647" type="unknown"' in xml
    assert 'type="unknown"' not in junit_xml({"f": [rep]}, asked=64)
