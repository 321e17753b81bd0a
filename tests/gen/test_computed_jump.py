"""A computed jump into a run of stores (Duff's device, as Linux's
arch/riscv/lib/memset.S enters its 32 stores), followed by the verifier:
tests/kernel_style/memset_duff.S is our own memset that stores the words
beyond whole 4-word blocks by jumping into its run of 4 stores.

`verify.symbolic.program.Program.run_targets` names where such a jump may land; the
explorer takes each target the path allows, and a value outside them is a
return (clause A1).  The proofs (the fixture, every clause; the jump the
verifier cannot place) take a minute or more each and are marked slow; a
wrong jump is refuted by the sample runs in seconds.
"""
from __future__ import annotations

import pytest

from copygen.gen.build import shim_elf
from copygen.verify.symbolic.program import Program
from copygen.verify.checks.prove import prove_routine
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "kernel_style" / "memset_duff.S"


def _elf(tmp_path, text: str | None = None):
    src = FIXTURE
    if text is not None:
        src = tmp_path / "memset_duff.S"
        src.write_text(text)
    return shim_elf(src, tmp_path / "build")


def _jump(prog: Program, entry: int) -> int:
    """The address of the routine's computed jump (the one `jr` not to ra)."""
    pc = entry
    while True:
        i = prog.fetch(pc)
        if i.name == "jalr" and i.rs1 != 1:
            return pc
        pc += i.length


def test_run_targets_are_the_run_up_to_its_branch(tmp_path):
    prog = Program.load(_elf(tmp_path))
    entry = prog.image.address_of("__memset")
    jr = _jump(prog, entry)
    targets = prog.run_targets(jr)
    names = [prog.fetch(t).name for t in targets]
    assert names == ["sd"] * 4 + ["addi", "bltu"]
    assert targets[0] > jr and all(b - a == 4 for a, b in zip(targets, targets[1:4]))
    assert prog.successors(jr) == list(targets)
    # the return is no computed jump into a run
    ret = next(pc for pc in sorted(prog.routine(entry).pcs)
               if prog.fetch(pc).name == "jalr" and prog.fetch(pc).rs1 == 1)
    assert prog.run_targets(ret) == () and prog.successors(ret) == []


@pytest.mark.slow
def test_duff_memset_is_proved(tmp_path):
    rep = prove_routine(str(_elf(tmp_path)), "__memset", "memset")
    assert rep.status and all(s == "proved" for s in rep.status.values()), rep.detail


def test_a_jump_too_far_back_is_refuted(tmp_path):
    """Half the code offset: the first pass starts stores below dst."""
    text = FIXTURE.read_text().replace("srli	a4, a4, 1		/* 4 bytes",
                                       "srli	a4, a4, 2		/* 4 bytes")
    assert text != FIXTURE.read_text()
    rep = prove_routine(str(_elf(tmp_path, text)), "__memset", "memset")
    assert rep.status["B1"] == "violated", rep.detail


@pytest.mark.slow
def test_a_jump_the_verifier_cannot_place_is_never_proved(tmp_path):
    """With the run moved out of reach of the jump (five unreachable nops
    between them), the `jr` is no jump into a run: the verifier takes it
    as a return, A1 cannot hold for it, and as the sample runs return
    normally the verdict is unknown, never proved."""
    marker = "\t.option norvc\t\t\t/* every store of the run 4 bytes long */\n"
    text = FIXTURE.read_text().replace(marker, marker + "\tnop\n" * 5)
    assert text != FIXTURE.read_text()
    elf = _elf(tmp_path, text)
    prog = Program.load(elf)
    assert prog.run_targets(_jump(prog, prog.image.address_of("__memset"))) == ()
    rep = prove_routine(str(elf), "__memset", "memset")
    assert rep.status["A1"] == "unknown", rep.detail
    assert rep.status["C1"] != "proved"
