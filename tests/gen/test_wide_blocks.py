"""Blocks of up to 32 words: the range the language accepts, the shift copy
with a 32-word block and steps of 16, 8, 4, 2 and 1 under the qemu oracle
(every alignment pair around the block sizes, faults inside a block), and
what the wider block saves on the u74 model."""
from __future__ import annotations

import pytest

from copygen.emu.timing.profile import load_profile
from copygen.gen.build import build_file
from copygen.errors import CopygenError
from copygen.gen.front.strategy import MAX_UNROLL
from copygen.gen.phases.uaccess_phases import steps
from copygen.gen.front.validate import load_text
from copygen.measure.bench import Bench, Case
from copygen.mutate import oracle as qemu

WIDE = """target u74 { xlen 64; misaligned slow }
copy_user cu for u74 {
    small below 16
    align dst
    words unroll 32 schedule loads_first
    then words unroll 4
    shift unroll 32 schedule paired
    tail steps
    ends pieces
    fault exact
}
"""


def _build(tmp_path, name: str, text: str):
    src = tmp_path / f"{name}.copy"
    src.write_text(text)
    return build_file(src, tmp_path)


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("wide"), "wide", WIDE)


def test_unroll_is_accepted_up_to_32_and_refused_above():
    assert MAX_UNROLL == 32
    ph = load_text(WIDE, "w.copy").copy_user.phases
    assert (ph.word_unroll, ph.shift_unroll, ph.tail) == (32, 32, "steps")
    assert steps(ph.last_shift_unroll) == [16, 8, 4, 2, 1]
    with pytest.raises(CopygenError) as info:
        load_text(WIDE.replace("shift unroll 32", "shift unroll 33"), "w.copy")
    assert "outside 1..32" in info.value.message and info.value.loc.line == 7


def test_wide_blocks_copy_exactly_under_qemu(wide, tmp_path):
    exe = qemu.build_harness(wide.objects, tmp_path / "harness")
    # around one and two 256-byte blocks, every alignment pair, both directions
    sizes = [n for base in (256, 512) for n in range(base - 9, base + 10)] + [767, 1021]
    cases = [qemu.Case(fn, d, s, n, seed=n + 8 * d + s) for fn in ("to", "from")
             for n in sizes for d in range(8) for s in range(8)]
    # a user page that ends inside the first or the second block, or in a step
    for fn, side in (("to", "dst"), ("from", "src")):
        for n in (300, 700):
            for off in (0, 3, 5):
                for into in (1, 9, 130, 255, 257, 290, 301):
                    near = qemu.PAGE - into          # the user buffer's first byte
                    d, s = (near, off) if side == "dst" else (off, near)
                    if into < n:
                        cases.append(qemu.Case(fn, d, s, n, side, qemu.PAGE, seed=n + into))
    for case, r in zip(cases, qemu.run_cases(exe, cases)):
        assert not r.sum_at_exit, case
        assert r.prefix_ok and r.rest_untouched, case
        assert r.ret == case.exact_return(), (case, r.ret)


def test_a_32_word_shift_block_saves_loop_overhead(wide, tmp_path):
    """Half as many loop ends per word, and the words after the last block
    go in straight-line steps (u74 model, misaligned 2 KiB)."""
    narrow = _build(tmp_path, "narrow", WIDE.replace("shift unroll 32", "shift unroll 16"))
    prof = load_profile("u74_spec")
    ours, theirs = Bench(wide.elf, prof, 8192), Bench(narrow.elf, prof, 8192)
    for src, dst in ((1, 0), (3, 5)):
        a = ours.run(Case("__asm_copy_to_user", 2048, src, dst)).cycles
        b = theirs.run(Case("__asm_copy_to_user", 2048, src, dst)).cycles
        assert a + 8 <= b, (src, dst, a, b)
