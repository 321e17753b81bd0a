"""Proofs of the e16..e64 vector routines (verify.vector.vprove with wide
elements): the copy and the clear prove every clause of the e8 routines'
contracts, and planted bugs in the wide fault exit are refuted with a
counterexample replayed in the emulator."""
from __future__ import annotations

import re

import pytest

from copygen.gen import toolchain
from copygen.gen.build import build_file
from copygen.gen.resources import shim_dir
from copygen.verify.contract.clauses import vector_clauses, vector_clear_clauses
from copygen.verify.vector.vprove import CLEAR_SYMBOL, VLENS, prove_vector, prove_vectors

FAST = "target x60f {\n    xlen 64\n    misaligned fast\n    profile x60\n}\n"
COPY = "    small below 71\n    words unroll 8\n    tail bytes\n    fault exact\n"
CLEAR = "    small below 16\n    align dst\n    words unroll 1\n    tail bytes\n    fault exact\n"


def _elf(d, copy_line: str, clear_line: str = "vector e64 m8 above 256", edit=None):
    src = d / "w.copy"
    src.write_text(f"{FAST}copy_user w for x60f {{\n{COPY}    {copy_line}\n}}\n"
                   f"clear_user wc for x60f {{\n{CLEAR}    {clear_line}\n}}\n")
    res = build_file(src, d)
    if edit is None:
        return str(res.elf)
    asm = res.outdir / "uaccess_vector.S"
    text = asm.read_text()
    new = edit(text)
    assert new != text, "the planted bug was not planted"
    asm.write_text(new)
    toolchain.assemble(asm, res.outdir / "include", d / "v.o", vector=True)
    toolchain.link([d / "v.o"], shim_dir() / "copygen.ld", d / "bug.elf")
    return str(d / "bug.elf")


def _all_proved(rep):
    assert all(s == "proved" for s in rep.status.values()), \
        {c: rep.detail[c] for c, s in rep.status.items() if s != "proved"}


@pytest.mark.slow
def test_the_e64_copy_proves_every_clause_at_vlen_128(tmp_path):
    rep = prove_vector(_elf(tmp_path, "vector e64 m8 above 768 loads plain"), 128)
    assert list(rep.status) == vector_clauses(False)
    _all_proved(rep)


@pytest.mark.slow        # the e8 clears prove at VLEN 128 in the fast loop
def test_the_e64_clear_proves_every_clause_at_vlen_128(tmp_path):
    rep = prove_vector(_elf(tmp_path, "vector e64 m8 above 768 loads plain"), 128,
                       symbol=CLEAR_SYMBOL)
    assert list(rep.status) == vector_clear_clauses()
    _all_proved(rep)


# each width once; ff loads at e64, whose straddling element is the widest
# (tests/gen/test_vector_wide.py runs ff loads at e32 and e64 in the emulator)
@pytest.mark.slow
@pytest.mark.parametrize("line", ["vector e16 m2 above 768 loads plain",
                                  "vector e32 m8 above 768 loads plain",
                                  "vector e64 m8 above 768 loads ff"])
def test_other_widths_and_ff_loads_prove_every_clause_at_vlen_128(tmp_path, line):
    rep = prove_vector(_elf(tmp_path, line, line.split(" loads")[0].replace(" 768", " 256")), 128)
    assert ("V5" in rep.status) == line.endswith("plain")
    _all_proved(rep)


@pytest.mark.slow
def test_e64_copy_and_clear_prove_every_clause_at_the_widest_vlen(tmp_path):
    """VLEN 1024, where one m8 group of e64 elements (1 KiB) holds a whole
    copy just above the threshold; the two tests above prove VLEN 128, where
    it takes several.  VLEN 256 and 512 chunk as 128 does (several groups a
    copy): tests/verify/test_vector_kernel.py proves the e8 loop at all four
    through the command line."""
    assert max(VLENS) == 1024
    elf = _elf(tmp_path, "vector e64 m8 above 768 loads plain")
    _all_proved(prove_vectors(elf, (1024,)))
    _all_proved(prove_vectors(elf, (1024,), symbol=CLEAR_SYMBOL))


def _unscaled(text: str) -> str:
    """The e8 routine's store fault exit kept for wide elements: vstart
    counted as bytes, not elements, and no restart in bytes."""
    return text.replace("(a0), .Lvec_wide_store_fault", "(a0), .Lvec_byte_store_fault")


def _no_restart(text: str) -> str:
    """vstart scaled to bytes, but the chunk's bytes before the fault not
    stored again: a straddling element's accessible bytes count as not copied."""
    return re.sub(r"\tvsetvli\tzero, t0, e8, m8, ta, ma[^\n]*\n\tcsrw\tCSR_VSTART, t1[^\n]*\n"
                  r"\tfixup vse8.v, v0, \(a0\), .Lvec_byte_store_fault\n\tj\t.Lvec_done[^\n]*\n",
                  "\tadd\ta2, a2, t0\n\tsub\ta2, a2, t1\n\tcsrw\tCSR_VSTART, zero\n\tj\t.Lvec_done\n",
                  text)


@pytest.mark.slow
@pytest.mark.parametrize("name,edit,broken", [
    ("vstart not scaled", _unscaled, {"C4", "C6"}),
    ("no restart in bytes", _no_restart, {"C5", "C6"})])
def test_planted_bugs_in_the_wide_fault_exit_are_refuted_and_replayed(tmp_path, name, edit, broken):
    rep = prove_vector(_elf(tmp_path, "vector e64 m8 above 768 loads plain", edit=edit), 128)
    bad = {c for c, s in rep.status.items() if s == "violated"}
    assert broken <= bad, (name, rep.status)
    for c in broken:
        ex = rep.examples[c]
        assert ex["world"] == "to" and ex["fault_offset"] is not None and "replayed" in rep.detail[c]
    assert {c for c, s in rep.status.items() if s != "proved"} <= broken | {"C3", "C4", "C5", "C6"}
