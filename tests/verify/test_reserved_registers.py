"""Clause R1 (issue 63): under register rules a routine is proved never to
write a reserved register and to jump through no register but the allowed
one (or ra).  A body with a planted write of t6 is refused by proof: R1
violated, exit 3, with the replayed call that shows the write; a write
that puts the value back is refused too (the rule is about every write,
not the value at the return).  Without rules nothing changes: R1 is not
asked.  Proofs go through the shared proof cache (about 15 s each)."""
from __future__ import annotations

import json
import random
import re

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.emu.elf import read_elf
from copygen.emu.insn.decode import decode
from copygen.errors import CopygenError
from copygen.gen.build import build_file, shim_elf
from copygen.verify.contract.rules import RegisterRules, breaks, make_rules
from copygen.verify.invariants.concrete import run, verdicts
from copygen.verify.invariants.samples import scenario
from tests.conftest import SHARED_PROOFS
from tests.patch.test_patch import SMALL

# the patch tests' quick strategy, its clear alone, with t6 reserved
CLEAR = SMALL[:SMALL.index("copy_user")].replace(
    "misaligned slow\n", "misaligned slow\n    reserve t6\n") + SMALL[SMALL.index("clear_user"):]
MEMSET = """target u74 {
    xlen 64
    misaligned slow
JUMP
}

string jumplib for u74 {
    memcpy { small below 8; align dst; words unroll 2; tail bytes }
    memset { small below 15; align dst; words unroll 4; tail jump }
}
"""
T6 = make_rules(["t6"])


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The clear with t6 reserved: its uaccess.S and linked ELF."""
    out = tmp_path_factory.mktemp("clean")
    src = out / "clear.copy"
    src.write_text(CLEAR)
    res = build_file(src, out)
    return src, res.outdir / "uaccess.S", res.elf


def plant(uaccess, tmp_path, after: str, lines: list[str], name: str):
    """uaccess.S with `lines` put after the first line holding `after`,
    assembled with the shim: (source, ELF)."""
    text = uaccess.read_text()
    at = text.index("\n", text.index(after)) + 1
    src = tmp_path / f"{name}.S"
    src.write_text(text[:at] + "".join(f"\t{ln}\t\t/* planted */\n" for ln in lines) + text[at:])
    return src, shim_elf(src, tmp_path / name)


def verify(path, *extra):
    r = CliRunner().invoke(main, ["verify", str(path), "--routine", "clear_user", "--json",
                                  "--proof-cache", str(SHARED_PROOFS),
                                  "--workdir", str(path.parent / "verify-work"), *extra])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r, json.loads(r.stdout)


def report(out):
    (f,) = out["files"]
    (rep,) = f["reports"]
    return rep


# --- fast: the rules, one instruction, one run -------------------------------

def test_rules_take_abi_names_and_x_numbers():
    r = make_rules(["x31", "t5", "t6"], "x7")
    assert (r.reserved, r.jump) == (("t5", "t6"), "t2")
    assert r.reserved_numbers == (30, 31) and r.jump_number == 7
    assert not RegisterRules() and r.key() != make_rules(["t6"]).key()


@pytest.mark.parametrize("reserve, jump, words", [
    (["a0"], None, "a0 cannot be reserved"), (["ra"], None, "ra cannot be reserved"),
    (["t9"], None, "`t9` is not a register"), (["t2"], "t2", "cannot be limited to t2"),
    ([], "sp", "cannot be limited to sp")])
def test_bad_rules_are_refused(reserve, jump, words):
    with pytest.raises(CopygenError, match=re.escape(words)):
        make_rules(reserve, jump)


@pytest.mark.parametrize("raw, rules, broken", [
    (0x00000F93, T6, "writes t6"),                    # addi t6, zero, 0
    (0x01F53023, T6, None),                           # sd t6, 0(a0): reads it
    (0x000F8F9B, T6, "writes t6"),                    # addiw t6, t6, 0: the same value
    (0x00078067, make_rules([], "t2"), "through a5"),  # jr a5
    (0x00038067, make_rules([], "t2"), None),          # jr t2
    (0x00008067, make_rules([], "t2"), None),          # ret
    (0x000080E7, make_rules([], "t2"), None),          # jalr ra: a call
])
def test_breaks_reads_the_decoded_instruction(raw, rules, broken):
    why = breaks(decode(raw), rules)
    assert (why is None) if broken is None else (broken in why), why


def test_a_run_records_a_write_of_a_reserved_register(clean, tmp_path):
    _, uaccess, elf = clean
    _, bad = plant(uaccess, tmp_path, "csrs\tCSR_STATUS", ["li\tt6, 0"], "mutant")
    sc = scenario("clear", 40, 3, 0, random.Random(5))
    for image, ok in ((read_elf(elf), True), (read_elf(bad), False)):
        out = run(image, "__clear_user", sc, rules=T6)
        assert verdicts(sc, out)["R1"] is ok, out.rule_breaks
        assert "R1" not in verdicts(sc, run(image, "__clear_user", sc))


def test_verify_refuses_a_register_the_abi_needs(clean):
    r, out = verify(clean[0], "--reserve", "a0")
    assert r.exit_code == 2 and "a0 cannot be reserved" in out["error"]["message"]


# --- proofs --------------------------------------------------------------------

@pytest.mark.slow
def test_a_planted_t6_write_is_refused_by_proof(clean, tmp_path):
    """The generated clear with `li t6, 0` after its csrs: R1 violated, and
    the verdict with it (exit 3); the contract's other clauses still hold."""
    src, _ = plant(clean[1], tmp_path, "csrs\tCSR_STATUS", ["li\tt6, 0"], "planted")
    r, out = verify(src, "--reserve", "t6")
    assert r.exit_code == 3, r.output
    rep = report(out)
    assert rep["status"]["R1"] == "violated" and rep["verdict"] == "violated"
    assert "writes t6" in rep["detail"]["R1"]
    assert rep["counterexamples"]["R1"]["rule_breaks"]
    assert all(st == "proved" for c, st in rep["status"].items() if c != "R1")
    assert out["register_rules"][str(src)] == {"reserve": ["t6"], "jump_register": None}


def test_the_clean_body_is_proved_under_its_own_rules_and_unchanged_without(clean):
    """`copygen verify x.copy` takes the strategy's `reserve t6`; without
    rules R1 is not asked at all."""
    r, out = verify(clean[0])
    assert r.exit_code == 0, r.output
    rep = report(out)
    assert rep["status"]["R1"] == "proved" and "no path writes t6" in rep["detail"]["R1"]
    r, out = verify(clean[2])
    assert r.exit_code == 0 and "R1" not in report(out)["status"]


def test_a_write_that_restores_the_value_is_refused_too(clean, tmp_path):
    """In the word loop, t6 moved and moved back: the same value at every
    return, but an interrupt in between would see it changed."""
    src, _ = plant(clean[1], tmp_path, "fixup REG_S, zero, SZREG(a0)",
                   ["addi\tt6, t6, 1", "addi\tt6, t6, -1"], "restored")
    assert "t6, t6, 1" in src.read_text()
    r, out = verify(src, "--reserve", "x31")
    assert r.exit_code == 3, r.output
    assert report(out)["status"]["R1"] == "violated"


@pytest.mark.slow
@pytest.mark.parametrize("jump, exit_code, status", [("", 3, "violated"), ("    jump t2", 0, "proved")])
def test_memset_jumps_only_through_the_allowed_register(tmp_path, jump, exit_code, status):
    src = tmp_path / "mset.copy"
    src.write_text(MEMSET.replace("JUMP", jump))
    r = CliRunner().invoke(main, ["verify", str(src), "--routine", "memset", "--jump-register",
                                  "t2", "--json", "--proof-cache", str(SHARED_PROOFS),
                                  "--workdir", str(tmp_path / "w")])
    assert r.exit_code == exit_code, r.output
    rep = report(json.loads(r.stdout))
    assert rep["status"]["R1"] == status
    if status == "violated":
        assert "computed jump through a5, not t2" in rep["detail"]["R1"]
