"""A size-class copy_user with `tail overlap` whose first word loop lies in
line (`inline words`): the overlapping last word lies out of line, behind a
test taken only when bytes are left (gen.lower.lower_uaccess._last_word_out),
so a copy of whole words runs from entry to return without a taken branch.
Without `inline words` the word stays in line, as before.  The code, its
cycles on the in-order x60 (where a mispredicted forward branch costs 9), the
results under qemu-user with faults on either side, and (slow) the proof."""
from __future__ import annotations

import pytest

from copygen.measure.bench import Bench, Case
from copygen.mutate import oracle as qemu
from tests.conftest import assert_exact_under_qemu, assert_proved, build_text

COPY = """target x60 {{ xlen 64; misaligned fast; profile x60 }}
copy_user k for x60 {{
    small below 16
    align dst
    words unroll 8 schedule paired
    then words unroll {then} schedule paired
    shift off
    tail {tail}
    ends {ends}
    inline {inline}
    fault restart
}}
"""


def _build(factory, inline="words", tail="overlap", ends="overlap", then=4):
    text = COPY.format(inline=inline, tail=tail, ends=ends, then=then)
    return build_text(factory, text, f"last_{inline}_{tail}_{ends}_{then}")


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return _build(tmp_path_factory)


def _straight(res) -> tuple[str, str]:
    """(entry to the first return, the rest) of __asm_copy_to_user."""
    text = (res.outdir / "uaccess.S").read_text()
    body = text[text.index("SYM_FUNC_START(__asm_copy_to_user)"):]
    cut = body.index("\tret\n")
    return body[:cut], body[cut:]


def _last_branch(line: str) -> str:
    """The last branch before the return's label: where the tail ends."""
    before = line[:line.index(".Lcopy_done:")]
    return [ln.split("/*")[0].strip() for ln in before.splitlines()
            if ln.startswith("\tb")][-1]


def test_the_last_word_lies_out_of_line_only_with_the_first_loop_in_line(out, tmp_path_factory):
    line, rest = _straight(out)
    assert _last_branch(line) == "bne\ta0, a3, .Lcopy_last_word"
    assert ".Lcopy_last_word:" in rest
    word = rest[rest.index(".Lcopy_last_word:"):]
    word = word[:word.index("j\t.Lcopy_done")]
    assert [ln.split()[1] for ln in word.splitlines() if ln.strip().startswith("fixup")] == \
        ["REG_L,", "REG_S,"]
    none_line, none_rest = _straight(_build(tmp_path_factory, inline="none"))
    assert _last_branch(none_line) == "beq\ta0, a3, .Lcopy_done"
    assert "_last_word" not in none_line + none_rest


def test_whole_words_cost_what_a_word_tail_costs_and_bytes_left_less(out, tmp_path_factory):
    """Aligned copies of whole words fall through to the return, as those of
    the same routine with a word tail and a byte end do (at most the cycle
    of the untaken test more); with bytes left, one misaligned word costs
    less than the byte loop."""
    words = _build(tmp_path_factory, tail="words", ends="bytes")
    new, old = Bench(out.elf, "x60", 128), Bench(words.elf, "x60", 128)
    for n in (16, 32, 64, 72, 128):
        case = Case("__asm_copy_to_user", n, 0, 0)
        assert new.run(case).cycles <= old.run(case).cycles + 1, case
    for n, s, d in ((21, 0, 0), (77, 0, 0), (100, 3, 3), (45, 1, 0)):
        case = Case("__asm_copy_to_user", n, s, d)
        assert new.run(case).cycles < old.run(case).cycles, case


@pytest.mark.parametrize("fn", ["to", "from"])
def test_the_copies_are_exact_under_qemu(out, fn, tmp_path):
    """Every size up to 90 at a spread of offset pairs, and calls whose user
    buffer meets an unmapped page a few bytes in or near the end (the last
    word faults)."""
    exe = qemu.build_harness(out.objects, tmp_path / "harness")
    side = "dst" if fn == "to" else "src"
    cases = [qemu.Case(fn, d, s, n, seed=n * 64 + 8 * d + s)
             for n in range(91) for d, s in ((0, 0), (1, 1), (3, 0), (0, 5), (7, 2))]
    for k in (3, 8, 13, 40, 70):
        for n in range(k + 1, k + 30, 4):
            d, s = (qemu.PAGE - k, 5) if side == "dst" else (5, qemu.PAGE - k)
            cases.append(qemu.Case(fn, d, s, n, side, qemu.PAGE, seed=k * 1000 + n))
    assert_exact_under_qemu(exe, cases)


@pytest.mark.slow
@pytest.mark.parametrize("symbol, kind", [("__asm_copy_to_user", "to"),
                                          ("__asm_copy_from_user", "from")])
def test_the_out_of_line_last_word_is_proved_for_every_n(out, symbol, kind):
    assert_proved(out.elf, symbol, kind)
