"""`copygen patch --routine vector_usercopy` on kernel trees made here: a git
tree with arch/riscv/lib/uaccess_vector.S from tests/kernel_style/
vector_6_12.S or vector_mainline.S and an arch/riscv/Kconfig of our own
with the RISCV_ISA_V_UCOPY_THRESHOLD block.  The loop's body is replaced
(the 6.8 layout's __asm_vector_usercopy, mainline's _sum_enabled loop),
every other line is kept byte for byte, the Kconfig default becomes the
strategy's threshold, the proofs before and after are in the message, the
patch applies with `git am`; a file in no known layout, a Kconfig without
the symbol, a strategy without a vector phase and an unproved loop are
refused with the tree left as it was.

The proofs run at VLEN 128 only (vprove.VLENS patched; about 6 s an entry
point, shared through one proof cache per module run); `copygen patch` at
the four VLENs is tests/verify/test_vector_kernel.py's and docs/vector.md's.
"""
from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.gen import toolchain
from copygen.patch import kernelfile, vector
from copygen.verify.vector import vprove
from tests.conftest import ROOT

HERE = ROOT / "tests" / "kernel_style"
STRATEGY = """target x60 { xlen 64; misaligned slow; profile x60 }
copy_user v for x60 {
    small below 71
    words unroll 8
    tail bytes
    fault exact
    vector e8 m8 above 1024 loads plain vlen 128..1024
}
"""
# written for these tests in the shape of arch/riscv/Kconfig's blocks
KCONFIG = """menu "Platform type"

config RISCV_ISA_V
\tbool "Vector extension support"
\tdefault y

config RISCV_ISA_V_UCOPY_THRESHOLD
\tint "Threshold size for vectorized user copies"
\tdepends on RISCV_ISA_V
\tdefault 768
\thelp
\t  Copies of at least this many bytes take the vector path.

config RISCV_ISA_V_PREEMPTIVE
\tbool "Preemptible kernel-mode vector"
\tdefault y

endmenu
"""


@pytest.fixture(autouse=True)
def _setup(monkeypatch, tmp_path_factory):
    empty = tmp_path_factory.getbasetemp() / "gitconfig"
    empty.touch()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setattr(vprove, "VLENS", (128,))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("vproofs")


def git(tree, *args) -> str:
    return toolchain.run_git(list(args), tree).stdout


def make_tree(path, fixture: str, kconfig: str = KCONFIG, text: str | None = None):
    (path / "arch/riscv/lib").mkdir(parents=True)
    (path / vector.VECTOR).write_text(text if text is not None else (HERE / fixture).read_text())
    (path / vector.KCONFIG).write_text(kconfig)
    git(path, "init", "-q", "-b", "master")
    git(path, "config", "user.name", "Ada Tester")
    git(path, "config", "user.email", "ada@example.org")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "the tree as it was")
    return path


def run_patch(tmp_path, tree, cache, strategy: str = STRATEGY, *extra):
    src = tmp_path / "v.copy"
    src.write_text(strategy)
    r = CliRunner().invoke(main, ["patch", str(src), "--kernel-tree", str(tree), "--routine",
                                  "vector_usercopy", "-o", str(tmp_path / "out"),
                                  "--proof-cache", str(cache), "--json", *extra])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r, json.loads(r.stdout)


def _kept_identical(old: str, new: str, symbol: str) -> list[str]:
    """The new file's body of `symbol`, after checking every line around it
    is the old file's, byte for byte."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    fa = kernelfile.functions(a, "old")[symbol]
    fb = kernelfile.functions(b, "new")[symbol]
    assert b[:fb.body_start] == a[:fa.body_start]
    assert b[fb.body_end:] == a[fa.body_end:]
    return b[fb.body_start:fb.body_end]


@pytest.mark.parametrize("fixture,symbol", [
    ("vector_6_12.S", "__asm_vector_usercopy"),
    # four proofs (two entry points, before and after): about 25 s
    pytest.param("vector_mainline.S", "__asm_vector_usercopy_sum_enabled", marks=pytest.mark.slow)])
def test_loop_replaced_kept_lines_identical_kconfig_set(tmp_path, cache, fixture, symbol):
    tree = make_tree(tmp_path / "linux", fixture)
    r, out = run_patch(tmp_path, tree, cache)
    assert r.exit_code == 0, r.output
    assert out["layout"] == ("mainline" if "mainline" in fixture else "6.8")
    (commit,) = out["commits"]
    old = (HERE / fixture).read_text()
    new = git(tree, "show", f"{commit['commit']}:{vector.VECTOR}")
    body = "".join(_kept_identical(old, new, symbol))
    assert "csrw\tCSR_VSTART, zero" in body and "vsetvli\tt0, a2, e8, m8" in body
    assert ("CSR_STATUS" in body) == (symbol == "__asm_vector_usercopy")
    kc = git(tree, "show", f"{commit['commit']}:{vector.KCONFIG}")
    assert kc == KCONFIG.replace("\tdefault 768\n", "\tdefault 1024\n")
    msg = commit["message"]
    assert "from 768 to 1024" in msg and "vstart=" in msg and "Signed-off-by: Ada Tester" in msg
    before = {p["symbol"]: p["verdict"] for p in commit["before"]["vector_usercopy"]}
    after = {p["symbol"]: p["verdict"] for p in commit["after"]["vector_usercopy"]}
    assert set(before.values()) == {"violated"} and set(after.values()) == {"proved"}
    assert set(after) == {"__asm_vector_usercopy"} | {symbol}
    # the checkout is as it was; the patch applies to a fresh clone of the base
    assert (tree / vector.VECTOR).read_text() == old
    fresh = tmp_path / "fresh"
    toolchain.run_git(["clone", "-q", str(tree), str(fresh)], tmp_path)
    git(fresh, "config", "user.name", "B")
    git(fresh, "config", "user.email", "b@b")
    git(fresh, "am", "-q", *out["patches"])
    assert (fresh / vector.VECTOR).read_text() == new


def _refused(tmp_path, tree, cache, code: int, strategy: str = STRATEGY, *extra):
    head = git(tree, "rev-parse", "HEAD")
    r, out = run_patch(tmp_path, tree, cache, strategy, *extra)
    assert r.exit_code == code, r.output
    assert git(tree, "rev-parse", "HEAD") == head and git(tree, "branch", "--list").split() == ["*", "master"]
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    return out["error"]


def test_a_file_in_no_known_layout_is_refused_at_its_line(tmp_path, cache):
    text = (HERE / "vector_6_12.S").read_text() + "\nSYM_FUNC_START(__asm_other)\n\tret\nSYM_FUNC_END(__asm_other)\n"
    tree = make_tree(tmp_path / "linux", "", text=text)
    err = _refused(tmp_path, tree, cache, 2)
    assert err["file"] == vector.VECTOR and err["line"] == text.splitlines().index(
        "SYM_FUNC_START(__asm_other)") + 1 and "__asm_other" in err["message"]
    # the wrapper that calls a loop the file does not define
    text = (HERE / "vector_mainline.S").read_text().split("/* a0 dst")[0]
    tree = make_tree(tmp_path / "linux2", "", text=text)
    err = _refused(tmp_path, tree, cache, 2)
    assert "calls __asm_vector_usercopy_sum_enabled" in err["message"] and err["line"] > 1


def test_kconfig_without_the_threshold_and_strategy_without_vector_refused(tmp_path, cache):
    tree = make_tree(tmp_path / "linux", "vector_6_12.S",
                     kconfig=KCONFIG.replace("RISCV_ISA_V_UCOPY_THRESHOLD", "RISCV_OTHER"))
    err = _refused(tmp_path, tree, cache, 2)
    assert err["file"] == vector.KCONFIG and "RISCV_ISA_V_UCOPY_THRESHOLD" in err["message"]
    err = _refused(tmp_path, tree, cache, 2, STRATEGY.replace(
        "    vector e8 m8 above 1024 loads plain vlen 128..1024\n", ""))
    assert "no vector phase" in err["message"]


def test_an_unproved_loop_is_refused_before_anything_else(tmp_path, cache, monkeypatch):
    """Fault exits that leave vstart as the fault set it: V0 violated in the
    new code, so nothing is written (exit 3); --allow-unproven makes a draft."""
    real = vector.vector_function

    def no_vstart_reset(v, sum_held=False):
        fn = real(v, sum_held)
        exits = tuple(dataclasses.replace(ph, body=tuple(
            i for i in ph.body if getattr(i, "op", "") != "csrw")) for ph in fn.fault_exits)
        return dataclasses.replace(fn, fault_exits=exits)
    monkeypatch.setattr(vector, "vector_function", no_vstart_reset)
    tree = make_tree(tmp_path / "linux", "vector_6_12.S")
    err = _refused(tmp_path, tree, cache, 3)
    assert "not proved" in err["message"]
    r, out = run_patch(tmp_path, tree, cache, STRATEGY, "--allow-unproven")
    assert r.exit_code == 0, r.output
    assert out["commits"][0]["subject"].startswith("[DRAFT: NOT PROVED]")


@pytest.mark.slow
@pytest.mark.parametrize("fixture,symbol", [("vector_6_12.S", "__asm_vector_usercopy"),
                                            ("vector_mainline.S", "__asm_vector_usercopy_sum_enabled")])
def test_an_e64_loop_patches_both_layouts_proved(tmp_path, cache, fixture, symbol):
    """A wide strategy (a misaligned-fast target) goes in as the e8 one does,
    its loop proved after the patch (mainline's with SUM held)."""
    wide = STRATEGY.replace("misaligned slow", "misaligned fast").replace("vector e8", "vector e64")
    tree = make_tree(tmp_path / "linux", fixture)
    r, out = run_patch(tmp_path, tree, cache, wide)
    assert r.exit_code == 0, r.output
    (commit,) = out["commits"]
    new = git(tree, "show", f"{commit['commit']}:{vector.VECTOR}")
    body = "".join(_kept_identical((HERE / fixture).read_text(), new, symbol))
    assert "vsetvli\tt1, t1, e64, m8" in body and "vse8.v, v0, (a0), .Lvec_byte_store_fault" in body
    after = {p["symbol"]: p["verdict"] for p in commit["after"]["vector_usercopy"]}
    assert set(after.values()) == {"proved"} and set(after) == {"__asm_vector_usercopy"} | {symbol}


def _fake_kunit(monkeypatch, calls, usercopy_after=(4, 4)):
    """kernel.kunit as a stand-in: every boot passes, except usercopy at the
    patch's tip when `usercopy_after` says so."""
    from copygen.kernel import kunit
    monkeypatch.setattr(kunit, "check_tree", lambda tree, rev="HEAD", fault_suite=True: None)

    def run_commit(tree, commit, label, vector_too=True, jobs=2, tell=lambda m: None, only=None):
        calls.append((label, vector_too))
        passed, total = usercopy_after if label == "patched" else (4, 4)
        failed = ("usercopy_test",) if passed < total else ()
        return [kunit.Run(label, commit, v, [kunit.Suite("usercopy", passed, total, failed)])
                for v in ((False, True) if vector_too else (False,))]
    monkeypatch.setattr(kunit, "run_commit", run_commit)


def test_test_kunit_boots_the_vector_patch_and_says_so(tmp_path, cache, monkeypatch):
    """--test kunit is honoured by the vector patch: base and patch booted
    without and with V, the results in the message."""
    calls = []
    _fake_kunit(monkeypatch, calls)
    tree = make_tree(tmp_path / "linux", "vector_6_12.S")
    r, out = run_patch(tmp_path, tree, cache, STRATEGY, "--test", "kunit")
    assert r.exit_code == 0, r.output
    assert calls == [("base", True), ("patched", True)]
    msg = out["commits"][0]["message"]
    assert "KUnit (Kbuild, qemu-system-riscv64), tests passed before -> after:" in msg
    assert "usercopy" in msg.split("KUnit (Kbuild")[1]


def test_a_vector_patch_that_breaks_a_kunit_test_is_refused(tmp_path, cache, monkeypatch):
    _fake_kunit(monkeypatch, [], usercopy_after=(3, 4))
    tree = make_tree(tmp_path / "linux", "vector_6_12.S")
    r, out = run_patch(tmp_path, tree, cache, STRATEGY, "--test", "kunit")
    assert r.exit_code == 3 and "usercopy_test" in out["error"]["message"]
    assert git(tree, "branch", "--list", "copygen/*") == ""


def _with_scalar_copy(tree):
    """The tree with a scalar uaccess.S beside uaccess_vector.S (the copy
    a kernel with V runs below the threshold)."""
    (tree / "arch/riscv/lib/uaccess.S").write_text((HERE / "uaccess_2021_ok.S").read_text())
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "the scalar copy")
    return tree


@pytest.mark.slow
def test_the_message_has_a_table_of_copy_to_user_under_each_vector_profile(tmp_path, cache):
    """As a scalar patch's table: modelled cycles before and after, here of
    copy_to_user as a kernel with V runs it, under x60 and x280.  The
    threshold moves from 768 to 1024, so at 768 bytes the old kernel runs
    the vector loop and the new one the scalar copy."""
    tree = _with_scalar_copy(make_tree(tmp_path / "linux", "vector_6_12.S"))
    r, out = run_patch(tmp_path, tree, cache)
    assert r.exit_code == 0, r.output
    (commit,) = out["commits"]
    msg = commit["message"]
    assert "Not benched" not in msg
    assert "RISCV_ISA_V_UCOPY_THRESHOLD 768 before and 1024 after" in " ".join(msg.split())
    assert "Modelled by copygen's cost profile x280" in msg and "x60," in msg
    for prof in ("x280", "x60"):
        table = msg.split(f"  {prof}:\n", 1)[1].split("\n\n", 1)[0].splitlines()
        assert table[0].split() == ["copy_to_user"] and table[1].split() == ["size", "aligned",
                                                                               "misaligned"]
        sizes = [int(ln.split()[0]) for ln in table[2:]]
        assert sizes == [256, 512, 768, 1024, 2048, 4096, 8192]
    rows = {(r["profile"], r["size"], r["align"]): r for r in commit["rows"]}
    assert {p for p, _, _ in rows} == {"x60", "x280"}
    for prof in ("x60", "x280"):
        # below both thresholds the scalar copy, the same; between them the paths differ
        assert rows[prof, 256, "aligned"]["before"] == rows[prof, 256, "aligned"]["after"]
        assert rows[prof, 768, "aligned"]["before"] != rows[prof, 768, "aligned"]["after"]
        assert rows[prof, 8192, "misaligned"]["after"] > 0
    assert all(len(ln) <= 75 for ln in msg.splitlines())


def test_a_profile_that_cannot_time_the_loop_is_refused_before_the_proofs(tmp_path, cache):
    tree = _with_scalar_copy(make_tree(tmp_path / "linux", "vector_6_12.S"))
    err = _refused(tmp_path, tree, cache, 2, STRATEGY, "--profile", "u74")
    assert "--profile u74: no [vector] section" in err["message"]
    assert "x280, x60" in err["hint"]


def test_the_table_says_what_it_times():
    from copygen.patch import message
    from copygen.patch.evidence import Proof, Row, VectorBench
    proof = Proof("__asm_vector_usercopy", vector.KIND, "proved", {"C1": "proved"}, {}, 1.0)
    rows = [Row("x60", "copy_to_user", n, a, b, b - (n >= 768) * 10)
            for n in (512, 1024) for a, b in (("aligned", 200.0), ("misaligned", 300.0))]
    change = message.Change((vector.KIND,), "6.8", {vector.KIND: [proof]}, {vector.KIND: [proof]},
                            rows, {"x60": "LLVM's X60 model, not calibrated"})
    plan = vector.Plan("6.8", "__asm_vector_usercopy", "", "", 768, 768)
    from copygen.gen.front.validate import load_file
    from copygen.emu.timing.profile import available
    st = load_file(str(ROOT / "examples" / "x60vector.copy"), available())
    msg = vector.commit_message(plan, st, change, "0.1.0", "copygen patch ...", "A <a@b>",
                                VectorBench((768, 768), {"x60": 12}, {"x60": 256}))
    text = " ".join(msg.split())
    assert ("The table times copy_to_user as a kernel with V runs it (RISCV_ISA_V_UCOPY_THRESHOLD "
            "768): below the threshold the tree's scalar copy, which this patch does not change; "
            "from it on __asm_vector_usercopy inside a clean kernel vector section (12 cycles on "
            "x60, copygen's shim/vector_section.S), at each profile's VLEN (256 on x60).") in text
    assert "fewer cycles in 2 of the 4 cases below, more in none" in text
    assert "   1024     200    190     300    290" in msg
    assert "Not benched" not in msg


def test_a_table_where_nothing_changes_says_so():
    """The e8 m8 loop of x60vector is the kernel's own loop but for its
    fault exits: the same cycles everywhere, said without a best and a
    worst case."""
    from copygen.patch import message
    from copygen.patch.evidence import Row
    rows = [Row("x60", "copy_to_user", n, "aligned", 100.0, 100.0) for n in (768, 1024)]
    text = " ".join(message.speed(rows, {"x60": "LLVM's model"}))
    assert text == ("Modelled by copygen's cost profile x60, LLVM's model (not measured): the "
                    "same cycles in all 2 cases below.  Cycles before and after:")
