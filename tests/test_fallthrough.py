"""Jumps, tests and loops a routine does not need: a `j` to the label right
after it (gen.ir.without_jumps_to_next), a clear's one-word tail loop after
a last word loop that already stores one word a turn (gen.uaccess_phases),
and the test in front of a clear's second class in line when the threshold
leaves it a block (gen.lower_uaccess: the head and the first loop test for
it themselves).  The code they leave is checked under qemu-user, faults
included, and (slow) proved for every n."""
from __future__ import annotations

import pytest

from copygen.gen.ir import Insn, Label, Phase, without_jumps_to_next
from copygen.mutate import oracle as qemu
from tests.conftest import build_text

CLEAR = """target c910 {{ xlen 64; misaligned fast; profile c910 }}
clear_user k for c910 {{
    small below auto
    align dst
    words unroll 4
    then words unroll {then}
    ends overlap
    tail {tail}
    fault exact
}}
"""


def _phase(label, *body):
    return Phase(label, label or "entry", body=tuple(body))


def test_a_jump_to_the_next_label_goes_and_every_other_stays():
    phases = (_phase(None, Insn("li", ("a0", "1")), Insn("j", (".Ldone",))),
              _phase(".Ldone", Insn("j", ("1f",)), Label("1"), Insn("j", (".Lelse",))),
              _phase(".Lmore", Insn("j", (".Lmore",), fixup=".Lfault")),
              _phase(".Lelse", Insn("ret")))
    out = without_jumps_to_next(phases)
    assert [[i.text() if isinstance(i, Insn) else i.name for i in p.body] for p in out] == [
        ["li\ta0, 1"], ["1", "j\t.Lelse"], ["j\t.Lmore"], ["ret"]]
    assert out[2] is phases[2] and out[3] is phases[3]


@pytest.fixture(scope="module")
def clears(tmp_path_factory):
    return {(then, tail): build_text(tmp_path_factory, CLEAR.format(then=then, tail=tail),
                                     f"clear_{then}_{tail}")
            for then, tail in ((1, "overlap"), (1, "words"), (2, "words"))}


def _body(res) -> str:
    text = (res.outdir / "uaccess.S").read_text()
    return text[text.index("SYM_FUNC_START(__clear_user)"):]


def test_a_one_word_last_loop_leaves_no_tail_loop_and_no_jump_to_done(clears):
    one = _body(clears[1, "overlap"])
    assert ".Lclear_tail_words_done" not in one and "zero the word ending at end" in one
    assert "\tj\t.Lclear_done" not in one
    assert ".Lclear_tail:" not in _body(clears[1, "words"])
    two = _body(clears[2, "words"])
    assert ".Lclear_tail_words_done" in two and "while (end - dst >= 8) zero one word;" in two


def _straight(body: str) -> str:
    """From entry to the first return."""
    return body[:body.index("\tret\n")]


def test_a_second_class_the_threshold_fills_is_entered_without_a_test(clears):
    one = _body(clears[1, "overlap"])
    line = _straight(one)
    # in line: no skip test in front of the one-word loop; out of line the
    # head (into the size test) and the first loop test for a word themselves
    assert "bgtu\ta0, a2, .Lclear_words_then_skip" not in line
    assert ".Lclear_words_then_loop:" in line and ".Lclear_head_done" not in line
    rest = one[len(line):]
    assert "\tj\t.Lclear_head_done" not in rest
    assert rest.count("bleu\ta0, a2, .Lclear_words_then_loop") == 1
    assert "bgtu\ta0, a2, .Lclear_then_test" in rest
    # two words a turn need 16 bytes, more than n >= 15 leaves: tested in line
    two = _straight(_body(clears[2, "words"]))
    assert "bgtu\ta0, a2, .Lclear_words_then_skip" in two
    assert "_then_test" not in _body(clears[2, "words"])


@pytest.mark.slow
def test_the_untested_second_class_is_proved_for_every_n(clears):
    from copygen.verify.prove import prove_routine
    from copygen.verify.verdict import verdict
    rep = prove_routine(str(clears[1, "overlap"].elf), "__clear_user", "clear")
    assert verdict(rep) == "proved", rep.status


@pytest.mark.parametrize("key", [(1, "overlap"), (1, "words"), (2, "words")])
def test_the_clears_are_exact_under_qemu(clears, key, tmp_path):
    """Every size up to 80 at every dst offset, and each with the page
    after dst's first bytes unmapped: the exact count comes back."""
    exe = qemu.build_harness(clears[key].objects, tmp_path / "harness")
    cases = [qemu.Case("clear", d, 0, n, seed=n * 8 + d) for n in range(81) for d in range(8)]
    cases += [qemu.Case("clear", qemu.PAGE - k, 0, n, "dst", qemu.PAGE, seed=k * 100 + n)
              for k in (1, 3, 8, 13) for n in range(k + 1, k + 40)]
    results = qemu.run_cases(exe, cases)
    assert len(results) == len(cases)
    for case, r in zip(cases, results):
        assert r.ret == case.exact_return() and r.prefix_ok and r.rest_untouched \
            and not r.sum_at_exit, case
