"""`ends overlap` in a copy_user (a target with fast misaligned access):
the alignment head is one misaligned word, the end one misaligned word
(`tail overlap`).  Validation, the code, results under qemu-user with
faults on either side, the cycles on c910, and the proof."""
from __future__ import annotations

import pytest

from copygen.errors import CopygenError
from copygen.gen.front.validate import load_text
from copygen.measure.bench import Bench, Case
from copygen.mutate import oracle as qemu
from tests.conftest import assert_exact_under_qemu, build_text

COPY = """target c910 {{ xlen 64; misaligned {speed}; profile c910 }}
copy_user k for c910 {{
    small below 16
    align dst
    words unroll 4 schedule pipelined
    then words unroll 2
    {ends}
    shift off
    tail {tail}
    fault exact
}}
"""


def _text(ends="ends overlap", tail="overlap", speed="fast"):
    return COPY.format(ends=ends, tail=tail, speed=speed)


@pytest.fixture(scope="module")
def word(tmp_path_factory):
    return build_text(tmp_path_factory, _text(), "head_word")


@pytest.fixture(scope="module")
def byte(tmp_path_factory):
    return build_text(tmp_path_factory, _text(ends=""), "head_bytes")


@pytest.mark.parametrize("tail, speed, says", [
    ("words", "fast", "needs a target with fast misaligned access and `tail overlap`"),
    ("overlap", "slow", "this target")])
def test_a_copy_takes_overlapping_ends_only_with_fast_words_at_both_ends(tail, speed, says):
    with pytest.raises(CopygenError, match=says) as err:
        load_text(_text(tail=tail, speed=speed), "t.copy")
    assert err.value.loc is not None and err.value.loc.line > 0


def test_the_head_is_two_words_whose_faults_resume_the_byte_loop(word):
    text = (word.outdir / "uaccess.S").read_text()
    head = text[text.index(".Lcopy_head:"):]
    head = head[:head.index("j\t.Lcopy_head_done")]
    accesses = [ln.split()[1] for ln in head.splitlines() if ln.strip().startswith("fixup")]
    assert accesses == ["REG_L,", "REG_L,", "REG_S,", "REG_S,"]     # both loads first
    assert head.count(".Lcopy_bytes") == 4 and "lbu" not in head and "1:" not in head


@pytest.mark.parametrize("fn", ["to", "from"])
def test_the_copies_are_exact_under_qemu(word, fn, tmp_path):
    """Every size up to 80 at every offset pair, and calls whose user
    buffer meets an unmapped page a few bytes in (the head word faults)
    or further on."""
    exe = qemu.build_harness(word.objects, tmp_path / "harness")
    side = "dst" if fn == "to" else "src"
    cases = [qemu.Case(fn, d, s, n, seed=n * 64 + 8 * d + s)
             for n in range(81) for d in range(8) for s in range(8)]
    for k in (1, 3, 7, 8, 13, 40):
        for n in range(k + 1, k + 50, 3):
            for other in (0, 5):
                d, s = (qemu.PAGE - k, other) if side == "dst" else (other, qemu.PAGE - k)
                cases.append(qemu.Case(fn, d, s, n, side, qemu.PAGE, seed=k * 1000 + n))
    assert_exact_under_qemu(exe, cases)


def test_a_misaligned_copy_costs_less_on_c910(word, byte):
    """The byte head took one iteration a byte up to the aligned dst; the
    two words cost the same whatever the offset (a cycle more than a head
    of one byte), and nothing when dst is aligned."""
    new, old = Bench(word.elf, "c910", 128), Bench(byte.elf, "c910", 128)
    for n, s, d in ((72, 1, 1), (64, 3, 3), (32, 5, 2), (128, 2, 4)):
        case = Case("__asm_copy_to_user", n, s, d)
        assert new.run(case).cycles < old.run(case).cycles, case
    for n, s, d in ((16, 0, 0), (72, 0, 0), (128, 0, 0)):
        case = Case("__asm_copy_to_user", n, s, d)
        assert new.run(case).cycles <= old.run(case).cycles, case
    case = Case("__asm_copy_to_user", 72, 7, 7)
    assert new.run(case).cycles <= old.run(case).cycles + 1


@pytest.mark.slow
def test_the_head_word_is_proved_for_every_n(word):
    from copygen.verify.checks.prove import prove_routine
    rep = prove_routine(str(word.elf), "__asm_copy_to_user", "to")
    rep.status.pop("B2s")
    assert all(st == "proved" for st in rep.status.values()), rep.as_dict()


@pytest.fixture(scope="module")
def one_word(tmp_path_factory):
    text = _text().replace("words unroll 4 schedule pipelined\n    then words unroll 2",
                           "words unroll 2\n    then words unroll 1")
    return build_text(tmp_path_factory, text, "head_word_one")


def test_no_tail_word_loop_follows_a_one_word_loop(one_word):
    """The second class copies a word a turn and no shift copy leads to
    the tail: less than a word is left, so the tail is the overlapping
    word alone (a word loop there would be dead code, never reached by a
    run, and the prover would have no invariant for its head)."""
    text = (one_word.outdir / "uaccess.S").read_text()
    tail = text[text.index(".Lcopy_tail:"):text.index(".Lcopy_done:")]
    assert "_tail_words_done" not in text and "1b" not in tail
    assert tail.count("fixup") == 2


@pytest.mark.slow
def test_the_head_word_before_one_word_loops_is_proved_for_every_n(one_word):
    from copygen.verify.checks.prove import prove_routine
    rep = prove_routine(str(one_word.elf), "__asm_copy_to_user", "to")
    assert all(st == "proved" for st in rep.status.values()), rep.as_dict()


DEAD_LOOP = """.Lcopy_tail:
	addi	a2, a3, -SZREG
	bgtu	a0, a2, .Ldead_done
9:
	fixup REG_L, t0, 0(a1), .Lcopy_bytes
	addi	a1, a1, SZREG
	addi	a0, a0, SZREG
	fixup REG_S, t0, -SZREG(a0), .Lcopy_bytes
	bleu	a0, a2, 9b
.Ldead_done:
"""


@pytest.mark.slow
def test_a_loop_no_run_reaches_is_proved_never_entered(one_word, tmp_path):
    """A word loop after the one-word loop (what the generator once emitted
    there): no sample run reaches its head, so there is nothing to guess
    from; the guess that it is never reached holds (no path into it is
    feasible) and the copy is proved, the loop's own paths vacuously."""
    from copygen.inputs import linked_elf
    from copygen.verify.checks.prove import prove_routine
    text = (one_word.outdir / "uaccess.S").read_text().replace(".Lcopy_tail:\n", DEAD_LOOP)
    src = tmp_path / "dead.S"
    src.write_text(text)
    elf = linked_elf(str(src), tmp_path / "dead")
    rep = prove_routine(str(elf), "__asm_copy_to_user", "to")
    assert all(st == "proved" for st in rep.status.values()), rep.as_dict()
    assert sorted(rep.invariants.values()).count(1) == 1     # the dead loop's head: `never`
