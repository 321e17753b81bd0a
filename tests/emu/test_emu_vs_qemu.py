"""Independent oracle: copygen's emulator against qemu-riscv64 on the same linked code.

For every routine of every example (uaccess.S and string.c), 3,000 random
cases (sizes 0..9000, half of them below 160, all 64 alignment pairs, about
forty cases each; half of the user-copy cases with a fault at a random page
boundary inside the user buffer) run through
tests/oracle/harness.c under qemu-user and through the same experiment in the
emulator (tests/oracle/emu_side.py).  Return value, SUM at exit and the
destination arena (the harness's WSUM digest of all 32 KiB) must be equal.

One harness process per example handles all its cases, while the emulator
works on the same cases in this process (the two run on both cores).
"""
from __future__ import annotations

import zlib
from concurrent.futures import ThreadPoolExecutor

import pytest

from copygen.gen.front.validate import load_file
from tests.conftest import EXAMPLES
from copygen.mutate import oracle as qemu
from tests.oracle.emu_side import EmuHarness

CASES_PER_ROUTINE = 3000
FNS = {"copy_user": ["to", "from"], "clear_user": ["clear"], "string": ["memcpy", "memmove", "memset"]}


def _routines(path) -> list[str]:
    st = load_file(path)
    return [fn for kind, fns in FNS.items() if getattr(st, kind) is not None for fn in fns]


def _cases(stem: str, fn: str) -> list[qemu.Case]:
    return qemu.random_cases(fn, CASES_PER_ROUTINE, max_n=9000, seed=zlib.crc32(f"{stem}/{fn}".encode()))


def test_case_generator_covers_the_space():
    for fn in ("to", "clear", "memcpy", "memmove"):
        cases = _cases("coverage", fn)
        assert {(c.src_off % 8, c.dst_off % 8) for c in cases} == {(s, d) for s in range(8) for d in range(8)}
        assert max(c.n for c in cases) > 8500 and min(c.n for c in cases) == 0
        if fn in ("to", "clear"):
            faulting = [c for c in cases if c.fault_side != "none"
                        and c.fault_at < (c.dst_off if c.fault_side == "dst" else c.src_off) + c.n]
            assert len(faulting) > CASES_PER_ROUTINE // 4


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_emulator_equals_qemu(path, built_examples, tmp_path):
    res = built_examples[path.stem]
    exe = qemu.build_harness(res.objects, tmp_path / "harness")
    cases = [c for fn in _routines(path) for c in _cases(path.stem, fn)]
    with ThreadPoolExecutor(1) as pool:
        theirs_f = pool.submit(qemu.run_cases, exe, cases, True)
        machine = EmuHarness(res.elf)
        mine = [machine.run(c) for c in cases]
        theirs = theirs_f.result()
    bad = [(c, m, t) for c, m, t in zip(cases, mine, theirs)
           if (m.ret, m.sum_at_exit, m.wsum) != (t.ret, t.sum_at_exit, t.wsum)]
    assert not bad, f"{len(bad)} of {len(cases)} cases differ, e.g.\n" + "\n".join(
        f"  case `{c.line()}`: emu ret={m.ret} sum={m.sum_at_exit} wsum={m.wsum:#x}; "
        f"qemu ret={t.ret} sum={t.sum_at_exit} wsum={t.wsum:#x}" for c, m, t in bad[:5])
    assert len(cases) == CASES_PER_ROUTINE * len(_routines(path))
