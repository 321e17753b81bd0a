"""End to end: a strip-mined e8/m8 vector copy (fixtures/vector_copy.S, the
kernel's loop shape, assembled by GNU as with -march=rv64gcv) runs in the
emulator at VLEN 128..1024: every byte checked for many n, fast path equal to
the reference step, and a fault placed mid-copy handled as RVV says (vstart =
the faulting element) and as the kernel's fixups count."""

from __future__ import annotations

import random

import pytest

from copygen import emu
from emu_build import build_elf, needs_toolchain

VLENS = (128, 256, 512, 1024)
USER, KERNEL, PAGE = 0x1000_0000, 0x7000_0000, 4096
AREA = 4 * PAGE


@pytest.fixture(scope="module")
def copy_elf(tmp_path_factory):
    return build_elf(tmp_path_factory.mktemp("vcopy"), ["vector_copy.S"], name="vcopy.elf",
                     extra=["-march=rv64gcv"])


def _machine(elf, vlen: int, seed: int) -> emu.Machine:
    m = emu.Machine.from_elf(elf, vlen=vlen)
    m.map(USER, AREA, user=True)
    m.map(KERNEL, AREA, user=False)
    rnd = random.Random(seed)
    m.write(USER, rnd.randbytes(AREA))
    m.write(KERNEL, rnd.randbytes(AREA))
    return m


def _sizes(vlen: int) -> list[int]:
    top = vlen                       # VLMAX of e8/m8 is 8 * VLEN / 8 bytes
    rng = random.Random(vlen)
    return sorted({0, 1, 2, top - 1, top, top + 1, 2 * top, 3 * top - 1, 3 * PAGE - 100,
                   *(rng.randrange(3 * PAGE - 64) for _ in range(12))})


@needs_toolchain
@pytest.mark.parametrize("vlen", VLENS)
def test_vector_copy_copies_every_byte(copy_elf, vlen):
    for n in _sizes(vlen):
        doff, soff = n % 61, (n * 7) % 53
        m = _machine(copy_elf, vlen, n)
        before = m.read(USER, AREA)
        src = m.read(KERNEL + soff, n)
        r = m.call("vcopy_user", USER + doff, KERNEL + soff, n, vector_at_entry=True)
        after = m.read(USER, AREA)
        assert r.ret == 0 and not r.sum_at_exit and r.faults == ()
        assert after == before[:doff] + src + before[doff + n:], n
        chunks = -(-n // vlen)
        assert r.instret == 6 + 7 * chunks and m.hart.v.vstart == 0   # 7 per chunk


@needs_toolchain
@pytest.mark.parametrize("vlen", VLENS)
def test_vector_copy_fast_path_equals_reference(copy_elf, vlen):
    for n in (0, vlen + 3, 5000):
        out = []
        for fast in (False, True):
            m = _machine(copy_elf, vlen, n)
            r = m.call("vcopy_user", USER + 3, KERNEL + 1, n, vector_at_entry=True, fast=fast)
            out.append((r, tuple(m.hart.x), bytes(m.hart.v.regs), m.read(USER, AREA)))
        assert out[0] == out[1]


@needs_toolchain
@pytest.mark.parametrize("vlen", VLENS)
def test_store_fault_mid_copy_sets_vstart_and_returns_the_exact_rest(copy_elf, vlen):
    for bad_at in (PAGE, 2 * PAGE + 1, 2 * PAGE + vlen // 2 + 5):
        m = _machine(copy_elf, vlen, bad_at)
        bad = USER + (bad_at & ~(PAGE - 1))
        m.unmap(bad, AREA - (bad - USER))
        dst, n = bad - (bad_at % PAGE) - 3 * vlen - 17, 5 * vlen
        r = m.call("vcopy_user", dst, KERNEL, n, vector_at_entry=True)
        stored = bad - dst
        (fault,) = r.faults
        assert fault.addr == bad and fault.cause == "store: unmapped"
        assert m.hart.v.vstart == stored % vlen            # the element of its chunk that faulted
        assert r.ret == n - stored and not r.sum_at_exit
        assert m.read(dst, stored) == m.read(KERNEL, stored)


@needs_toolchain
@pytest.mark.parametrize("vlen", VLENS)
def test_load_fault_mid_copy_returns_the_chunk_as_not_copied(copy_elf, vlen):
    m = _machine(copy_elf, vlen, vlen)
    m.unmap(USER + 2 * PAGE, 2 * PAGE)
    src, n = USER + 2 * PAGE - 2 * vlen - 9, 4 * vlen           # from the user side
    r = m.call("vcopy_user", KERNEL, src, n, vector_at_entry=True)
    (fault,) = r.faults
    assert fault.addr == USER + 2 * PAGE and m.hart.v.vstart == 9   # third chunk, element 9
    assert r.ret == n - 2 * vlen                                  # two whole chunks copied
    assert m.read(KERNEL, 2 * vlen) == m.read(src, 2 * vlen)
