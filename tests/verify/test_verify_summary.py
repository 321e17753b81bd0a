"""Call summaries (verify.symbolic.summary): memmove's calls of memcpy are taken by
memcpy's own proof, not explored again inside memmove's proof; only where
that proof holds, no sample run calls memcpy with overlapping buffers, the
call passes memmove's own arguments and nothing was written before it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import z3

from copygen.verify.contract.clauses import BY_KIND
from copygen.verify.symbolic.program import Program
from copygen.verify.checks.prove import RoutineReport, prove_routine
from copygen.verify.symbolic.summary import candidates, names_sp
from copygen.verify.contract.world import World
from tests.verify.test_verify_memmove import BACKWARD_ONLY, FORWARD_ONLY

# memcpy a byte at a time, forwards: right for every call of it; and
# from the end down: a right memcpy, wrong for a forward overlap
FORWARD = FORWARD_ONLY.replace("(memmove)", "(__memcpy)")
BACKWARD = BACKWARD_ONLY.replace("(memmove)", "(__memcpy)")

# the forward memcpy, keeping t0 in s0 on the stack for no reason
STACKED = FORWARD.replace("SYM_FUNC_START(__memcpy)\n",
                          "SYM_FUNC_START(__memcpy)\n\taddi\tsp, sp, -16\n\tsd\ts0, 0(sp)\n"
                          ).replace("2:\tret", "2:\tld\ts0, 0(sp)\n\taddi\tsp, sp, 16\n\tret")

# a memcpy that saves s0 on its stack between two loops (GCC's memcpy
# with frame pointers saves its s-registers after the alignment head)
TWO_LOOPS = """\
#include <linux/linkage.h>
#include <asm/asm.h>

SYM_FUNC_START(__memcpy)
	mv	t0, a0
	li	t2, 8
	bleu	a2, t2, 3f
1:	lb	t1, 0(a1)
	sb	t1, 0(t0)
	addi	a1, a1, 1
	addi	t0, t0, 1
	addi	a2, a2, -1
	bgtu	a2, t2, 1b
3:	addi	sp, sp, -16
	sd	s0, 0(sp)
	beqz	a2, 2f
4:	lb	t1, 0(a1)
	sb	t1, 0(t0)
	addi	a1, a1, 1
	addi	t0, t0, 1
	addi	a2, a2, -1
	bnez	a2, 4b
2:	ld	s0, 0(sp)
	addi	sp, sp, 16
	ret
SYM_FUNC_END(__memcpy)
"""

# memmove: dst inside src copies backwards a byte at a time, dst below src
# and overlapping forwards, disjoint buffers go to __memcpy (FORWARD_CALL:
# `tail`; the kernel's frame-pointer build: a call from a frame)
MEMMOVE = """\
SYM_FUNC_START(memmove)
	sub	t3, a0, a1
	bgeu	t3, a2, 5f
	add	t0, a0, a2
	add	a1, a1, a2
1:	addi	a1, a1, -1
	addi	t0, t0, -1
	lb	t1, 0(a1)
	sb	t1, 0(t0)
	bne	t0, a0, 1b
	ret
5:	sub	t3, a1, a0
	bgeu	t3, a2, 3f
	mv	t0, a0
6:	lb	t1, 0(a1)
	sb	t1, 0(t0)
	addi	a1, a1, 1
	addi	t0, t0, 1
	addi	a2, a2, -1
	bnez	a2, 6b
	ret
3:	FORWARD_CALL
SYM_FUNC_END(memmove)
"""
# the same memmove handing memcpy every forward call, overlapping or not
TRUSTING = MEMMOVE.replace("5:\tsub\tt3, a1, a0\n\tbgeu\tt3, a2, 3f\n", "5:\tj\t3f\n")
TAIL = "tail\t__memcpy"
FRAMED = "addi\tsp, sp, -16\n\tsd\tra, 8(sp)\n\tcall\t__memcpy\n\tld\tra, 8(sp)\n" \
         "\taddi\tsp, sp, 16\n\tret"
# the kernel's build keeps frame pointers: s0 is memmove's frame
FRAME_POINTER = "addi\tsp, sp, -16\n\tsd\tra, 8(sp)\n\tsd\ts0, 0(sp)\n\taddi\ts0, sp, 16\n" \
                "\tcall\t__memcpy\n\tld\tra, 8(sp)\n\tld\ts0, 0(sp)\n\taddi\tsp, sp, 16\n\tret"
HALF = "srli\ta2, a2, 1\n\ttail\t__memcpy"                  # passes n / 2
FIRST_ZEROED = "beqz\ta2, 4f\n\tsb\tzero, 0(a0)\n4:\ttail\t__memcpy"   # writes dst[0] first


def _elf(tmp: Path, memcpy: str, call: str, name: str, memmove: str = MEMMOVE) -> str:
    from copygen.inputs import linked_elf
    src = tmp / f"{name}.S"
    src.write_text(memcpy + "\n" + memmove.replace("FORWARD_CALL", call))
    return str(linked_elf(str(src), tmp / name))


def _prove(elf: str, **kw) -> RoutineReport:
    return prove_routine(elf, "memmove", "memmove", jobs=1, memmove_bound=0, **kw)


def test_the_call_is_one_step_of_the_routine(tmp_path):
    """The routine's graph stops at a summarised call: a tail call returns,
    a call goes on after it; the callee's loop is no cut point of memmove's."""
    for call in (TAIL, FRAMED):
        prog = Program.load(_elf(tmp_path, FORWARD, call, "one"))
        entry, callee = prog.image.address_of("memmove"), prog.image.address_of("__memcpy")
        found = candidates(prog, entry, "memmove")
        assert found == {callee: ("__memcpy", "memcpy")}
        followed, summed = prog.routine(entry), prog.routine(entry, frozenset(found))
        assert callee in followed.pcs and callee not in summed.pcs
        assert len(summed.cut_points) == 2 < len(followed.cut_points)
    assert candidates(prog, callee, "memcpy") == {}       # only memmove summarises


def test_a_callee_that_names_sp_is_followed(tmp_path):
    prog = Program.load(_elf(tmp_path, STACKED, TAIL, "stacked"))
    assert names_sp(prog, prog.image.address_of("__memcpy"))
    prog = Program.load(_elf(tmp_path, FORWARD, TAIL, "plain"))
    assert not names_sp(prog, prog.image.address_of("__memcpy"))


def test_memcpy_s_world_allows_adjacent_buffers_a_user_copy_s_does_not():
    """memmove hands memcpy disjoint buffers at any distance: memcpy's world
    must hold adjacent ones; user and kernel buffers never share a page."""
    for kind, adjacent in (("memcpy", True), ("to", False)):
        w = World(kind)
        s = z3.Solver()
        s.add(*w.preconditions(), w.D + w.N == w.S, w.N == 16)
        assert (s.check() == z3.sat) == adjacent, kind


# a call from a frame (FRAMED) is taken the same way: that proof is
# test_verify_says_how_the_call_was_taken_and_caches_the_callee's
@pytest.mark.slow
@pytest.mark.parametrize("call", [TAIL], ids=["tail"])
def test_memmove_is_proved_by_memcpy_s_own_proof(tmp_path, call):
    asked = []

    def callee(sym, kind):
        asked.append((sym, kind))
        return prove_routine(elf, sym, kind, jobs=1)
    elf = _elf(tmp_path, FORWARD, call, "fwd")
    rep = _prove(elf, callee=callee)
    assert asked == [("__memcpy", "memcpy")]
    assert rep.status == dict.fromkeys(BY_KIND["memmove"], "proved"), rep.detail
    assert rep.calls["__memcpy"].startswith("by its own proof")


def test_a_memmove_that_trusts_memcpy_with_overlap_follows_it(tmp_path):
    """Handing memcpy a forward overlap is outside memcpy's contract: a
    sample run shows such a call, so it is followed, not summarised; with a
    backward memcpy the runs then break C1 before anything is proved."""
    from copygen.verify.symbolic.summary import overlapping_call
    asked = []
    elf = _elf(tmp_path, BACKWARD, TAIL, "bwd", TRUSTING)
    rep = _prove(elf, callee=lambda sym, kind: asked.append(sym))
    assert rep.status["C1"] == "violated" and asked == [], rep.detail
    prog = Program.load(elf)
    n, delta = overlapping_call(prog.image, "memmove", "memmove",
                                prog.image.address_of("__memcpy"))
    assert 0 < delta < n                    # src inside dst: a forward overlap


@pytest.mark.slow
def test_a_trusted_forward_memcpy_is_followed_and_proved(tmp_path):
    rep = _prove(_elf(tmp_path, FORWARD, TAIL, "trust", TRUSTING))
    assert rep.calls["__memcpy"].startswith("followed: called with overlapping buffers")
    assert rep.status == dict.fromkeys(BY_KIND["memmove"], "proved"), rep.detail


@pytest.mark.slow
def test_other_arguments_are_not_taken_by_the_contract(tmp_path):
    """n / 2 passed on: the obligation fails (and the runs show it)."""
    rep = _prove(_elf(tmp_path, FORWARD, HALF, "half"), all_clauses=True)
    assert rep.calls["__memcpy"].startswith("by its own proof")
    assert rep.status["C1"] == "violated", rep.detail


@pytest.mark.slow
def test_a_write_before_the_call_leaves_the_contract_unused(tmp_path):
    """dst[0] zeroed before the call: memcpy's contract is about the memory
    at memmove's entry, so the proof does not take it (here the routine is
    right, and C1 stays unknown rather than proved on a false premise)."""
    rep = _prove(_elf(tmp_path, FORWARD, FIRST_ZEROED, "zeroed"))
    assert rep.status["C1"] == "unknown"
    assert "writes dst before it calls __memcpy" in rep.detail["C1"]
    assert {c: s for c, s in rep.status.items() if c != "C1"} == \
        dict.fromkeys(["A1", "B1", "B2", "T1"], "proved")


@pytest.mark.slow
def test_a_stacked_callee_is_followed_and_still_proved(tmp_path):
    rep = _prove(_elf(tmp_path, STACKED, TAIL, "stk"))
    assert rep.calls == {"__memcpy": "followed: it uses the stack"}
    assert rep.status == dict.fromkeys(BY_KIND["memmove"], "proved"), rep.detail


@pytest.mark.slow       # a whole memmove proof through a followed callee
def test_a_callee_keeps_the_callers_frame_pointer_across_its_loops(tmp_path):
    """The callee saves s0, which holds memmove's frame address, after a
    loop of its own: the loop after the save keeps what the stack holds,
    so memmove's s0 is restored (A1)."""
    rep = _prove(_elf(tmp_path, TWO_LOOPS, FRAME_POINTER, "fp"))
    assert rep.calls == {"__memcpy": "followed: it uses the stack"}
    assert rep.status == dict.fromkeys(BY_KIND["memmove"], "proved"), rep.detail


@pytest.mark.slow
def test_verify_says_how_the_call_was_taken_and_caches_the_callee(tmp_path):
    """`copygen verify` names the summarised call (a call from a frame:
    memmove proved by memcpy's own proof, which was asked for once); memcpy's
    proof lands in the proof cache beside memmove's, and a second run proves
    nothing."""
    from click.testing import CliRunner
    from copygen.cli import main
    elf = _elf(tmp_path, FORWARD, FRAMED, "cli")
    cmd = ["verify", elf, "--routine", "memmove", "-j", "1", "--workdir", str(tmp_path / "w"),
           "--proof-cache", str(tmp_path / "proofs")]
    first = CliRunner().invoke(main, cmd)
    assert first.exit_code == 0, first.output
    assert "its call of __memcpy is taken by its own proof" in first.stdout
    kinds = [json.loads(p.read_text())["kind"] for p in (tmp_path / "proofs").rglob("*.json")]
    assert sorted(kinds) == ["memcpy", "memmove"]
    again = CliRunner().invoke(main, cmd)
    assert again.exit_code == 0 and "from the proof cache" in again.stdout + again.stderr
