"""The fault suite (issue 64): its C file, its wiring into a tree, the
commit it becomes, the refusals, and what a run reads back from KTAP.

The trees here are made in the test (git init): the few files the suite
touches or needs, with text of our own.  The compile test uses the kept
build directory of a real tree when there is one (a Kbuild .cmd file
gives the kernel's own flags) and skips otherwise.
"""
from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from copygen.errors import CopygenError
from copygen.gen.toolchain import run_git
from copygen.kernel import faultpatch, faultsuite, kunit, tree

NEEDED = {
    "include/kunit/test.h": "/* the KUnit API */\n",
    "lib/kunit/user_alloc.c": "/* user memory for tests: kunit_vm_mmap() */\n",
    "arch/riscv/lib/Makefile": "lib-y\t+= uaccess.o\n",
    "arch/riscv/Kconfig.debug": 'source "arch/riscv/kernel/tests/Kconfig.debug"\n',
    "arch/riscv/lib/uaccess.S": "/* the copy */\n",
    "tools/testing/kunit/kunit.py": "# runs the tests\n",
}


def make_tree(root: Path, files: dict[str, str] = NEEDED) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    run_git(["init", "-q", "-b", "master"], root)
    run_git(["config", "user.name", "Ada Tester"], root)
    run_git(["config", "user.email", "ada@example.org"], root)
    run_git(["add", "-A"], root)
    run_git(["commit", "-qm", "the tree"], root, env=tree.AUTHOR)
    return root


def state(root: Path) -> tuple[str, str, str]:
    """HEAD, the branches and the status: what a refusal must leave alone."""
    return (run_git(["rev-parse", "HEAD"], root).stdout, run_git(["branch", "-a"], root).stdout,
            run_git(["status", "--porcelain"], root).stdout)


def test_the_suite_covers_every_size_offset_and_cut_point():
    c = faultsuite.render()
    assert '.name = "usercopy_fault"' in c
    for case in ("copy_to_user_test", "copy_from_user_test", "clear_user_test"):
        assert f"KUNIT_CASE_PARAM({case}," in c
    assert "#define UF_DENSE\t192" in c and "{ 256, 511, 1024, 4103 }" in c
    # the public entry points, user pages from KUnit, the pages around unmapped
    for call in ("copy_to_user((void __user *)u", "copy_from_user(k,", "clear_user((void __user *)u",
                 "kunit_vm_mmap(test", "vm_munmap(base, PAGE_SIZE)", "vm_munmap(r->hi, PAGE_SIZE)"):
        assert call in c
    assert c.count("{ 0, ") == 9 and "{ 7, 7 }," in c      # 64 copy classes, 8 clear classes
    assert c.startswith("// SPDX-License-Identifier: GPL-2.0-only\n")
    assert max(len(line.expandtabs(8)) for line in c.splitlines()) <= 100
    # every size up to 192, cut points that step by 8 from -user mod 8
    calls = faultsuite.calls(faultsuite.DEFAULT, 3)
    assert (72, "after", 5) in calls and (72, "before", 5) in calls and (72, "after", 8) not in calls
    assert {n for n, _, _ in calls} == set(range(193)) | {256, 511, 1024, 4103}
    assert not any(where == "after" and 192 < cut < 4103 - 64 for n, where, cut in calls if n == 4103)
    assert faultsuite.call_counts() == {"copy_to_user": 327064, "copy_from_user": 327064,
                                        "clear_user": 40883}


def test_the_wiring_is_that_of_the_kernels_other_kunit_suites(tmp_path):
    root = make_tree(tmp_path)
    files = faultsuite.files(root, "HEAD")
    assert sorted(files) == ["arch/riscv/Kconfig.debug", "arch/riscv/lib/Makefile",
                             "arch/riscv/lib/tests/Kconfig.debug", "arch/riscv/lib/tests/Makefile",
                             "arch/riscv/lib/tests/usercopy_fault_kunit.c"]
    kconfig = files["arch/riscv/lib/tests/Kconfig.debug"]
    assert kconfig.startswith("# SPDX-License-Identifier: GPL-2.0-only\nconfig "
                              "RISCV_USERCOPY_FAULT_KUNIT_TEST\n\ttristate ")
    assert '" if !KUNIT_ALL_TESTS\n' in kconfig
    assert "\tdepends on KUNIT && MMU\n\tdefault KUNIT_ALL_TESTS\n\thelp\n" in kconfig
    assert files["arch/riscv/lib/tests/Makefile"].endswith(
        "obj-$(CONFIG_RISCV_USERCOPY_FAULT_KUNIT_TEST)\t+= usercopy_fault_kunit.o\n")
    assert files["arch/riscv/lib/Makefile"] == NEEDED["arch/riscv/lib/Makefile"] + "obj-y\t\t\t+= tests/\n"
    assert files["arch/riscv/Kconfig.debug"].endswith('source "arch/riscv/lib/tests/Kconfig.debug"\n')
    assert kunit.KUNITCONFIG.endswith("CONFIG_RISCV_USERCOPY_FAULT_KUNIT_TEST=y\n")


def test_a_tree_with_a_tests_directory_keeps_it_and_gains_one_line_each(tmp_path):
    root = make_tree(tmp_path, {**NEEDED, "arch/riscv/lib/tests/Makefile": "obj-y += other_kunit.o\n",
                                "arch/riscv/lib/tests/Kconfig.debug": "config OTHER\n\tbool\n",
                                "arch/riscv/lib/Makefile": "obj-y += tests/\n"})
    files = faultsuite.files(root, "HEAD")
    assert "arch/riscv/lib/Makefile" not in files                   # wired already
    assert files["arch/riscv/lib/tests/Makefile"].startswith("obj-y += other_kunit.o\nobj-$(CONFIG_")
    assert files["arch/riscv/lib/tests/Kconfig.debug"].startswith("config OTHER\n\tbool\n\nconfig RISCV_")


def test_on_top_is_one_commit_the_same_each_time_and_touches_nothing(tmp_path):
    root = make_tree(tmp_path)
    before = state(root)
    one, two = faultpatch.on_top(root, "master"), faultpatch.on_top(root, "HEAD")
    assert one == two and state(root) == before
    assert run_git(["rev-parse", f"{one}^"], root).stdout == before[0]
    assert faultpatch.on_top(root, one) == one                    # it has the suite already
    assert faultsuite.files(root, one) == {}


@pytest.mark.parametrize("missing, named", [
    ("include/kunit/test.h", "no KUnit (include/kunit/test.h)"),
    ("lib/kunit/user_alloc.c", "no kunit_vm_mmap() (lib/kunit/user_alloc.c, Linux 6.10+)")])
def test_a_tree_the_suite_cannot_build_in_is_refused_untouched(tmp_path, missing, named):
    root = make_tree(tmp_path, {k: v for k, v in NEEDED.items() if k != missing})
    before = state(root)
    for make in (lambda: faultpatch.standalone(root, tmp_path / "out"),
                 lambda: faultpatch.on_top(root, "HEAD"),
                 lambda: kunit.run_commit(root, "HEAD", "base")):
        with pytest.raises(CopygenError) as err:
            make()
        assert err.value.exit_code == 2 and named in err.value.message
    assert state(root) == before and not (tmp_path / "out").exists()


def test_a_tree_without_kunit_py_is_refused_before_anything(tmp_path):
    root = make_tree(tmp_path, {k: v for k, v in NEEDED.items() if not k.endswith("kunit.py")})
    with pytest.raises(CopygenError, match="the tree has no KUnit") as err:
        kunit.check_tree(root)
    assert err.value.exit_code == 2


def test_the_standalone_patch_applies_with_git_am_and_is_signed_off(tmp_path):
    root = make_tree(tmp_path / "linux")
    w = faultpatch.standalone(root, tmp_path / "out")
    assert w.branch == faultpatch.BRANCH and w.checkpatch is None       # no scripts/checkpatch.pl
    text = w.patch.read_text()
    assert f"Subject: [PATCH] {faultpatch.SUBJECT}\n" in text
    assert "Signed-off-by: Ada Tester <ada@example.org>\n" in text
    body = text.split("\n\n", 1)[1].split("\n---\n")[0]
    assert max(map(len, body.splitlines())) <= 75
    assert run_git(["rev-parse", "HEAD"], root).stdout.strip() != w.commit     # the checkout stays
    with pytest.raises(CopygenError, match="exists already"):
        faultpatch.standalone(root, tmp_path / "out")
    with pytest.raises(CopygenError, match="has the fault suite already"):
        faultpatch.standalone(root, tmp_path / "out", branch="again", rev=w.commit)
    clone = tmp_path / "clone"
    run_git(["clone", "-q", str(root), str(clone)], tmp_path)
    run_git(["am", "-q", str(w.patch)], clone, env=tree.AUTHOR)
    got = run_git(["rev-parse", "HEAD^{tree}"], clone).stdout
    assert got == run_git(["rev-parse", f"{w.commit}^{{tree}}"], root).stdout


KTAP = """\
    KTAP version 1
    # Subtest: usercopy_fault
    1..3
        KTAP version 1
        # Subtest: copy_to_user_test
    # copy_to_user_test: copy_to_user: 5116 calls, digest 0123456789abcdef
    # copy_to_user_test: EXPECTATION FAILED at arch/riscv/lib/tests/usercopy_fault_kunit.c:375
2 of 5116 calls break the rule; the first: copy_to_user n=71 dst%8=0 src%8=0 k=8 (x): y
        not ok 1 user+0 kernel+0
[    2.5] # copy_to_user_test: copy_to_user: 4969 calls, digest fedcba9876543210
        ok 2 user+0 kernel+1
    not ok 1 copy_to_user_test
"""


def test_the_first_failing_call_and_the_digests_are_read_from_ktap():
    got = faultsuite.parse_log(KTAP)
    assert got == {
        "copy_to_user_test.user+0 kernel+0": {
            "ok": False, "calls": 5116, "digest": "0123456789abcdef", "failed": 2,
            "first": "copy_to_user n=71 dst%8=0 src%8=0 k=8 (x): y"},
        "copy_to_user_test.user+0 kernel+1": {
            "ok": True, "calls": 4969, "digest": "fedcba9876543210", "failed": 0, "first": ""}}


def test_a_case_that_oopses_is_named_with_its_oops():
    ktap = ("        # Subtest: copy_from_user_test\n"
            "[   9.5] Unable to handle kernel paging request at virtual address 0000003fff000000\n"
            "[   9.5] epc : __asm_copy_from_user+0x32/0x2a8\n"
            "    # copy_from_user_test: try faulted: last line seen x.c:300\n"
            "        not ok 1 user+0 kernel+0\n")
    (got,) = faultsuite.parse_log(ktap).values()
    assert not got["ok"] and got["first"] == (
        "the test case died (try faulted): Unable to handle kernel paging request at virtual "
        "address 0000003fff000000; epc : __asm_copy_from_user+0x32/0x2a8")


def test_parameterised_cases_count_one_each_in_the_suite():
    doc = {"sub_groups": [{"name": "usercopy_fault", "test_cases": [], "sub_groups": [
        {"name": "copy_to_user_test", "sub_groups": [], "test_cases": [
            {"name": "user+0 kernel+0", "status": "FAIL"}, {"name": "user+0 kernel+1", "status": "PASS"}]},
        {"name": "clear_user_test", "sub_groups": [], "test_cases": [
            {"name": "user+0", "status": "PASS"}]}]}]}
    (suite,) = kunit._suites(doc)
    assert suite == kunit.Suite("usercopy_fault", 2, 3, ("copy_to_user_test.user+0 kernel+0",))


def _kbuild_flags() -> tuple[Path, list[str]] | None:
    """The kernel's own C flags from a kept build directory, if there is one."""
    for bdir in sorted((tree.cache_dir() / "build").glob("*")):
        cmd = bdir / "arch/riscv/lib/.riscv_v_helpers.o.cmd"
        if cmd.is_file():
            line = cmd.read_text().splitlines()[0].split(":=", 1)[1]
            argv = shlex.split(line)
            argv = [a for a in argv if not a.startswith("-Wp,-MMD")]
            cut = argv.index("-c")
            return bdir, argv[:cut]
    return None


@pytest.mark.skipif(_kbuild_flags() is None, reason="no kept kernel build directory with "
                    "arch/riscv/lib built (copygen kunit makes one)")
def test_the_suite_compiles_with_the_kernels_flags_without_a_warning(tmp_path):
    bdir, argv = _kbuild_flags()
    src = tmp_path / "usercopy_fault_kunit.c"
    src.write_text(faultsuite.render())
    argv = [re.sub("riscv_v_helpers", "usercopy_fault_kunit", a) for a in argv]
    r = subprocess.run([*argv, "-Werror", "-c", "-o", str(tmp_path / "t.o"), str(src)], cwd=bdir,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
