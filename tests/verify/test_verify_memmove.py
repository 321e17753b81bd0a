"""memmove under the verifier: proved for every n in the world where the
buffers may overlap, in both directions (a load must never read a source
byte the routine already overwrote); a wrong direction is violated with a
replayed counterexample.  The bounded mode runs every overlap for every n
up to a bound, and covers whatever clause the proof leaves unknown; the
runs memmove gets without it find counterexamples, never a verdict."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from click.testing import CliRunner

from copygen import commands_verify
from copygen.cli import main
from copygen.kernel import tree
from copygen.verify.counterexamples.bounded import check, scenarios
from copygen.verify.contract.clauses import BY_KIND
from copygen.verify.contract.verdict import verdict
from copygen.verify.checks.prove import prove_routine

ROOT = Path(__file__).resolve().parents[2]

# Copies forwards whatever the overlap: wrong when dst starts inside src.
FORWARD_ONLY = """\
#include <linux/linkage.h>
#include <asm/asm.h>

SYM_FUNC_START(memmove)
	mv	t0, a0
	beqz	a2, 2f
1:	lb	t1, 0(a1)
	sb	t1, 0(t0)
	addi	a1, a1, 1
	addi	t0, t0, 1
	addi	a2, a2, -1
	bnez	a2, 1b
2:	ret
SYM_FUNC_END(memmove)
"""

# Right in both directions, a byte at a time.
BYTES = """\
#include <linux/linkage.h>
#include <asm/asm.h>

SYM_FUNC_START(memmove)
	mv	t0, a0
	beqz	a2, 3f
	sub	t3, a0, a1
	bltu	t3, a2, 2f
1:	lb	t1, 0(a1)
	sb	t1, 0(t0)
	addi	a1, a1, 1
	addi	t0, t0, 1
	addi	a2, a2, -1
	bnez	a2, 1b
	j	3f
2:	add	t0, a0, a2
	add	a1, a1, a2
4:	addi	a1, a1, -1
	addi	t0, t0, -1
	lb	t1, 0(a1)
	sb	t1, 0(t0)
	bne	t0, a0, 4b
3:	ret
SYM_FUNC_END(memmove)
"""

# Copies backwards whatever the overlap: wrong when src starts inside dst.
BACKWARD_ONLY = """\
#include <linux/linkage.h>
#include <asm/asm.h>

SYM_FUNC_START(memmove)
	beqz	a2, 2f
	add	t0, a0, a2
	add	a1, a1, a2
1:	addi	a1, a1, -1
	addi	t0, t0, -1
	lb	t1, 0(a1)
	sb	t1, 0(t0)
	bne	t0, a0, 1b
2:	ret
SYM_FUNC_END(memmove)
"""


@pytest.fixture(scope="module")
def string2021(tmp_path_factory):
    from copygen.gen.build import build_file
    return str(build_file(ROOT / "examples" / "string2021.copy",
                          tmp_path_factory.mktemp("s21")).elf)


def _linked(tmp: Path, text: str, name: str) -> str:
    from copygen.inputs import linked_elf
    src = tmp / f"{name}.S"
    src.write_text(text)
    return str(linked_elf(str(src), tmp / name))


def _addresses(text: str) -> tuple[int, int]:
    """(src, dst) of a counterexample's text (verify.counterexamples.replay.describe)."""
    return tuple(int(re.search(rf"\b{k}=(0x[0-9a-f]+)", text)[1], 16) for k in ("src", "dst"))


# BYTES, but a dst just past the source (dst == src + n) copied backwards too.
ADJACENT_BACKWARD = BYTES.replace("\tbltu\tt3, a2, 2f\n", "\tbgeu\ta2, t3, 2f\n")

# As Linux's memmove.S is built: dst == src returns at once, and one byte
# loop up to dst's alignment is a subroutine (`jal t0` ... `jr t0`) that
# both forward copies call, the co-aligned word copy and the byte copy.
SHARED_ALIGN = """\
#include <linux/linkage.h>
#include <asm/asm.h>

SYM_FUNC_START(memmove)
	beq	a0, a1, 9f
	beqz	a2, 9f
	mv	t3, a0
	add	t4, a0, a2
	bltu	a1, a0, 7f
	andi	t0, a2, -16
	beqz	t0, 3f
	addi	t5, a0, 7
	andi	t5, t5, -8
	andi	t6, t4, -8
	xor	t0, a0, a1
	andi	t0, t0, 7
	beqz	t0, 1f
	jal	t0, 5f
	j	3f
1:	jal	t0, 5f
2:	ld	t1, 0(a1)
	addi	a1, a1, 8
	addi	t3, t3, 8
	sd	t1, -8(t3)
	bne	t3, t6, 2b
3:	beq	t3, t4, 9f
4:	lb	t1, 0(a1)
	addi	a1, a1, 1
	addi	t3, t3, 1
	sb	t1, -1(t3)
	bne	t3, t4, 4b
	ret
5:	beq	t3, t5, 6f
55:	lb	t1, 0(a1)
	addi	a1, a1, 1
	addi	t3, t3, 1
	sb	t1, -1(t3)
	bne	t3, t5, 55b
6:	jr	t0
7:	add	a1, a1, a2
8:	addi	a1, a1, -1
	addi	t4, t4, -1
	lb	t1, 0(a1)
	sb	t1, 0(t4)
	bne	t4, t3, 8b
9:	ret
SYM_FUNC_END(memmove)
"""

# SHARED_ALIGN with the byte copy's call of the subroutine copying every
# byte: its loop then runs up to n times, too often to unroll
SHARED_UNBOUNDED = SHARED_ALIGN.replace("\tbeqz\tt0, 1f\n", "\tbeqz\tt0, 1f\n\tmv\tt5, t4\n")

# The same, but peeking at the byte just past the source first.
PEEKS_PAST_SRC = BYTES.replace("SYM_FUNC_START(memmove)\n",
                               "SYM_FUNC_START(memmove)\n\tadd\tt2, a1, a2\n\tlb\tt2, 0(t2)\n")


def _forward_only(tmp: Path) -> str:
    return _linked(tmp, FORWARD_ONLY, "memmove_forward")


def test_overlap_scenarios_cover_both_directions_and_every_alignment():
    import random
    scs = list(scenarios("memmove", 12, random.Random(1)))
    n12 = [sc for sc in scs if sc.N == 12]
    deltas = {sc.S - sc.D for sc in n12}
    assert deltas == set(range(-20, 21))            # every overlap, and just past it
    assert {(sc.D % 8, sc.S % 8) for sc in n12} == {(d, s) for d in range(8) for s in range(8)}


@pytest.mark.slow           # every overlap of every n up to 32, run one by one
def test_generated_memmove_holds_for_every_overlap(string2021):
    assert check(string2021, "memmove", "memmove", 32) == {}


def test_forward_only_memmove_is_caught(tmp_path):
    bad = check(_forward_only(tmp_path), "memmove", "memmove", 8)
    assert set(bad) == {"C1"}, bad
    assert "bytes differ from the expected" in bad["C1"]
    src, dst = _addresses(bad["C1"])
    assert src < dst < src + 8              # dst starts inside src


def test_backward_only_memmove_is_caught(tmp_path):
    """The mirror bug: the one direction the forward-only test cannot see."""
    bad = check(_linked(tmp_path, BACKWARD_ONLY, "memmove_backward"), "memmove", "memmove", 8)
    assert set(bad) == {"C1"}, bad
    src, dst = _addresses(bad["C1"])
    assert dst < src < dst + 8              # src starts inside dst


def test_a_load_past_the_source_is_caught(tmp_path):
    """memmove's runs record their loads: a byte read just past src is B2
    (outside the aligned words covering src when src + n is aligned, or
    when n is 0), while the bytes copied are right."""
    bad = check(_linked(tmp_path, PEEKS_PAST_SRC, "memmove_peek"), "memmove", "memmove", 8)
    assert set(bad) == {"B2"}, bad
    assert bad["B2"].startswith("n=0,"), bad["B2"]


@pytest.mark.slow
def test_generated_memmove_is_proved_for_every_n(string2021):
    rep = prove_routine(string2021, "memmove", "memmove", memmove_bound=0)
    assert rep.status == dict.fromkeys(BY_KIND["memmove"], "proved"), rep.detail


@pytest.mark.slow
def test_forward_only_memmove_is_violated_and_replayed(tmp_path):
    rep = prove_routine(_forward_only(tmp_path), "memmove", "memmove", memmove_bound=0,
                        all_clauses=True)
    assert rep.status["C1"] == "violated"
    assert "already overwrote" in rep.detail["C1"]
    assert "differ from the expected" in rep.detail["C1"]     # the emulator's run
    src, dst = _addresses(rep.detail["C1"])
    n = int(rep.detail["C1"].split("n=")[1].split(",")[0])
    assert src < dst < src + n              # dst starts inside src
    assert {c: s for c, s in rep.status.items() if c != "C1"} == \
        dict.fromkeys(["A1", "B1", "B2", "T1"], "proved")


def test_backward_only_memmove_is_violated_and_replayed(tmp_path):
    rep = prove_routine(_linked(tmp_path, BACKWARD_ONLY, "memmove_backward"), "memmove",
                        "memmove", memmove_bound=0)
    assert rep.status["C1"] == "violated"
    assert "differ from the expected" in rep.detail["C1"]
    src, dst = _addresses(rep.detail["C1"])
    n = int(rep.detail["C1"].split("n=")[1].split(",")[0])
    assert dst < src < dst + n              # src starts inside dst


def _without_invariants(monkeypatch):
    monkeypatch.setattr("copygen.verify.checks.prove.guess", lambda snaps, kind, roles=None: [])


def test_what_the_proof_leaves_unknown_is_run_up_to_the_bound_and_stays_unknown(
        tmp_path, monkeypatch):
    """Without loop invariants nothing about the loop is proved; those
    clauses are then run for every overlap up to the bound.  Nobody asked
    for that bound: the clauses stay unknown, and the report says how far
    the runs went."""
    elf = _linked(tmp_path, BYTES, "memmove_bytes")
    _without_invariants(monkeypatch)
    rep = prove_routine(elf, "memmove", "memmove", jobs=1, memmove_bound=8)
    assert {"C1", "T1"} <= set(rep.held_up_to) and set(rep.held_up_to.values()) == {8}
    assert {rep.status[c] for c in rep.held_up_to} == {"unknown"}
    assert "every n <= 8 ran and kept it, which is no proof" in rep.detail["C1"]
    assert set(rep.status.values()) <= {"proved", "unknown"}
    assert verdict(rep) == "unknown"


def test_the_runs_memmove_gets_without_bounded_never_exit_0(tmp_path, monkeypatch):
    """Issue 64: no exit 0 without a proof.  The runs of every n <= N that
    memmove gets when its proof does not close are shown (the cell, the
    first line, the JSON), and the verdict is unknown, exit 4; the same
    runs asked for with --bounded N make it bounded, exit 0.  The JSON run
    takes the first run's report from the proof cache (of this test alone:
    the routine is proved without invariants here)."""
    src = tmp_path / "memmove_bytes.S"
    src.write_text(BYTES)
    _without_invariants(monkeypatch)
    monkeypatch.setattr(commands_verify, "MEMMOVE_BOUND", 8)

    def run(*args):
        return CliRunner().invoke(main, ["verify", str(src), "--routine", "memmove", "-j", "1",
                                         "--workdir", str(tmp_path / "w"), "--proof-cache",
                                         str(tmp_path / "p"), *args])
    r = run()
    assert r.exit_code == 4, r.output
    assert r.stdout.startswith("unknown: not proved for every n; every n <= 8 ran"), r.stdout
    assert "(n <= 8 ran)" in r.stdout
    doc = json.loads(run("--json").stdout)
    (rep,) = doc["files"][0]["reports"]
    assert doc["verdict"] == rep["verdict"] == "unknown" and doc["ok"] is False
    assert rep["held_up_to"]["C1"] == 8 and rep["status"]["C1"] == "unknown"
    asked = run("--bounded", "8", "--json")
    assert asked.exit_code == 0, asked.output
    (rep,) = json.loads(asked.stdout)["files"][0]["reports"]
    assert rep["verdict"] == "bounded" and rep["status"]["C1"] == "holds for n <= 8"
    assert rep["held_up_to"] == {}


def test_a_shared_subroutine_s_loop_is_unrolled(tmp_path):
    """The byte loop both forward copies call with `jal t0` is no cut
    point: each path runs it with its own return address."""
    from copygen.verify.symbolic.program import Program
    from copygen.verify.symbolic.unroll import shared_callee_body, unrolling
    prog = Program.load(_linked(tmp_path, SHARED_ALIGN, "memmove_shared"))
    entry = prog.image.address_of("memmove")
    plain = prog.routine(entry)
    routine = unrolling(prog, entry, frozenset())
    (head,) = plain.cut_points & shared_callee_body(prog, plain)
    assert routine.unrolled == {head} and head not in routine.cut_points
    assert routine.cut_points == plain.cut_points - {head}


def test_a_loop_run_too_often_is_cut_after_all(tmp_path):
    from copygen.verify.checks.prove import _explored
    from copygen.verify.contract.world import World
    from copygen.verify.symbolic.program import Program
    from copygen.verify.symbolic.unroll import unrolling
    prog = Program.load(_linked(tmp_path, SHARED_UNBOUNDED, "memmove_unbounded"))
    routine = unrolling(prog, prog.image.address_of("memmove"), frozenset())
    assert routine.unrolled
    proof, _ = _explored(prog, "memmove", "memmove", routine, None, World("memmove"), 1)
    assert proof.routine.unrolled == frozenset()
    assert routine.unrolled <= proof.routine.cut_points


LINUX_MEMMOVE = tree.cache_dir() / "linux-source-6.12" / "arch" / "riscv" / "lib" / "memmove.S"


# SHARED_ALIGN stands in for Linux's memmove.S where no tree has it: with
# the tree, test_linux_6_12_memmove_is_proved_for_every_n proves the real one
@pytest.mark.slow           # half a minute each
@pytest.mark.parametrize("text", [
    pytest.param(SHARED_ALIGN, marks=pytest.mark.skipif(
        LINUX_MEMMOVE.exists(), reason="Linux 6.12's memmove.S, which it stands for, is proved")),
    ADJACENT_BACKWARD], ids=["shared", "adjacent"])
def test_linux_shaped_and_adjacent_memmoves_are_proved_for_every_n(tmp_path, text):
    """dst == src returning at once, a shared subroutine's loop, and a
    backward copy that also takes dst == src + n: each proved for every n,
    no bounded run needed."""
    rep = prove_routine(_linked(tmp_path, text, "memmove"), "memmove", "memmove",
                        memmove_bound=0)
    assert rep.status == dict.fromkeys(BY_KIND["memmove"], "proved"), rep.detail


@pytest.mark.slow           # over a minute
@pytest.mark.skipif(not LINUX_MEMMOVE.exists(), reason="no Linux 6.12 tree (copygen kernel tree)")
def test_linux_6_12_memmove_is_proved_for_every_n(tmp_path):
    from copygen.inputs import linked_elf
    elf = str(linked_elf(str(LINUX_MEMMOVE), tmp_path / "linux"))
    rep = prove_routine(elf, "memmove", "memmove", memmove_bound=0)
    assert rep.status == dict.fromkeys(BY_KIND["memmove"], "proved"), rep.detail


@pytest.mark.slow           # over a minute: a proof and a bounded run of every overlap
def test_cli_bounded_memmove(tmp_path):
    out = subprocess.run([sys.executable, "-m", "copygen", "verify",
                          _linked(tmp_path, BYTES, "memmove_bytes"),
                          "--routine", "memmove", "--bounded", "12", "--json",
                          "--workdir", str(tmp_path / "a"), "--proof-cache", str(tmp_path / "p")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (rep,) = json.loads(out.stdout)["files"][0]["reports"]
    assert rep["status"] == dict.fromkeys(BY_KIND["memmove"], "proved")
    bad = subprocess.run([sys.executable, "-m", "copygen", "verify", _forward_only(tmp_path),
                          "--bounded", "8", "--json", "--workdir", str(tmp_path / "b"),
                          "--proof-cache", str(tmp_path / "p")],
                         capture_output=True, text=True)
    assert bad.returncode == 3, bad.stderr
    (rep,) = json.loads(bad.stdout)["files"][0]["reports"]
    assert rep["status"]["C1"] == "violated"
    assert "exhaustive run n <= 8" in rep["detail"]["C1"]
