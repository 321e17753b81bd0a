"""The vector routine's own contract (verify.vector.vprove) at a fixed VLEN: the
generated __asm_vector_usercopy proves every clause, and planted bugs are
reported under the clause they break."""
from __future__ import annotations

import pytest

from copygen.gen import toolchain
from copygen.gen.build import build_file
from copygen.gen.resources import shim_dir
from copygen.verify.contract.clauses import vector_clauses
from copygen.verify.vector.vprove import prove_vector

SCALAR = "    small below 71\n    words unroll 8\n    tail bytes\n    fault exact\n"


def _elf(d, line: str, edit=None):
    src = d / "v.copy"
    src.write_text("target x60 {\n    xlen 64\n    misaligned slow\n}\n"
                   f"copy_user v for x60 {{\n{SCALAR}    {line}\n}}\n")
    res = build_file(src, d)
    if edit is None:
        return res.elf
    asm = res.outdir / "uaccess_vector.S"
    text = asm.read_text()
    new = edit(text)
    assert new != text, "the planted bug was not planted"
    asm.write_text(new)
    obj = asm.with_suffix(".o")
    toolchain.assemble(asm, res.outdir / "include", obj, vector=True)
    elf = d / "bug.elf"
    toolchain.link([obj], shim_dir() / "copygen.ld", elf)
    return elf


# the fast loop proves this routine at VLEN 128 through `copygen verify`
# (test_copygen_verify_proves_the_vector_routine_and_names_a_failing_vlen)
@pytest.mark.slow
@pytest.mark.parametrize("vlen", [128, 256])
def test_generated_routine_proves_every_clause(tmp_path, vlen):
    rep = prove_vector(str(_elf(tmp_path, "vector e8 m8 above 768 loads plain")), vlen)
    assert list(rep.status) == vector_clauses(False)
    assert all(s == "proved" for s in rep.status.values()), rep.detail
    assert "V5" in rep.status and "store faults" in rep.detail["C6"]


def test_fault_only_first_loads_prove_the_exact_clauses(tmp_path):
    """LMUL 8, the kernel's: the load may trim vl to any of 128 lengths at
    VLEN 128, which the prover takes in closed form (tests/verify/test_vector_ff_vl.py)."""
    rep = prove_vector(str(_elf(tmp_path, "vector e8 m8 above 768 loads ff")), 128)
    assert "C6" in rep.status and "C5" in rep.status and "V5" not in rep.status
    assert all(s == "proved" for s in rep.status.values()), rep.detail


BUGS = {
    # the store fault exit forgets to subtract vstart: C6 (counts stored bytes as not copied)
    "no vstart subtracted": (lambda t: t.replace("\tsub\ta2, a2, t1", "\tnop"), {"C6", "C4"}),
    # both fault exits leave vstart as the fault set it
    "vstart not cleared": (lambda t: t.replace("\tcsrw\tCSR_VSTART, zero", "\tnop"), {"V0"}),
    # SUM set again instead of cleared on the way out
    "csrs on exit": (lambda t: t.replace("\tcsrc\tCSR_STATUS, t6", "\tcsrs\tCSR_STATUS, t6"),
                     {"S1"}),
    # the store fault exit forgets to add the chunk back: returns too little
    "chunk not added back": (lambda t: t.replace("\tadd\ta2, a2, t0\t", "\tnop\t"),
                             {"C6", "C2", "C4"}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BUGS))
def test_planted_bugs_are_reported_under_their_clause(tmp_path, name):
    edit, clauses = BUGS[name]
    rep = prove_vector(str(_elf(tmp_path, "vector e8 m8 above 768 loads plain", edit)), 128)
    failed = {c for c, s in rep.status.items() if s != "proved"}
    assert failed and failed <= clauses | {"C4", "C3", "C2", "C5", "V5"}, rep.detail
    assert failed & clauses, (name, failed)


def test_copygen_verify_proves_the_vector_routine_and_names_a_failing_vlen(tmp_path, monkeypatch):
    """`copygen verify --routine vector_usercopy` runs the vector proof at
    each VLEN (one here, to stay fast) and reports it like a scalar one; a
    clause that fails at one VLEN is reported with that VLEN."""
    import json
    from click.testing import CliRunner
    from copygen.cli import main
    from copygen.verify.vector import vprove
    from copygen.verify.checks.prove import RoutineReport
    from copygen.verify.contract.verdict import verdict
    monkeypatch.setattr(vprove, "VLENS", (128,))
    src = tmp_path / "v.copy"
    src.write_text("target x60 {\n    xlen 64\n    misaligned slow\n}\n"
                   f"copy_user v for x60 {{\n{SCALAR}    vector e8 m8 above 768 loads plain\n}}\n")
    r = CliRunner().invoke(main, ["verify", str(src), "--routine", "vector_usercopy", "--json",
                                  "--no-cache", "--workdir", str(tmp_path / "w")])
    assert r.exit_code == 0, r.output
    (rep,) = json.loads(r.stdout)["files"][0]["reports"]
    assert rep["symbol"] == "__asm_vector_usercopy" and rep["verdict"] == "proved"
    assert set(rep["status"]) == set(vector_clauses(False))
    assert "VLEN 128" in rep["detail"]["V0"]
    # one VLEN failing a clause makes the merged report name it
    ok = RoutineReport("__asm_vector_usercopy", "vector")
    ok.status, ok.detail = {"V0": "proved", "C1": "proved"}, {"V0": "at VLEN 128", "C1": "at VLEN 128"}
    bad = RoutineReport("__asm_vector_usercopy", "vector")
    bad.status, bad.detail = {"V0": "unknown", "C1": "proved"}, {"V0": "returns with vstart not 0",
                                                                  "C1": "at VLEN 256"}
    monkeypatch.setattr(vprove, "prove_vector", lambda elf, vlen, **kw: ok if vlen == 128 else bad)
    merged = vprove.prove_vectors("x.elf", (128, 256))
    assert merged.status == {"V0": "unknown", "C1": "proved"}
    assert merged.detail["V0"] == "VLEN 256: returns with vstart not 0"
    assert verdict(merged) == "unknown"
