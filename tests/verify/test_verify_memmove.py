"""memmove under the verifier: proved for every n in the world where the
buffers may overlap, in both directions (a load must never read a source
byte the routine already overwrote); a wrong direction is violated with a
replayed counterexample.  The bounded mode runs every overlap for every n
up to a bound, and covers whatever clause the proof leaves unknown."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from copygen.verify.counterexamples.bounded import check, scenarios
from copygen.verify.contract.clauses import BY_KIND
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
    rep = prove_routine(string2021, "memmove", "memmove", jobs=2, memmove_bound=0)
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


def test_what_the_proof_leaves_unknown_is_run_up_to_the_bound(tmp_path, monkeypatch):
    """Without loop invariants nothing about the loop is proved; those
    clauses are then run for every overlap up to the bound, and the report
    says "holds for n <= N" in those words."""
    elf = _linked(tmp_path, BYTES, "memmove_bytes")
    monkeypatch.setattr("copygen.verify.checks.prove.guess", lambda snaps, kind, roles=None: [])
    rep = prove_routine(elf, "memmove", "memmove", jobs=1, memmove_bound=8)
    held = {c for c, s in rep.status.items() if s == "holds for n <= 8"}
    assert "C1" in held and "T1" in held
    assert "every n <= 8 checked exhaustively" in rep.detail["C1"]
    assert set(rep.status.values()) <= {"proved", "holds for n <= 8"}


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
