"""Vector paths in elements wider than a byte (e16, e32, e64), on a target
with fast misaligned access: accepted there and refused at the line on a
slow one; the emitted copy and clear (a loop of whole elements, an e8 pass
for the n mod SEW/8 bytes left, the fault exits that store again as bytes
from vstart * SEW/8); and their runs in the emulator at VLEN 128 to 1024,
with the user buffer's pages unmapped from a random point: every byte, the
return value (exact for store faults and ff loads, the whole chunk for a
plain load fault), SUM clear and vstart 0 at return."""
from __future__ import annotations

import random

import pytest

from copygen.emu.hart.machine import SR_SUM, SSTATUS
from copygen.errors import CopygenError
from copygen.gen.build import build_file
from copygen.gen.lower.lower_vector import clear_function, vector_function
from copygen.gen.front.strategy import Vector
from copygen.gen.front.unparse import file_text
from copygen.gen.front.parse import parse_text
from copygen.gen.front.validate import load_text
from tests.gen.test_vector_clear import run as run_clear
from tests.emu.test_vector_run import KERNEL, PAGE, USER, _run, expected

FAST = "target x60f {\n    xlen 64\n    misaligned fast\n    profile x60\n}\n"
SLOW = FAST.replace("fast", "slow")
COPY = "    small below 71\n    words unroll 8\n    tail bytes\n    fault exact\n"
CLEAR = "    small below 16\n    align dst\n    words unroll 1\n    tail bytes\n    fault exact\n"
VLENS = (128, 256, 512, 1024)


def _file(copy_line: str | None, clear_line: str | None = None, target: str = FAST) -> str:
    text = target
    if copy_line:
        text += f"copy_user w for x60f {{\n{COPY}    {copy_line}\n}}\n"
    if clear_line:
        text += f"clear_user wc for x60f {{\n{CLEAR}    {clear_line}\n}}\n"
    return text


# --- the language ---------------------------------------------------------------------

@pytest.mark.parametrize("sew", [16, 32, 64])
def test_wide_elements_are_accepted_on_a_fast_misaligned_target(sew):
    st = load_text(_file(f"vector e{sew} m8 above 768 loads ff", f"vector e{sew} m4 above 256"))
    assert (st.copy_user.vector.sew, st.copy_user.vector.loads) == (sew, "ff")
    assert (st.clear_user.vector.sew, st.clear_user.vector.lmul) == (sew, 4)
    assert file_text(parse_text(file_text(parse_text(_file(f"vector e{sew} m8 above 768 loads ff"))))) \
        == file_text(parse_text(_file(f"vector e{sew} m8 above 768 loads ff")))


@pytest.mark.parametrize("kind", ["copy", "clear"])
def test_wide_elements_are_refused_at_the_line_on_a_slow_target(kind):
    text = _file("vector e64 m8 above 768 loads plain", target=SLOW) if kind == "copy" else \
        _file(None, "vector e32 m8 above 256", target=SLOW)
    with pytest.raises(CopygenError) as err:
        load_text(text, "w.copy")
    e = err.value
    assert "misaligned slow" in e.message and "e8" in (e.hint or "")
    assert (e.loc.file, e.loc.line, e.loc.col) == ("w.copy", 11 if kind == "copy" else 12, 5)


# --- emission -----------------------------------------------------------------------

def _ops(fn) -> list[str]:
    return [i.op for p in (*fn.phases, *fn.fault_exits) for i in p.body if hasattr(i, "op")]


@pytest.mark.parametrize("sew,shift", [(16, "1"), (32, "2"), (64, "3")])
def test_the_copy_counts_elements_and_scales_vstart(sew, shift):
    fn = vector_function(Vector(sew, 8, 768, "plain"))
    ops = _ops(fn)
    assert ops.count(f"vle{sew}.v") == 1 and ops.count(f"vse{sew}.v") == 1
    assert ops.count("vle8.v") == 1 and ops.count("vse8.v") == 2      # tail; the byte retry
    insns = [i for p in (*fn.phases, *fn.fault_exits) for i in p.body if hasattr(i, "op")]
    assert any(i.op == "srli" and i.operands == ("t1", "a2", shift) for i in insns)
    assert sum(i.op == "slli" and i.operands[2] == shift for i in insns) == 2   # chunk, vstart


def test_ff_loads_retry_a_faulting_element_as_bytes():
    ops = _ops(vector_function(Vector(64, 8, 768, "ff")))
    assert ops.count("vle64ff.v") == 1 and ops.count("vle8ff.v") == 2 and "vle8.v" not in ops


def test_the_clear_counts_elements_and_scales_vstart():
    fn = clear_function(Vector(32, 8, 256, None))
    ops = _ops(fn)
    assert ops.count("vse32.v") == 1 and ops.count("vse8.v") == 2 and ops.count("vmv.v.i") == 1


def test_e8_is_emitted_as_before():
    assert [p.title for p in vector_function(Vector(8, 8, 768, "plain")).phases] == \
        ["Entry", "Chunk loop", "Return"]


# --- runs in the emulator -----------------------------------------------------------

VARIANTS = {"e64m8plain": "vector e64 m8 above 768 loads plain",
            "e32m2ff": "vector e32 m2 above 768 loads ff",
            "e16m1plain": "vector e16 m1 above 768 loads plain",
            "e64m1ff": "vector e64 m1 above 768 loads ff"}
CLEARS = {"e64m8": "vector e64 m8 above 256", "e16m2": "vector e16 m2 above 256"}


@pytest.fixture(scope="module")
def elfs(tmp_path_factory):
    d = tmp_path_factory.mktemp("vwide")
    out = {}
    for name, line in {**VARIANTS, **CLEARS}.items():
        src = d / f"{name}.copy"
        src.write_text(_file(line) if "loads" in line else _file(None, line))
        out[name] = build_file(src, d / name).elf
    return out


CASES = [(vlen, side) for vlen in VLENS for side in ("none", "src", "dst")]


@pytest.mark.parametrize("vlen,side", CASES, ids=[f"vlen{v}-{s}" for v, s in CASES])
@pytest.mark.parametrize("name", list(VARIANTS))
def test_copy_bytes_and_return_value(elfs, name, vlen, side):
    line = VARIANTS[name].split()
    sew, lmul, ff = int(line[1][1:]), int(line[2][1:]), line[-1] == "ff"
    chunk = lmul * vlen // 8
    rnd = random.Random(vlen * 11 + len(side) + sew)
    sizes = sorted({0, 1, sew // 8 - 1, sew // 8 + 1, chunk - 1, chunk, chunk + 3, 2 * chunk + 5,
                    3 * PAGE - 5, *(rnd.randrange(1, 3 * PAGE) for _ in range(8))})
    for n in sizes:
        so, do = rnd.randrange(64), rnd.randrange(64)
        fault = None if side == "none" else rnd.randrange(1, max(2, n + PAGE))
        m, r, fault, want = _run(elfs[name], vlen, n, so, do, side, fault, n)
        where = f"n={n} src+{so} dst+{do} fault@{fault} ({side})"
        if side == "src" and not ff and fault is not None and fault < n:
            # a plain load fault counts its whole chunk: the chunk starts at a
            # multiple of the chunk size, or in the tail at the last whole element
            whole = n // (sew // 8) * (sew // 8)
            start = fault // chunk * chunk if fault < whole else whole
            assert r.ret == n - start, where
        else:
            assert r.ret == expected(n, fault, side, chunk, ff), where
        dst = (KERNEL if side == "src" else USER) + do
        copied = n - r.ret
        assert m.read(dst, copied) == want[:copied], where
        if side == "src" or fault is None:
            rest = m.read(dst + copied, n - copied + 64)
            assert rest == b"\xee" * len(rest), where
        assert not m.hart.csrs[SSTATUS] & SR_SUM, where
        assert m.hart.v.vstart == 0, where


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("name", list(CLEARS))
def test_clear_bytes_and_exact_return_value(elfs, name, vlen):
    rnd = random.Random(vlen * 5 + len(name))
    for faults in (False, True):
        for n in sorted({0, 1, 7, 9, vlen - 1, vlen + 3, 3 * PAGE - 5,
                         *(rnd.randrange(1, 3 * PAGE) for _ in range(8))}):
            off = rnd.randrange(64)
            m, r, fault = run_clear(elfs[name], vlen, n, off,
                                    rnd.randrange(1, n + PAGE) if faults else None)
            where = f"n={n} dst+{off} fault@{fault}"
            want = 0 if fault is None else n - fault
            assert r.ret == want, where
            assert m.read(USER + off, n - want) == bytes(n - want), where
            assert m.read(USER, off) == b"\xee" * off, where
            if fault is None:
                assert m.read(USER + off + n, 64) == b"\xee" * 64, where
            assert not m.hart.csrs[SSTATUS] & SR_SUM and m.hart.v.vstart == 0, where


# --- the sweep axis -----------------------------------------------------------------

def test_a_sew_axis_expands_and_round_trips(tmp_path):
    from copygen.gen.front.variants import sweep_space
    text = _file("vector e8 m8 above 768 loads plain") + \
        "sweep s for w {\n    vector sew [e8, e32, e64]\n    vector lmul [m4, m8]\n}\n"
    path = tmp_path / "s.copy"
    path.write_text(text)
    space = sweep_space(str(path))
    assert len(space.variants) == 6 and not space.pruned
    assert {(load_text(v.text).copy_user.vector.sew, load_text(v.text).copy_user.vector.lmul)
            for v in space.variants} == {(s, m) for s in (8, 32, 64) for m in (4, 8)}
    assert space.variants[0].label.startswith("vector sew e8")
    again = parse_text(file_text(parse_text(text)))
    assert [s.values for s in again[2].settings] == [s.values for s in parse_text(text)[2].settings]


def test_a_sew_axis_on_a_slow_target_is_refused_at_the_sweep():
    text = _file("vector e8 m8 above 768 loads plain", target=SLOW) + \
        "sweep s for w {\n    vector sew [e16, e64]\n}\n"
    with pytest.raises(CopygenError) as err:
        load_text(text, "s.copy")
    assert "misaligned slow" in err.value.message and err.value.loc.line == 13
