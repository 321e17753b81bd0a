"""`ends pieces` and `tail steps`: the alignment head and the last bytes of
a size-class routine stored as naturally aligned 4-, 2- and 1-byte pieces
built from whole aligned words, and the words the last loop leaves copied
by straight-line blocks of halving size.  Validation, the code they make,
their behaviour under the qemu oracle (exact returns at every fault), their
cost, and (slow) the proof for every n."""
from __future__ import annotations

import pytest

from copygen.emu.timing.profile import load_profile
from copygen.gen.build import build_file
from copygen.errors import CopygenError
from copygen.gen.front.validate import load_text
from copygen.measure.bench import Bench, Case
from copygen.mutate import oracle as qemu
from copygen.verify.symbolic.program import PATH_LIMIT, Program, back_edges, segment_paths

TARGET = "target u74 { xlen 64; misaligned slow }\n"
PIECES = TARGET + """
copy_user cu for u74 {
    small below 8
    align dst
    words unroll 8 schedule loads_first
    then words unroll 2
    shift unroll 4 schedule paired
    then shift unroll 2 schedule paired
    tail words
    ends pieces
    fault exact
}
clear_user cl for u74 { small below 8; align dst; words unroll 8; then words unroll 1;
                        tail bytes; ends pieces; fault exact }
"""


# the same without a shift copy (a misaligned source takes the byte loop):
# what the suite proves; the shift copy's pieces take several times as long
# to prove and bench/verify/verify_speed.py proves them in examples/u74tuned.copy
# (times in CHANGELOG.md)
NO_SHIFT = PIECES.replace("    shift unroll 4 schedule paired\n    then shift unroll 2 schedule paired\n",
                          "    shift off\n")

# steps of 2 and 1 words after `then words unroll 4`, of 4, 2 and 1 after
# the 8-word shift loop (no second shift class)
STEPS = (PIECES.replace("then words unroll 2", "then words unroll 4")
         .replace("shift unroll 4 schedule paired\n    then shift unroll 2 schedule paired\n",
                  "shift unroll 8 schedule paired\n")
         .replace("tail words", "tail steps"))
# steps and pieces without the shift copy: what the suite proves (the shift
# copy's steps and pieces take several times as long; times in CHANGELOG.md)
STEPS_NO_SHIFT = STEPS.replace("    shift unroll 8 schedule paired\n", "    shift off\n")


def _error(text: str) -> CopygenError:
    with pytest.raises(CopygenError) as info:
        load_text(text, "p.copy")
    return info.value


@pytest.mark.parametrize("edit, words", [
    # no size classes: the head is the bottom-tested byte loop of the kernel layout
    (("    then words unroll 2\n    shift unroll 4 schedule paired\n"
      "    then shift unroll 2 schedule paired\n", "    shift unroll 4\n"),
     ["needs size classes"]),
    # a last loop of two words leaves up to 15 bytes, more than pieces store
    (("    tail words\n", "    tail bytes\n"), ["leaves up to a whole block", "tail words"]),
    (("ends pieces", "ends halves"), ["syntax error"]),
])
def test_bad_ends_are_located_errors(edit, words):
    err = _error(PIECES.replace(*edit))
    assert err.loc.file == "p.copy" and err.loc.line > 1, err
    for w in words:
        assert w in err.message + (err.hint or ""), err


def test_ends_pieces_refused_where_the_source_is_not_aligned():
    text = PIECES.replace("misaligned slow", "misaligned fast").replace(
        "shift unroll 4 schedule paired\n    then shift unroll 2 schedule paired\n",
        "shift off\n")
    err = _error(text)
    assert "fast misaligned" in err.message and err.loc.line == 10


def test_string_routines_refuse_ends():
    err = _error(TARGET + "string s for u74 {\n  memcpy { small below 16; words unroll 2; "
                 "tail bytes; ends pieces }\n  memset { small below 16; words unroll 1;"
                 " tail bytes }\n}\n")
    assert "copy_user, clear_user and memcpy with `form asm`" in err.message and err.loc.line == 3


def test_steps_need_size_classes():
    err = _error(TARGET + "copy_user cu for u74 {\n    small below 80; words unroll 8\n"
                 "    shift unroll 1\n    tail steps\n    fault exact\n}\n")
    assert "`tail steps` needs size classes" in err.message and err.loc.line == 5


def test_steps_are_the_powers_of_two_below_the_last_block():
    from copygen.gen.phases.uaccess_phases import steps
    assert steps(1) == [] and steps(2) == [1] and steps(4) == [2, 1]
    assert steps(16) == [8, 4, 2, 1] and steps(6) == [4, 2, 1]
    ph = load_text(STEPS, "p.copy").copy_user.phases
    assert ph.tail == "steps" and ph.ends == "pieces" and ph.last_shift_unroll == 8


def test_one_word_last_loops_need_no_word_tail():
    text = (PIECES.replace("    tail words\n", "    tail bytes\n")
            .replace("then words unroll 2", "then words unroll 1")
            .replace("then shift unroll 2 schedule paired", "then shift unroll 1 schedule paired"))
    ph = load_text(text, "p.copy").copy_user.phases
    assert ph.ends == "pieces" and ph.tail == "bytes"
    assert load_text(PIECES.replace("ends pieces", "ends bytes"), "p.copy").copy_user.phases.ends \
        == "bytes"


def _build(tmp_path_factory, name: str, text: str):
    return _build_at(tmp_path_factory.mktemp(name), name, text)


def _build_at(d, name: str, text: str):
    src = d / f"{name}.copy"
    src.write_text(text)
    return build_file(src, d)


@pytest.fixture(scope="module")
def pieces_build(tmp_path_factory):
    return _build(tmp_path_factory, "pieces", PIECES)


@pytest.fixture(scope="module")
def steps_build(tmp_path_factory):
    return _build(tmp_path_factory, "steps", STEPS)


def _body(build, symbol: str) -> str:
    text = next(f for f in build.files if f.name == "uaccess.S").read_text()
    body = text[text.index(f"SYM_FUNC_START({symbol})"):]
    return body[:body.index("SYM_FUNC_END")]


def test_the_banner_names_classes_and_ends_within_80_columns(pieces_build):
    text = next(f for f in pieces_build.files if f.name == "uaccess.S").read_text()
    banner = text[:text.index("*/", text.index("Generated by"))]
    flat = " ".join(ln.lstrip(" *") for ln in banner.splitlines())
    for setting in ("then words unroll 2", "then shift unroll 2 schedule paired",
                    "tail words; ends pieces; fault exact"):
        assert setting in flat, setting
    assert max(len(ln) for ln in banner.splitlines()) <= 80


def test_pieces_replace_the_byte_loop_at_both_ends(pieces_build):
    for symbol, pfx in (("__asm_copy_to_user", "copy"), ("__clear_user", "clear")):
        body = _body(pieces_build, symbol)
        # leftover bytes go to the pieces, out of line after the return
        assert f"bne\ta0, a3, .L{pfx}_tail_pieces" in body
        assert body.index(f".L{pfx}_done:") < body.index(f".L{pfx}_tail_pieces:")
        head = body[body.index(f".L{pfx}_head:"):]
        # a copy's head goes on into the shift copy or, its own size-class
        # test made, falls into the first word loop laid out below it; a
        # clear's falls into its own size-class test (its second class in
        # line has none: n >= 8 leaves it a word)
        end = f".L{pfx}_words:" if pfx == "copy" else f".L{pfx}_head_done:"
        head = head[:head.index(end)]
        if pfx == "copy":
            fall = head[head.index("bgtu\ta0, a2, .Lcopy_words_then"):]
            assert "\tj\t" not in fall and "\tb" not in fall[4:], fall
        for op in ("sb", "sh", "sw"):
            assert f"fixup {op}, " in head, op
        assert "lbu" not in head and "bltu" not in head      # no byte loop in the head
    copy = _body(pieces_build, "__asm_copy_to_user")
    assert "bnez\tt0, .Lcopy_shift" in copy[copy.index(".Lcopy_head:"):]
    copy = _body(pieces_build, "__asm_copy_to_user")
    # the shift copy builds its last bytes from prev and stores them in pieces
    shift = copy[copy.index(".Lcopy_shift:"):copy.index(".Lcopy_tail_pieces:")]
    assert "j\t.Lcopy_pieces" in shift and "srl\tt0, a6, a4" in shift


def test_a_co_aligned_head_reaches_every_class_and_the_tail_words(pieces_build):
    """Co-aligned calls leave the head for the second class (short) or fall
    into the first word loop (a whole block left), then the one-word tail
    loop, whose store comes after both increments: every size across those
    boundaries copies exactly (Bench checks the bytes and the return)."""
    bench = Bench(pieces_build.elf, "u74_spec", 256)
    for off in (1, 3, 7):
        for n in range(16, 180, 3):
            bench.run(Case("__asm_copy_to_user", n, off, off))
    # a tail word costs 4 cycles (u74: the store waits 2 for its load, the
    # increments issue in between), not 5 (the store right after its load):
    # 88 and 104 bytes are 80 and 96 (whole blocks of 64 and 16) and one word
    cycles = {n: bench.run(Case("__asm_copy_to_user", n, 0, 0)).cycles for n in (80, 88, 96, 104)}
    assert cycles[88] - cycles[80] == 4 and cycles[104] - cycles[96] == 4, cycles


def test_steps_are_straight_line_blocks(steps_build):
    body = _body(steps_build, "__asm_copy_to_user")
    for name, words in (("step2", 2), ("step1", 1), ("shift_step4", 4), ("shift_step2", 2),
                        ("shift_step1", 1)):
        start = body.index(f"bgtu\ta0, a2, .Lcopy_{name}_skip")
        block = body[start:body.index(f".Lcopy_{name}_skip:")]
        assert block.count("fixup REG_S") == words, name
        assert "1b" not in block, name                      # no loop back
    assert ".Lcopy_shift_tail" not in body and ".Lcopy_tail_words_done" not in body


@pytest.mark.parametrize("which", ["pieces_build", "steps_build"])
def test_pieces_copy_exactly_under_qemu(which, request, tmp_path):
    build = request.getfixturevalue(which)
    exe = qemu.build_harness(build.objects, tmp_path / "harness")
    cases = [qemu.Case(fn, d, s, n, seed=n + 8 * d + s)
             for fn in ("to", "clear") for n in range(0, 90) for d in range(8) for s in range(8)
             if fn == "to" or s == 0]
    # faults just inside a buffer's first and last word, at every alignment
    for fn, side in (("to", "dst"), ("from", "src"), ("clear", "dst")):
        for n in (9, 15, 23, 40, 77, 150):
            for off in range(8):
                for into in (1, 3, 7, n - 5, n - 1):
                    base = qemu.PAGE - into
                    d, s = (base + off, off) if side == "dst" else (off, base + off)
                    if fn == "clear":
                        s = 0
                    if 0 < into < n and (d if side == "dst" else s) < qemu.PAGE:
                        cases.append(qemu.Case(fn, d, s, n, side, qemu.PAGE, seed=n + off))
    for i, fn in enumerate(("to", "from", "clear")):
        cases += qemu.random_cases(fn, 300, max_n=600, seed=70 + i)
    # every residue of the steps, at every misalignment
    cases += [qemu.Case("to", d, s, n, seed=n) for n in range(128, 200) for d, s in
              ((0, 0), (1, 1), (0, 3), (5, 2), (7, 1))]
    for case, r in zip(cases, qemu.run_cases(exe, cases)):
        assert not r.sum_at_exit, case
        assert r.prefix_ok and r.rest_untouched, case
        assert r.ret == case.exact_return(), (case, r.ret)


@pytest.mark.parametrize("schedule", ["pipelined", "loads_first"])
def test_pieces_after_a_one_word_shift_class_read_the_last_word_loaded(schedule, tmp_path):
    """A pipelined shift loop ends holding its last source word in the
    next-word register; the last bytes' pieces are built from prev, so the
    loop's last block must move it there even when no word tail follows."""
    text = PIECES.replace("then shift unroll 2 schedule paired",
                          f"then shift unroll 1 schedule {schedule}")
    build = _build_at(tmp_path, "one_word", text)
    exe = qemu.build_harness(build.objects, tmp_path / "harness")
    cases = [qemu.Case("to", d, s, n, seed=n) for n in range(8, 100) for d in range(8)
             for s in range(8) if d != s]
    for case, r in zip(cases, qemu.run_cases(exe, cases)):
        assert r.prefix_ok and r.rest_untouched and r.ret == 0, case


def _against(build, text: str, tmp_path):
    """cycles(symbol, n, src, dst) -> (this build's, the variant `text`'s),
    u74 model, warm L1."""
    src = tmp_path / "variant.copy"
    src.write_text(text)
    prof = load_profile("u74_spec")
    ours, theirs = Bench(build.elf, prof, 4096), Bench(build_file(src, tmp_path).elf, prof, 4096)
    return lambda sym, n, s, d: (ours.run(Case(sym, n, s, d)).cycles,
                                 theirs.run(Case(sym, n, s, d)).cycles)


def test_pieces_cut_the_cost_of_short_co_aligned_copies(pieces_build, tmp_path):
    """The head's bytes no longer go through the byte loop, 5 cycles a byte
    in a copy and 2 in a fill (u74 model): a 7-byte head and a 1-byte tail."""
    cycles = _against(pieces_build, PIECES.replace("ends pieces", "ends bytes"), tmp_path)
    for n in (16, 64):
        a, b = cycles("__asm_copy_to_user", n, 1, 1)
        assert a + 15 <= b, (n, a, b)
        a, b = cycles("__clear_user", n, 0, 1)
        assert a + 5 <= b, (n, a, b)


def test_steps_cut_the_cost_of_what_the_shift_loop_leaves(steps_build, tmp_path):
    """15 words left after the 8-word shift loop: three steps instead of a
    2-word loop and a 1-word loop (u74 model)."""
    cycles = _against(steps_build, STEPS.replace("shift unroll 8 schedule paired\n",
                                                 "shift unroll 8 schedule paired\n"
                                                 "    then shift unroll 2 schedule paired\n")
                      .replace("tail steps", "tail words"), tmp_path)
    a, b = cycles("__asm_copy_to_user", 64 + 56 + 1, 3, 0)
    assert a + 5 <= b, (a, b)


def test_word_steps_are_skipped_by_one_branch(steps_build, tmp_path):
    """With no whole word left after the last word loop, one taken branch
    skips every step: as cheap as the one-word loop's single test (u74
    model), where a test per step costs a mispredicted branch each."""
    body = _body(steps_build, "__asm_copy_to_user")
    guard = body.index("bgtu\ta0, a2, .Lcopy_steps_done")
    assert guard < body.index("bgtu\ta0, a2, .Lcopy_step2_skip") < body.index(".Lcopy_steps_done:")
    cycles = _against(steps_build, STEPS.replace("tail steps", "tail words"), tmp_path)
    # aligned 64 B and 96 B: whole 4-word blocks, nothing left for the tail
    for n in (64, 96):
        a, b = cycles("__asm_copy_to_user", n, 0, 0)
        assert a <= b, (n, a, b)


def _loops_and_joins(build, symbol):
    prog = Program.load(str(build.elf))
    routine = prog.routine(prog.image.address_of(symbol))
    back = back_edges(routine.entry, routine.edges)
    loops = {dst for _, dst in back}
    return prog, routine, back, loops, routine.cut_points - loops


def test_steps_and_pieces_get_cut_points_where_their_paths_join(steps_build):
    """Head pieces x steps x tail pieces: thousands of paths between two loop
    heads, until the joins after the loops become cut points too."""
    prog, routine, back, loops, joins = _loops_and_joins(steps_build, "__asm_copy_to_user")
    assert segment_paths(routine.entry, routine.edges, back, loops) > PATH_LIMIT
    assert joins and segment_paths(routine.entry, routine.edges, back, routine.cut_points) \
        <= PATH_LIMIT
    # each starts a class or a step: it sets the class's limit, a2 = end - size
    assert all(prog.fetch(pc).name == "addi" and prog.fetch(pc).rd == 12 for pc in joins)


def test_routines_with_few_paths_keep_their_loop_heads_only(pieces_build, built_examples):
    for build in (built_examples["kernel2021"], built_examples["u74pipelined"],
                  built_examples["c910tuned"]):
        for symbol in ("__asm_copy_to_user", "__clear_user"):
            assert not _loops_and_joins(build, symbol)[-1], (build.elf, symbol)
    assert not _loops_and_joins(pieces_build, "__clear_user")[-1]


def test_the_shift_loops_exit_is_cut_when_pieces_multiply_the_paths(pieces_build):
    """Head pieces x the shift copy's classes x tail pieces: 409 paths from
    the entry of the pieces copy; the joins where each size class begins
    become cut points, the shift copy's second class among them, so the
    tail after the shift loops is explored from there and not once more
    from the first shift loop's head through its whole block."""
    prog, routine, back, loops, joins = _loops_and_joins(pieces_build, "__asm_copy_to_user")
    assert segment_paths(routine.entry, routine.edges, back, loops) > PATH_LIMIT
    assert segment_paths(routine.entry, routine.edges, back, routine.cut_points) <= PATH_LIMIT
    assert len(joins) == 2
    assert all(prog.fetch(pc).name == "addi" and prog.fetch(pc).rd == 12 for pc in joins)

    def shifts(head) -> bool:          # a shift copy's loop: srl in its first instructions
        names, pc = [], head
        for _ in range(6):
            names.append(prog.fetch(pc).name)
            pc += prog.fetch(pc).length
        return "srl" in names
    # each join is followed by its class's loop head; one of them the shift copy's
    assert any(shifts(min(h for h in loops if h > j)) for j in joins)
    assert not all(shifts(min(h for h in loops if h > j)) for j in joins)


@pytest.mark.slow
@pytest.mark.parametrize("text, symbol, kind", [(STEPS_NO_SHIFT, "__asm_copy_from_user", "from"),
                                                (NO_SHIFT, "__clear_user", "clear")],
                         ids=["steps-copy_from_user", "pieces-clear_user"])
def test_pieces_and_steps_are_proved_for_every_n(tmp_path_factory, text, symbol, kind):
    from copygen.verify.checks.prove import prove_routine
    from copygen.verify.contract.verdict import verdict
    build = _build(tmp_path_factory, "noshift", text)
    assert ".Lcopy_shift" not in _body(build, "__asm_copy_to_user")
    rep = prove_routine(str(build.elf), symbol, kind)
    assert verdict(rep) == "proved", rep.status
