"""`copygen verify` of the kernel's own uaccess_vector.S layouts (issue 34):
tests/kernel_style/vector_6_12.S (Linux 6.8-6.15: one entry point that sets
SUM) and vector_mainline.S (2025 on: a wrapper that sets SUM around a call
of __asm_vector_usercopy_sum_enabled).  Both are our own renditions of the
kernel's algorithm, fault exits included: every clause of the vector
contract is proved except V0, which is violated (a fault at element k > 0
returns with vstart = k), with a counterexample replayed in the emulator.

One routine at one VLEN takes about 6 s: one of them runs in the fast
loop, the rest are marked slow, and so is the 6.8 layout's loop at the four
VLENs through the command line (about 30 s).  Mainline's _sum_enabled loop
is that loop with SUM held by its caller: it is proved at VLEN 128 only.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.emu.elf import read_elf
from copygen.gen.build import shim_elf
from copygen.verify.contract.clauses import vector_clauses
from copygen.verify.vector.vprove import prove_vectors
from copygen.verify.vector.vreplay import VecCall, run, shows
from tests.conftest import ROOT

HERE = ROOT / "tests" / "kernel_style"
# fixture -> the entry points it defines
FIXTURES = {"vector_6_12.S": ("__asm_vector_usercopy",),
            "vector_mainline.S": ("__asm_vector_usercopy", "__asm_vector_usercopy_sum_enabled")}
PROVED = [c for c in vector_clauses(False) if c != "V0"]


def _check(rep, vlens) -> None:
    assert list(rep.status) == vector_clauses(False)
    assert {c for c, s in rep.status.items() if s == "proved"} == set(PROVED), rep.detail
    assert rep.status["V0"] == "violated", rep.detail["V0"]
    ex = rep.examples["V0"]
    assert ex["vlen"] == vlens[0] and ex["vstart_at_return"] != 0 and ex["error"] is None
    assert "replayed" in rep.detail["V0"] and "vstart=" in rep.detail["V0"]


# in the fast loop: mainline's _sum_enabled loop (SUM held); the 6.8
# layout's loop is proved at VLEN 128 there by tests/patch/test_patch_vector.py
# (the tree's routine before the patch), mainline's wrapper only calls it
QUICK = ("vector_mainline.S", "__asm_vector_usercopy_sum_enabled")


# the 6.8 layout's loop at VLEN 128 is test_verify_at_four_vlens' first VLEN
@pytest.mark.parametrize("name,symbol", [
    (f, s) if (f, s) == QUICK else pytest.param(f, s, marks=pytest.mark.slow)
    for f, ss in FIXTURES.items() for s in ss if f != "vector_6_12.S"])
def test_every_clause_but_v0_proved_at_vlen_128(tmp_path, name, symbol):
    elf = shim_elf(HERE / name, tmp_path)
    _check(prove_vectors(str(elf), (128,), symbol=symbol), (128,))


@pytest.mark.parametrize("name", list(FIXTURES))
def test_replay_shows_vstart_left_at_the_faulting_element(tmp_path, name):
    """A store fault 61 bytes into a 62-byte copy to user: 61 bytes stored,
    1 returned, vstart 61 at the return, under every entry point."""
    image = read_elf(shim_elf(HERE / name, tmp_path))
    for symbol in FIXTURES[name]:
        call = VecCall("to", 128, 62, 0x1000_0fc3, 0x7000_0000, 61,
                       sum_held=symbol.endswith("_sum_enabled"))
        out = run(image, symbol, call)
        assert (out.ret, out.vstart, out.sum_at_exit) == (1, 61, call.sum_held), symbol
        assert out.dst[:61] == out.src[:61]
        assert shows("V0", call, out) and not shows("C6", call, out) and not shows("S1", call, out)
    # no fault, no vstart left behind
    ok = VecCall("from", 256, 1000, 0x7000_0003, 0x1000_0005, None, False)
    out = run(image, "__asm_vector_usercopy", ok)
    assert (out.ret, out.vstart, out.dst) == (0, 0, out.src)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["vector_6_12.S"])
def test_verify_at_four_vlens(tmp_path, name):
    r = CliRunner().invoke(main, ["verify", str(HERE / name), "--json", "--no-cache",
                                  "--workdir", str(tmp_path)])
    assert r.exit_code == 3, r.output
    out = json.loads(r.stdout)
    reports = out["files"][0]["reports"]
    assert [x["symbol"] for x in reports] == list(FIXTURES[name])
    for x in reports:
        assert x["verdict"] == "violated"
        assert {c for c, s in x["status"].items() if s == "proved"} == set(PROVED)
        assert x["status"]["V0"] == "violated"
        assert all(f"VLEN {v}: " in x["detail"]["V0"] for v in (128, 256, 512, 1024))
        assert x["counterexamples"]["V0"]["vstart_at_return"] != 0
