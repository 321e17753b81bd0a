"""The vector clear's own contract (verify.vector.vprove in the clear world): the
generated __asm_vector_clear_user proves every clause at each VLEN, and
planted bugs (a fault exit that forgets vstart, ...) are refuted under the
clause they break, with the counterexample replayed in the emulator."""
from __future__ import annotations

import pytest

from copygen.gen import toolchain
from copygen.gen.build import build_file
from copygen.gen.resources import shim_dir
from copygen.verify.contract.clauses import vector_clear_clauses
from copygen.verify.vector.vprove import CLEAR_SYMBOL, prove_vector

CLEAR = "    small below 16\n    align dst\n    words unroll 1\n    tail bytes\n    fault exact\n"


def _elf(d, line: str = "vector e8 m8 above 256", edit=None):
    src = d / "c.copy"
    src.write_text("target x60 {\n    xlen 64\n    misaligned slow\n}\n"
                   f"clear_user c for x60 {{\n{CLEAR}    {line}\n}}\n")
    res = build_file(src, d)
    if edit is None:
        return res.elf
    asm = res.outdir / "uaccess_vector.S"
    text = asm.read_text()
    new = edit(text)
    assert new != text, "the planted bug was not planted"
    asm.write_text(new)
    objs = [res.outdir / "uaccess.o", asm.with_suffix(".o")]
    toolchain.assemble(asm, res.outdir / "include", objs[1], vector=True)
    elf = d / "bug.elf"
    toolchain.link(objs, shim_dir() / "copygen.ld", elf)
    return elf


@pytest.mark.parametrize("line", ["vector e8 m8 above 256", "vector e8 m1 above 256"])
def test_generated_clear_proves_every_clause_at_vlen_128(tmp_path, line):
    rep = prove_vector(str(_elf(tmp_path, line)), 128, symbol=CLEAR_SYMBOL)
    assert rep.kind == "vector_clear" and list(rep.status) == vector_clear_clauses()
    assert all(s == "proved" for s in rep.status.values()), rep.detail


BUGS = {
    # the fault exit leaves vstart as the fault set it
    "vstart not cleared": (lambda t: t.replace("\tcsrw\tCSR_VSTART, zero", "\tnop"), {"V0"}),
    # the fault exit forgets to subtract vstart: stored bytes counted as not cleared
    "no vstart subtracted": (lambda t: t.replace("\tsub\ta1, a1, t1", "\tnop"), {"C4", "C6"}),
    # SUM set again instead of cleared on the way out
    "csrs on exit": (lambda t: t.replace("\tcsrc\tCSR_STATUS, t6", "\tcsrs\tCSR_STATUS, t6"), {"S1"}),
    # n lowered before the store: a fault then returns a chunk too little
    "n lowered first": (lambda t: t.replace(
        "\tfixup vse8.v, v0, (a0), .Lvclr_store_fault\n\tsub\ta1, a1, t0\n",
        "\tsub\ta1, a1, t0\n\tfixup vse8.v, v0, (a0), .Lvclr_store_fault\n"), {"C2", "C3", "C6"}),
}


@pytest.mark.parametrize("name", list(BUGS))
def test_planted_bugs_are_refuted_under_their_clause(tmp_path, name):
    edit, clauses = BUGS[name]
    rep = prove_vector(str(_elf(tmp_path, edit=edit)), 128, symbol=CLEAR_SYMBOL)
    failed = {c for c, s in rep.status.items() if s != "proved"}
    assert failed & clauses and failed <= clauses | {"C2", "C3", "C4", "C5", "C6"}, (name, rep.detail)
    shown = [c for c in failed & clauses if rep.status[c] == "violated"]
    assert shown, f"{name}: no replayed counterexample ({rep.detail})"
    assert "replayed: VLEN 128, clear_user" in rep.detail[shown[0]]


# --- composed: dispatch + glue + vector clear + scalar clear -------------------------------

from copygen.verify.vector import vcompose  # noqa: E402
from copygen.verify.contract.clauses import BY_KIND  # noqa: E402
from copygen.verify.checks.prove import RoutineReport  # noqa: E402
from copygen.verify.contract.verdict import verdict  # noqa: E402


def test_the_clear_glue_is_proved_for_every_n_without_a_hand_over():
    """The vector clear's count is exact, so the glue may return it as it
    is; with the copy's hand-over it is proved too, and with the kernel's
    int counts it holds below 2^31 only."""
    assert {o.status for o in vcompose.lemma(False, False, vector_exact=True).values()} == {"proved"}
    assert {o.status for o in vcompose.lemma(False, True, vector_exact=True).values()} == {"proved"}
    as_int = vcompose.lemma(True, False, vector_exact=True)
    assert as_int["C2"].status == vcompose.BELOW_INT and as_int["C5"].status == "proved"
    # a vector part that counted whole chunks would need the hand-over
    assert vcompose.lemma(False, False, vector_exact=False)["C5"].status == "violated"


def _report(symbol, kind, clauses, **override):
    rep = RoutineReport(symbol, kind)
    rep.status = {c: "proved" for c in clauses} | override
    rep.detail = {c: "" for c in rep.status}
    return rep


def test_the_composed_clear_rests_on_both_parts():
    vec = _report(CLEAR_SYMBOL, "vector_clear", vector_clear_clauses())
    clear = _report("__clear_user", "clear", BY_KIND["clear"])
    (rep,) = vcompose.compose_reports([clear, vec])
    assert rep.symbol == "__clear_user+vector" and rep.kind == "clear"
    assert list(rep.status) == BY_KIND["clear"] and set(rep.status.values()) == {"proved"}
    assert verdict(rep) == "proved"
    # the vector clear's C5 is one the whole rests on (no hand-over)
    weak = _report(CLEAR_SYMBOL, "vector_clear", vector_clear_clauses(), C5="unknown")
    assert vcompose.compose(weak, clear).status["C5"] == "unknown"
    bad = _report(CLEAR_SYMBOL, "vector_clear", vector_clear_clauses(), C4="violated")
    assert vcompose.compose(bad, clear).status["C4"] == "violated"


@pytest.mark.slow
def test_copygen_verify_proves_the_clear_its_vector_path_and_their_composition(tmp_path):
    """The generated clear through the command line: the scalar clear, the
    vector clear at the four VLENs, and their composition."""
    import json

    from click.testing import CliRunner

    from copygen.cli import main
    src = tmp_path / "c.copy"
    src.write_text("target x60 {\n    xlen 64\n    misaligned slow\n}\n"
                   f"clear_user c for x60 {{\n{CLEAR}    vector e8 m8 above 256\n}}\n")
    r = CliRunner().invoke(main, ["verify", str(src), "--json", "--no-cache", "--workdir", str(tmp_path / "w")])
    assert r.exit_code == 0, r.output
    reps = {x["symbol"]: x for x in json.loads(r.stdout)["files"][0]["reports"]}
    assert {s: x["verdict"] for s, x in reps.items()} == {
        "__clear_user": "proved", CLEAR_SYMBOL: "proved", "__clear_user+vector": "proved"}
    # the vector clear: every clause of its own contract, at every VLEN
    vec = reps[CLEAR_SYMBOL]
    assert list(vec["status"]) == vector_clear_clauses()
    assert set(vec["status"].values()) == {"proved"}, vec["detail"]
    assert "VLEN 128, 256, 512, 1024" in vec["detail"]["C6"]
