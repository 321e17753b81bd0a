"""The verifier proves correct routines and names the clause a bug breaks.

Proofs take tens of seconds per routine (see bench/verify/verify_speed.py), so the
full-size ones are marked slow; they run in CI too.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from copygen.mutate.edits import KINDS
from copygen.verify.checks.prove import prove_routine

ROOT = Path(__file__).resolve().parents[2]
KERNEL_STYLE = ROOT / "tests" / "kernel_style"


def _elf(src: Path, tmp: Path) -> str:
    from copygen.inputs import linked_elf
    return str(linked_elf(str(src), tmp))


@pytest.fixture(scope="module")
def pre2021(tmp_path_factory):
    from copygen.gen.build import build_file
    return str(build_file(ROOT / "examples" / "pre2021.copy",
                          tmp_path_factory.mktemp("pre")).elf)


@pytest.mark.slow
def test_clear_user_is_proved_for_every_n(pre2021):
    rep = prove_routine(pre2021, "__clear_user", "clear")
    assert all(st == "proved" for st in rep.status.values()), rep.as_dict()
    assert set(rep.status) >= {"C1", "C3", "C4", "C6", "S1", "S2", "B1", "T1"}


def _mutant(text: str, kind: str, routine_marker: str):
    """The first mutant of `kind` whose site lies in __clear_user."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(routine_marker))
    for m in KINDS[kind](text):
        if m.site > start + 1:
            return m
    raise AssertionError(f"no {kind} mutant in {routine_marker}")


@pytest.mark.parametrize("kind,clauses", [
    ("sum_set_on_exit", {"S1"}),
    ("sum_never_set", {"S2"}),
    ("loop_bound_off_by_szreg_minus_1", {"B1", "C4", "C1"}),
    ("fixup_return_size", {"C5", "C4", "C6"}),
])
def test_mutants_of_clear_user_are_caught_with_their_clause(kind, clauses, tmp_path):
    text = (ROOT / "out" / "pre2021" / "uaccess.S").read_text()
    m = _mutant(text, kind, "SYM_FUNC_START(__clear_user)")
    src = tmp_path / "mutant.S"
    src.write_text(m.text)
    rep = prove_routine(_elf(src, tmp_path), "__clear_user", "clear")
    violated = {c for c, st in rep.status.items() if st == "violated"}
    assert violated & clauses, (m.description, rep.as_dict())


@pytest.mark.slow
def test_a_last_byte_left_unwritten_breaks_c1_and_c3_each_by_its_own_check(tmp_path):
    """The byte loop stops a byte short and returns 0: without a fault that
    breaks C1, with one at the last byte C3.  Both clauses' covers at that
    return are asked as one check; when it fails each is run, and each
    clause is reported with its own counterexample (all_clauses: the proof
    runs although the sample runs already break C1)."""
    text = (ROOT / "out" / "pre2021" / "uaccess.S").read_text()
    start = text.index("SYM_FUNC_START(__clear_user)")
    head, body = text[:start], text[start:]
    old = ("\tbgeu\ta0, a3, .Lclear_done\n1:\n\tfixup sb, zero, 0(a0), .Lclear_fault\n"
           "\taddi\ta0, a0, 1\n\tbltu\ta0, a3, 1b\n")
    assert old in body
    short = old.replace("a3,", "t5,").replace("a3\n", "t5\n")
    src = tmp_path / "short.S"
    src.write_text(head + body.replace(old, "\taddi\tt5, a3, -1\n" + short))
    rep = prove_routine(_elf(src, tmp_path), "__clear_user", "clear", all_clauses=True)
    assert rep.status["C1"] == "violated" and rep.status["C3"] == "violated", rep.as_dict()
    assert rep.examples["C1"]["returned"] == 0 and rep.examples["C3"]["returned"] == 0


def test_return_size_bug_is_caught_in_clear_user(tmp_path):
    rep = prove_routine(_elf(KERNEL_STYLE / "bug_return_size_on_fault.S", tmp_path),
                        "__clear_user", "clear")
    # a run shows it: replayed from the proof, or one of the runs before it (verify.counterexamples.early)
    assert rep.status["C5"] == "violated"
    assert "replayed" in rep.detail["C5"] or "before the proof" in rep.detail["C5"]
    assert rep.examples["C5"]["returned"] == rep.examples["C5"]["n"]


def test_cli_verify_json_and_exit_status(tmp_path):
    r = subprocess.run([sys.executable, "-m", "copygen", "verify", str(KERNEL_STYLE / "bug_return_size_on_fault.S"),
                        "--routine", "__clear_user", "--json", "--workdir", str(tmp_path),
                        "--proof-cache", str(tmp_path / "proofs")],
                       capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    out = json.loads(r.stdout)
    assert (out["schema"], out["command"], out["ok"]) == (1, "verify", False)
    (rep,) = out["files"][0]["reports"]
    assert rep["symbol"] == "__clear_user" and rep["status"]["C5"] == "violated"
    bad = subprocess.run([sys.executable, "-m", "copygen", "verify", str(tmp_path / "none.S"), "--json"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no such file" in bad.stderr
    err = json.loads(bad.stdout)
    assert err["ok"] is False and "no such file" in err["error"]["message"]


@pytest.fixture(scope="module")
def sum_csrs_clear_user(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sum_csrs")
    return prove_routine(_elf(KERNEL_STYLE / "bug_sum_csrs_on_fault.S", tmp), "__clear_user", "clear")


def test_sum_csrs_bug_is_caught(sum_csrs_clear_user):
    rep = sum_csrs_clear_user
    assert rep.status["S1"] == "violated", rep.as_dict()
    assert "SUM at exit set" in rep.detail["S1"]


def test_a_counterexample_shows_only_what_its_clause_is_about(sum_csrs_clear_user):
    """clear_user has no source, and S1 is about SUM at the return: its
    counterexample names no source, no byte of dst, no return value."""
    ex, text = sum_csrs_clear_user.examples["S1"], sum_csrs_clear_user.detail["S1"]
    assert ex["sum_at_exit"] is True and ex["n"] >= 0 and "dst" in ex and "fault_offset" in ex
    assert not {"src", "src_bytes", "returned", "dst_after", "wrong", "modified"} & set(ex), ex
    assert "SUM at exit set" in text
    for word in ("src=", "source", "returned", "differ"):
        assert word not in text, text


def test_counterexample_fields_follow_the_clause_and_the_routine():
    """Each clause's counterexample, from one concrete run: the call's own
    arguments, and of the outcome only what the clause judges."""
    from copygen.verify.invariants.concrete import MARGIN, Outcome, Scenario
    from copygen.verify.counterexamples.replay import describe, example
    D, S = 0x40_0000_1000, 0xFFFF_FFD0_0000_2000
    to = Scenario("to", D, S, 8, bytes(range(1, 9)), bytes(range(0x81, 0x89)), F=D + 4)
    # the fault at dst+4: 4 bytes returned as not copied; dst[1] wrong, dst[6] modified
    got = bytes([1, 0x55, 3, 4, 0x85, 0x86, 0x77, 0x88])
    out = Outcome(ret=4, sum_at_exit=True, dst=got, before=to.initial(D - MARGIN, MARGIN),
                  after=b"\x00" + to.initial(D + 9, MARGIN - 1))
    c3, c4, c2, s1 = (example(to, out, c) for c in ("C3", "C4", "C2", "S1"))
    assert [w["i"] for w in c3["wrong"]] == [1] and c3["src_bytes"] == to.src.hex()
    assert [w["i"] for w in c4["modified"]] == [6] and not {"wrong", "src_bytes"} & set(c4)
    assert c2["returned"] == 4 and not {"wrong", "modified", "src_bytes", "sum_at_exit"} & set(c2)
    assert s1["sum_at_exit"] and not {"wrong", "returned"} & set(s1) and s1["src"] == hex(S)
    assert example(to, out, "B1")["modified_outside"] == [{"offset": 8, "got": 0, "before": 0xEE}]
    assert "1 bytes differ" in describe(to, out, "C3") and "1 bytes counted as not copied modified" \
        in describe(to, out, "C4") and "returned" not in describe(to, out, "S1")
    clear = Scenario("clear", D, S, 4, bytes(4), bytes([9, 9, 9, 9]))
    ok = Outcome(ret=0, dst=bytes([0, 0, 9, 0]))
    c1 = example(clear, ok, "C1")
    assert "src" not in c1 and "src_bytes" not in c1 and [w["i"] for w in c1["wrong"]] == [2]
    assert "src=" not in describe(clear, ok, "C1") and "source" not in describe(clear, ok, "C1")
    memset = Scenario("memset", D, S, 4, bytes(4), bytes(4), C=0x41)
    assert example(memset, Outcome(ret=D, dst=b"AAAA"), "A1") == {
        "n": 4, "dst": hex(D), "c": 0x41, "callee_saved_kept": True}


def _violated(rep) -> set:
    return {c for c, st in rep.status.items() if st == "violated"}


@pytest.mark.slow
def test_loop_bound_2021_bug_is_caught(tmp_path):
    """docs/contract.md, B1 (2021): an extra unrolled block stores past dst + n."""
    rep = prove_routine(_elf(KERNEL_STYLE / "bug_loop_bound_2021.S", tmp_path),
                        "__asm_copy_to_user", "to")
    assert "B1" in _violated(rep), rep.as_dict()
    assert any(w in rep.detail["B1"] for w in ("replayed", "path from entry", "before the proof"))


@pytest.mark.slow
def test_fault_return_from_src_end_bug_is_caught(tmp_path):
    """docs/contract.md, C2 (before 2018): the fault exit returns src end - dst pointer."""
    rep = prove_routine(_elf(KERNEL_STYLE / "bug_fault_return_from_src_end.S", tmp_path),
                        "__asm_copy_to_user", "to")
    assert "C2" in _violated(rep), rep.as_dict()
    ex = rep.examples["C2"]
    assert ex["returned"] > ex["n"]          # the replay shows the meaningless return


@pytest.mark.slow
def test_gcc_memset_is_proved(tmp_path):
    """GCC's code for string.c memset (literal-pool constant, bne loops, a
    word loop whose end is computed with & -8) is proved for every n."""
    from copygen.gen.build import build_file
    elf = str(build_file(ROOT / "examples" / "string2021.copy", tmp_path).elf)
    rep = prove_routine(elf, "memset", "memset")
    assert all(st == "proved" for st in rep.status.values()), rep.as_dict()


@pytest.mark.slow           # minutes: a full proof of GCC's unrolled memcpy
def test_gcc_unrolled_memcpy_is_proved(tmp_path):
    """GCC's 8-word loop for c910fast's memcpy runs its dst cursor up to an
    end a whole number of 64-byte blocks away, then a word loop, then one
    overlapping tail word: every clause is proved for every n."""
    from copygen.gen.build import build_file
    elf = str(build_file(ROOT / "examples" / "c910fast.copy", tmp_path).elf)
    rep = prove_routine(elf, "memcpy", "memcpy")
    assert all(st == "proved" for st in rep.status.values()), rep.as_dict()


COUNT_IN_A2 = """
target c910 {
    xlen 64
    misaligned fast
    profile c910
}

string count_lib for c910 {
    memcpy {
        small below 8
        align none
        words unroll 2 schedule interleave
        shift off
        tail overlap
    }
    memmove {
        forward memcpy
        backward words
    }
    memset {
        small below 8
        align none
        words unroll 8
        tail overlap
    }
}
"""


@pytest.mark.parametrize("fn", ["memcpy", "memset"])
@pytest.mark.slow
def test_gcc_loop_end_from_the_count_register_is_proved(tmp_path, fn):
    """With bytes only below 8, GCC runs the block loop's cursor up to
    dst + (n & -block) and keeps n in a2 across it; the word step and the
    overlapping tail after it test n & 8 and n & 15.  Proving them needs
    the loop end tied to the count register (a `mask` invariant whose
    second register the loop leaves alone): every clause proved."""
    from copygen.gen.build import build_file
    src = tmp_path / "count.copy"
    src.write_text(COUNT_IN_A2)
    elf = str(build_file(src, tmp_path / "out").elf)
    rep = prove_routine(elf, fn, fn)
    assert all(st in ("proved", "yes") for st in rep.status.values()), rep.as_dict()


ONE_WORD_SHIFT = """
target u74 {
    xlen 64
    misaligned slow
}

string one_word_lib for u74 {
    memcpy {
        small below 8
        align dst
        words unroll 2
        shift unroll 2
        tail words
    }
    memmove {
        forward memcpy
        backward words
    }
    memset {
        small below 8
        align dst
        words unroll 2
        tail words
    }
}
"""


@pytest.mark.slow           # minutes: a full proof with a shift copy
def test_one_shifted_word_after_the_byte_head_is_proved(tmp_path):
    """With `tail words`, the shift copy's whole words left after its block
    loop go one at a time; GCC makes that loop one shifted word, which a
    call with fewer than two words after the byte head reaches with the
    shift computed from the source cursor the head moved.  No loop head's
    register pins that shift: its store is proved with the value each
    misalignment case forces on it.  Every clause proved (B2s, a
    property, by design not: the shift copy loads whole aligned words)."""
    from copygen.gen.build import build_file
    src = tmp_path / "one_word.copy"
    src.write_text(ONE_WORD_SHIFT)
    elf = str(build_file(src, tmp_path / "out").elf)
    rep = prove_routine(elf, "memcpy", "memcpy")
    rep.status.pop("B2s")
    assert all(st == "proved" for st in rep.status.values()), rep.as_dict()


def test_a_shift_amount_is_forced_only_when_the_facts_leave_one_value():
    """ByteProver.forced: the value the facts leave a term, nothing when
    they leave two, and no cases at all when the facts contradict."""
    import z3
    from copygen.verify.checks.dataproof import ByteProver
    from copygen.verify.contract.world import World
    w = World("memcpy")
    amount = (w.S + 5) & z3.BitVecVal(7, 64)
    pr = ByteProver(w, [w.S & z3.BitVecVal(7, 64) == 6])
    fix = pr.forced([], [amount << 3])
    assert [(str(t), v.as_long()) for t, v in fix] == [(str(amount << 3), 24)]
    assert pr.forced([], [w.S << 3]) is None
    assert pr.forced([w.S & z3.BitVecVal(7, 64) == 1], [amount]) == []


@pytest.mark.slow
def test_gcc_memcpy_with_a_stack_frame_is_proved(tmp_path):
    """u74pipelined's memcpy saves s0-s2 before its shift copy and restores
    them after: proved for every n, but for the strict B2s (by design the
    shift copy loads whole aligned words)."""
    from copygen.gen.build import build_file
    elf = str(build_file(ROOT / "examples" / "u74pipelined.copy", tmp_path).elf)
    rep = prove_routine(elf, "memcpy", "memcpy")
    assert rep.status.pop("B2s") == "violated", rep.as_dict()
    assert all(st == "proved" for st in rep.status.values()), rep.as_dict()


def _fixture_and_mutant(tmp_path, name, symbol, old, new):
    """The proof of tests/asm/NAME (which must prove every clause) and of
    the same file with `old` replaced by `new`, every clause of it (not
    stopping at what the sample runs show)."""
    ok = ROOT / "tests" / "asm" / name
    rep = prove_routine(_elf(ok, tmp_path / "ok"), symbol, symbol)
    assert all(st == "proved" for st in rep.status.values()), rep.as_dict()
    text = ok.read_text()
    assert old in text
    bad = tmp_path / "bad.S"
    bad.write_text(text.replace(old, new))
    return prove_routine(_elf(bad, tmp_path / "bad"), symbol, symbol, all_clauses=True)


@pytest.mark.slow
def test_saved_register_restored_from_the_wrong_slot_is_caught(tmp_path):
    """A loop head keeps the prologue's stack frame (sp and what was saved):
    the correct routine is proved, one restoring s0 from the wrong slot is
    violated under A1 with a replay."""
    rep = _fixture_and_mutant(tmp_path, "memcpy_saves_s0.S", "memcpy",
                              "REG_L\ts0, 8(sp)", "REG_L\ts0, 0(sp)")
    assert rep.status["A1"] == "violated", rep.as_dict()
    assert rep.status["C1"] == "proved", rep.as_dict()


@pytest.mark.slow
def test_a_store_when_n_is_zero_is_caught(tmp_path):
    """Every n includes n = 0: a memset whose n == 0 branch stores a byte
    (its loop, and so its invariant, untouched) is violated under B1 with
    n = 0 from the proof's own model; the correct one is proved."""
    rep = _fixture_and_mutant(tmp_path, "memset_bytes.S", "memset", "\tbeqz\ta2, 2f",
                              "\tbnez\ta2, 1f\n\tsb\ta1, 0(a0)\n\tj\t2f")
    assert rep.status["B1"] == "violated", rep.as_dict()
    assert rep.examples["B1"]["n"] == 0
    assert "replayed" in rep.detail["B1"]          # the proof's model, not the small search
    assert rep.status["C1"] == "proved", rep.as_dict()


def _pre2021_to_user_mutant(tmp_path, old, new):
    """The proof of pre2021's __asm_copy_to_user (out/, kept fresh by
    test_freshness) with the first `old` replaced by `new`."""
    text = (ROOT / "out" / "pre2021" / "uaccess.S").read_text()
    assert old in text
    bad = tmp_path / "bad.S"
    bad.write_text(text.replace(old, new, 1))
    return prove_routine(_elf(bad, tmp_path / "bad"), "__asm_copy_to_user", "to")


@pytest.mark.slow
def test_a_violation_no_model_shows_is_found_among_small_calls(tmp_path):
    """pre2021's byte loop entered with `bgtu` instead of `bgeu`: it stores
    one byte past the end whenever the word loop leaves nothing (n a
    multiple of 8 after the head) or n is 0.  The proof's failing path
    starts at a loop head whose solver state no call reaches as such; the
    small concrete search finds a call that shows it."""
    marker = ".Lcopy_bytes:\n\tbgeu\ta0, a3, .Lcopy_done"
    rep = _pre2021_to_user_mutant(tmp_path, marker, marker.replace("bgeu", "bgtu"))
    assert rep.status["B1"] == "violated", rep.as_dict()
    ex = rep.examples["B1"]
    assert ex["n"] == 0 or ex["n"] >= 16


@pytest.mark.slow
def test_a_buffer_starting_on_an_inaccessible_page_is_a_fault_point(tmp_path):
    """The first inaccessible byte may be the user buffer's first one, at
    any alignment: pre2021's dst head store without its extable entry (a
    page boundary can never fall inside the head, so only this case shows
    it) is violated under X1, replayed with the page of dst inaccessible."""
    head = ".Lcopy_head:\n"
    store = "fixup sb, t0, 0(a0), .Lcopy_fault"
    text = (ROOT / "out" / "pre2021" / "uaccess.S").read_text()
    block = text[text.index(head):text.index(store, text.index(head)) + len(store)]
    rep = _pre2021_to_user_mutant(tmp_path, block, block.replace(store, "sb t0, 0(a0)"))
    assert rep.status["X1"] == "violated", rep.as_dict()
    ex = rep.examples["X1"]
    assert ex["fault_offset"] == 0 and int(ex["dst"], 16) % 8 != 0


@pytest.mark.slow
def test_a_word_loop_store_without_extable_is_replayed_past_the_threshold(tmp_path):
    """kernel2021's fourth store of the 8-word block without its extable
    entry: the solver's model sits at the loop head with n = 64, which a
    call takes down the byte path; the replay moves n past the threshold
    and the fault through the buffer until the unhandled store oopses."""
    store = "fixup REG_S, a7, 3*SZREG(a0), .Lcopy_retry_a0_a1_plus_24"
    text = (ROOT / "out" / "kernel2021" / "uaccess.S").read_text()
    assert store in text
    bad = tmp_path / "bad.S"
    bad.write_text(text.replace(store, "REG_S a7, 3*SZREG(a0)", 1))
    rep = prove_routine(_elf(bad, tmp_path / "bad"), "__asm_copy_to_user", "to")
    assert rep.status["X1"] == "violated", rep.as_dict()
    ex = rep.examples["X1"]
    assert ex["n"] > 64 and ex["fault_offset"] % 64 == 24, ex
    assert "oops" in ex["error"]


def test_the_bytes_of_a_store_are_checked_in_one_query_and_leaf_by_leaf_on_unknown(monkeypatch):
    """ByteProver.all_bytes_ok: the leaves of several bytes in one query;
    true only when every leaf holds, false when one byte's leaf does not
    (whichever byte it is), and the same answers leaf by leaf when the
    batch query gives up."""
    import z3
    from copygen.verify.checks import dataproof
    from copygen.verify.contract.world import World
    w = World("memcpy")
    x = z3.BitVec("x", 64)
    pr = dataproof.ByteProver(w, [*w.preconditions(), z3.ULT(x, z3.BitVecVal(8, 64))])

    def byte(k, wrong=False):
        # SRC[S + k] when x < 8 (always, here), else SRC[S + k + 1]
        right = z3.Select(w.SRC, w.S + k + (1 if wrong else 0))
        return z3.If(z3.ULT(x, z3.BitVecVal(8, 64)), right, z3.Select(w.SRC, w.S + k + 1))

    def items(bad=None):
        return [(byte(k, k == bad), z3.Select(w.SRC, w.S + k), None, None, ()) for k in range(8)]
    asked = []
    real = dataproof.ByteProver._any_fails
    monkeypatch.setattr(dataproof.ByteProver, "_any_fails",
                        lambda self, obs: asked.append(len(obs)) or real(self, obs))
    assert pr.all_bytes_ok(items())
    assert asked == [16]
    for bad in (0, 5, 7):
        assert not pr.all_bytes_ok(items(bad))
    monkeypatch.setattr(dataproof.ByteProver, "_any_fails", lambda self, obs: z3.unknown)
    assert pr.all_bytes_ok(items())
    assert not pr.all_bytes_ok(items(5))
