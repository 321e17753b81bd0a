"""Independent oracle for the emulator's RVV subset: the same assembled case
functions run under qemu-riscv64 -cpu rv64,v=true,vlen=N (driver.c, tramp.S)
and in emu.Machine (tests/oracle/vector/emu_side.py) at VLEN 128, 256, 512
and 1024.  Per case: fault or not, faulting pc and address, vstart, vl,
vtype, t0/a0/a1/a2, and CRCs of v0-v31 and of the two-page data arena must
be equal.  Cases cover vset{i}vl{i} over every SEW/LMUL and many AVLs
(unsupported vtypes included), unit-stride, strided, fault-only-first and
whole-register accesses of every EEW, masked and unmasked, with bases placed
so that element k (0, 1, random) is the first one in a PROT_NONE page.
"""
from __future__ import annotations

import random
import shutil
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.oracle.vector import cases as C
from tests.oracle.vector.emu_side import EmuSide, build, run_qemu

VLENS = (128, 256, 512, 1024)
FAST_CASES = 700   # per VLEN: about 4 s each with qemu and the emulator side by side

pytestmark = pytest.mark.skipif(
    not (shutil.which("qemu-riscv64") and shutil.which("riscv64-linux-gnu-gcc")),
    reason="qemu-riscv64 or the riscv64-linux-gnu toolchain is not installed")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build(tmp_path_factory.mktemp("vector-oracle"))


def _compare(built, vlen: int, cases: list[tuple]) -> list:
    exe, elf = built
    with ThreadPoolExecutor(1) as pool:
        theirs_f = pool.submit(run_qemu, exe, vlen, cases)
        side = EmuSide(elf, vlen)
        mine = [side.run(c) for c in cases]
        theirs = theirs_f.result()
    bodies = C.bodies()
    bad = [(c, m, t) for c, m, t in zip(cases, mine, theirs) if m != t]
    assert not bad, f"{len(bad)} of {len(cases)} cases differ at VLEN {vlen}, e.g.\n" + "\n".join(
        f"  {bodies[c[0]].lines} args {[hex(a) for a in c[1:6]]}:\n    emu  {m}\n    qemu {t}"
        for c, m, t in bad[:4])
    return theirs


@pytest.mark.parametrize("vlen", VLENS)
def test_vector_emulator_equals_qemu(built, vlen):
    cases = random.Random(vlen).sample(C.cases(vlen, 1, fast=True), FAST_CASES)
    outcomes = _compare(built, vlen, cases)
    bodies = C.bodies()
    seen = Counter()
    for c, o in zip(cases, outcomes):
        b = bodies[c[0]]
        seen[b.group, "fault" if o.fault else "ok"] += 1
        seen["vstart>0"] += o.fault and o.vstart > 0
        seen["vill"] += o.vtype >> 63
        seen["ff trimmed"] += b.group == "ff" and not o.fault and o.a0 < min(c[3], b.span * vlen // b.eew)
    for key in [(g, r) for g in ("unit", "strided", "ff", "whole") for r in ("ok", "fault")] + \
            [("vset", "ok"), "vstart>0", "vill", "ff trimmed"]:
        assert seen[key] > 0, f"no case of kind {key} at VLEN {vlen}"


@pytest.mark.parametrize("vlen", VLENS)
def test_vector_fill_and_the_clear_loop_equal_qemu(built, vlen):
    """vmv.v.i and __asm_vector_clear_user's chunk loop, every case of
    theirs: faults at element 0, 1 and past it of a chunk included."""
    bodies = C.bodies()
    cases = [c for c in C.cases(vlen, 1, fast=True) if bodies[c[0]].group in ("fill", "clear")]
    outcomes = _compare(built, vlen, cases)
    clear = [(c, o) for c, o in zip(cases, outcomes) if bodies[c[0]].group == "clear"]
    assert any(o.fault and o.vstart > 0 for _, o in clear), "no clear faulted inside a chunk"
    assert any(o.fault and o.vstart == 0 for _, o in clear), "no clear faulted at a chunk's start"
    assert any(not o.fault and o.a1 == 0 for _, o in clear)


def test_the_oracles_clear_loop_is_the_generated_one():
    from copygen.gen.lower.lower_vector import clear_function
    from copygen.gen.front.strategy import Vector
    for lmul in (1, 8):
        fn = clear_function(Vector(8, lmul, 256, None))
        phases = {p.title: p for p in fn.phases}
        lines = []
        for p in (phases["Zeros"], phases["Chunk loop"]):
            for i in p.body:
                if hasattr(i, "op"):
                    ops = [o if not o.startswith(".L") else "1b" for o in i.operands]
                    lines.append(f"{i.op} {', '.join(ops)}")
                else:
                    lines.append("1:")
        want = [ln.format(lmul=f"m{lmul}") for ln in C.CLEAR_LOOP]
        assert lines == want


@pytest.mark.parametrize("vlen", VLENS)
def test_the_wide_loops_and_the_byte_restart_equal_qemu(built, vlen):
    """The e16..e64 copy and clear loops with their e8 tail, and the wide
    fault exit's store again from a vstart set by csrw, every case of
    theirs: elements that straddle the PROT_NONE page included."""
    bodies = C.bodies()
    groups = ("wcopy", "wclear", "restart")
    cases = [c for c in C.cases(vlen, 1, fast=True) if bodies[c[0]].group in groups]
    outcomes = _compare(built, vlen, cases)
    seen = Counter()
    for c, o in zip(cases, outcomes):
        b = bodies[c[0]]
        seen[b.group, "fault" if o.fault else "ok"] += 1
        # an element that starts before the PROT_NONE page and ends in it
        seen[b.group, "straddle"] += bool(o.fault and (C.DATA + C.ARENA - o.addr) % (b.eew // 8))
        seen[b.group, "vstart>0"] += o.fault and o.vstart > 0
    for key in [(g, r) for g in groups for r in ("ok", "fault", "vstart>0")]:
        assert seen[key] > 0, f"no case of kind {key} at VLEN {vlen}"


def test_the_oracles_wide_loops_are_the_generated_ones():
    from copygen.gen.lower.lower_vector import clear_function, vector_function
    from copygen.gen.front.strategy import Vector
    labels = {".Lvec_loop": "1", ".Lvclr_loop": "1", ".Lvec_tail": "2", ".Lvclr_tail": "2",
              ".Lvec_done": "3", ".Lvclr_done": "3"}

    def lines(fn, titles):
        out = []
        for p in fn.phases:
            if p.title not in titles:
                continue
            for i in p.body:
                if hasattr(i, "op"):
                    ops = [labels[o] + ("b" if labels[o] == "1" else "f") if o in labels else o
                           for o in i.operands]
                    out.append(f"{i.op} {', '.join(ops)}")
                else:
                    out.append(labels[i.name] + ":")
        return out + ["3:"]
    for sew in (16, 32, 64):
        for lmul in (1, 8):
            for ff in (False, True):
                fn = vector_function(Vector(sew, lmul, 768, "ff" if ff else "plain"))
                assert lines(fn, ("Chunk loop", "Tail bytes")) == \
                    list(C.wide_lines(C.WIDE_COPY, sew, lmul, ff))
            fn = clear_function(Vector(sew, lmul, 256, None))
            assert lines(fn, ("Zeros", "Chunk loop", "Tail bytes")) == \
                list(C.wide_lines(C.WIDE_CLEAR, sew, lmul))
            exits = {p.title: p for p in vector_function(Vector(sew, lmul, 768, "plain")).fault_exits}
            restart = [f"{i.op} {', '.join(i.operands)}" for i in exits["Fault exits"].body
                       if hasattr(i, "op")][2:5]
            assert restart == [ln.format(lmul=f"m{lmul}").replace("vstart, a3", "CSR_VSTART, t1")
                               .replace("zero, a2", "zero, t0") for ln in C.RESTART]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
@pytest.mark.parametrize("vlen", VLENS)
def test_vector_emulator_equals_qemu_all_cases(built, vlen, seed):
    _compare(built, vlen, C.cases(vlen, seed, fast=False))
