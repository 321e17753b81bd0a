"""The generated __asm_vector_usercopy runs in the emulator at VLEN 128 to
1024 (sstatus.VS on at entry, as inside the kernel's vector section):
every byte and the return value are checked against the routine's contract
for many n, alignments, directions and fault points, with plain and
fault-only-first loads and several LMULs."""
from __future__ import annotations

import random

import pytest

from copygen import emu
from copygen.emu.hart.machine import SR_SUM, SSTATUS
from copygen.gen.build import build_file

VLENS = (128, 256, 512, 1024)
USER, KERNEL, PAGE = 0x1000_0000, 0x7000_0000, 4096
AREA = 6 * PAGE
SCALAR = "    small below 71\n    words unroll 8\n    tail bytes\n    fault exact\n"
VARIANTS = {"m8plain": "vector e8 m8 above 768 loads plain",
            "m2ff": "vector e8 m2 above 768 loads ff",
            "m1plain": "vector e8 m1 above 768 loads plain"}


@pytest.fixture(scope="module")
def elfs(tmp_path_factory):
    d = tmp_path_factory.mktemp("vrun")
    out = {}
    for name, line in VARIANTS.items():
        src = d / f"{name}.copy"
        src.write_text("target x60 {\n    xlen 64\n    misaligned slow\n}\n"
                       f"copy_user {name} for x60 {{\n{SCALAR}    {line}\n}}\n")
        out[name] = build_file(src, d).elf
    return out


def expected(n: int, fault: int | None, side: str, chunk: int, ff: bool) -> int:
    """The bytes not copied the routine must return: exact for a store
    fault (and for ff loads); a plain load fault counts its whole chunk."""
    if fault is None or fault >= n:
        return 0
    if side == "dst" or ff:
        return n - fault
    return n - fault // chunk * chunk


def _run(elf, vlen: int, n: int, so: int, do: int, side: str, fault: int | None, seed: int):
    m = emu.Machine.from_elf(elf, vlen=vlen)
    user_src = side == "src"
    src_base, dst_base = (USER, KERNEL) if user_src else (KERNEL, USER)
    m.map(USER, AREA, user=True)
    m.map(KERNEL, AREA, user=False)
    data = random.Random(seed).randbytes(AREA)
    m.write(src_base, data)
    m.write(dst_base, b"\xee" * AREA)
    src, dst = src_base + so, dst_base + do
    if fault is not None:               # the user buffer's pages from the fault on
        user = src if user_src else dst
        page = (user + fault + PAGE - 1) & ~(PAGE - 1)
        if page < user + n:
            m.unmap(page, USER + AREA - page)
            fault = page - user
        else:
            fault = None
    r = m.call("__asm_vector_usercopy", dst, src, n, vector_at_entry=True)
    return m, r, fault, data[so:so + n]


CASES = [(vlen, side) for vlen in VLENS for side in ("none", "src", "dst")]


@pytest.mark.parametrize("vlen,side", CASES, ids=[f"vlen{v}-{s}" for v, s in CASES])
@pytest.mark.parametrize("name", list(VARIANTS))
def test_bytes_and_return_value(elfs, name, vlen, side):
    lmul = int(VARIANTS[name].split()[2][1:])
    ff = VARIANTS[name].endswith("ff")
    chunk = lmul * vlen // 8
    rnd = random.Random(vlen * 7 + len(side))
    sizes = sorted({0, 1, chunk - 1, chunk, chunk + 1, 2 * chunk + 3, 3 * PAGE - 5,
                    *(rnd.randrange(1, 3 * PAGE) for _ in range(6))})
    checked = 0
    for n in sizes:
        so, do = rnd.randrange(64), rnd.randrange(64)
        fault = None if side == "none" else rnd.randrange(1, max(2, n + PAGE))
        m, r, fault, want = _run(elfs[name], vlen, n, so, do, side, fault, n)
        ret = expected(n, fault, side, chunk, ff)
        where = f"n={n} src+{so} dst+{do} fault@{fault} ({side})"
        assert r.ret == ret, where
        dst = (KERNEL if side == "src" else USER) + do
        copied = n - ret
        assert m.read(dst, copied) == want[:copied], where
        if side == "src" or fault is None:          # dst's pages all mapped
            rest = m.read(dst + copied, n - copied + 64)
            assert rest == b"\xee" * len(rest), where
        assert not m.hart.csrs[SSTATUS] & SR_SUM, where
        assert m.hart.v.vstart == 0, where
        checked += 1
    assert checked == len(sizes)


def test_the_vector_unit_must_be_on(elfs):
    m = emu.Machine.from_elf(elfs["m8plain"], vlen=128)
    m.map(USER, AREA, user=True)
    m.map(KERNEL, AREA, user=False)
    with pytest.raises(emu.IllegalInstruction):
        m.call("__asm_vector_usercopy", USER, KERNEL, 100)


def test_instructions_per_chunk(elfs):
    """Seven instructions a chunk, plus entry and exit, at every VLEN."""
    for vlen in VLENS:
        n = 4 * vlen              # four chunks of e8/m8
        m, r, _, _ = _run(elfs["m8plain"], vlen, n, 0, 0, "src", None, 1)
        assert r.ret == 0 and r.instret == 2 + 4 * 7 + 3


def test_bench_runs_it_and_checks_its_result(elfs):
    """`copygen bench` calls it in a vector section at the vector profile's
    VLEN; a profile without vector timing refuses it."""
    from copygen.measure.bench import Bench, Case
    for prof, vlen in (("x60", 256), ("x280", 512)):
        b = Bench(elfs["m8plain"], prof, 4096)
        assert "__asm_vector_usercopy" in b.routines()
        s = b.run(Case("__asm_vector_usercopy", 4096, 3, 5))
        assert s.kind == "vector_usercopy" and s.instret == 2 + 7 * (4096 // vlen) + 3
    with pytest.raises(emu.ProfileError, match=r"profile u74 has no \[vector\] section"):
        Bench(elfs["m8plain"], "u74", 64).run(Case("__asm_vector_usercopy", 64, 0, 0))
