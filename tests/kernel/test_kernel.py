"""The kernel layer (issue 33): a tree from a Debian-style tarball, KUnit
runs through a tree's kunit.py, Kbuild's error lines.

The fast tests use trees and a kunit.py made here: a tarball whose
top-level .gitignore ignores everything, as Debian's linux-source does, and
a kunit.py stand-in that writes the KTAP JSON kunit.py writes.  The test
marked `kernel` runs the whole loop on the real Linux 6.12 tree; it is left
out unless asked for (`python3 -m pytest -m kernel`), and skips, saying how
to get the tree, where there is none.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from copygen.errors import CopygenError, ToolError
from copygen.gen.toolchain import run_git
from copygen.kernel import kunit, tree
from tests.conftest import ROOT

KUNIT_STANDIN = r'''
import json, os, sys
args = dict(a.split("=", 1) for a in sys.argv[2:] if "=" in a)
head = open("arch/riscv/lib/uaccess.S").read()
with open(os.path.join(os.path.dirname(args["--build_dir"]), "calls"), "a") as f:
    f.write(sys.argv[1] + " " + args.get("--qemu_args", "-") + "\n")
if "BROKEN" in head:
    print("Building KUnit Kernel ...")
    print("arch/riscv/lib/uaccess.S:12: Error: unknown mnemonic `BROKEN'")
    print("make[4]: *** [scripts/Makefile.build:359: arch/riscv/lib/uaccess.o] Error 1")
    sys.exit(1)
failing = "FAILS" in head and "v=true" in args.get("--qemu_args", "")
cases = [{"name": "usercopy_test_valid", "status": "FAIL" if failing else "PASS"},
         {"name": "usercopy_test_invalid", "status": "PASS"}]
doc = {"name": "KUnit Test Group", "sub_groups": [
    {"name": "usercopy", "sub_groups": [], "test_cases": cases},
    {"name": "memcpy", "sub_groups": [], "test_cases": [{"name": "memcpy_test", "status": "PASS"}]}]}
fault = "CONFIG_RISCV_USERCOPY_FAULT_KUNIT_TEST=y" in open(args["--kunitconfig"]).read()
if fault and os.path.exists("arch/riscv/lib/tests/usercopy_fault_kunit.c"):
    params = [{"name": "user+0 kernel+0", "status": "FAIL" if "BLOCKY" in head else "PASS"}]
    doc["sub_groups"].append({"name": "usercopy_fault", "test_cases": [], "sub_groups": [
        {"name": "copy_to_user_test", "sub_groups": [], "test_cases": params}]})
    first = "2 of 9 calls break the rule; the first: copy_to_user n=72 k=8: returned 72"
    with open(os.path.join(args["--build_dir"], "test.log"), "w") as f:
        f.write("    # Subtest: copy_to_user_test\n"
                "    # copy_to_user_test: copy_to_user: 9 calls, digest 00000000000000aa\n"
                + (first + "\n        not ok 1 user+0 kernel+0\n" if "BLOCKY" in head
                   else "        ok 1 user+0 kernel+0\n") + "    ok 1 copy_to_user_test\n")
print("Building KUnit Kernel ...")
print("Starting KUnit Kernel (1/1)...")
json.dump(doc, open(args["--json"], "w"))
print("Elapsed time: 12.500s total, 0.500s configuring, 7.000s building, 5.000s running")
'''


FAULT_NEEDS = {"include/kunit/test.h": "/* the KUnit API */\n",
               "lib/kunit/user_alloc.c": "/* kunit_vm_mmap() */\n",
               "arch/riscv/lib/Makefile": "lib-y += uaccess.o\n", "arch/riscv/Kconfig.debug": "\n"}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COPYGEN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    (tmp_path / "gitconfig").touch()
    return tmp_path / "cache"


def _tarball(tmp_path, version="6.99"):
    top = tmp_path / "src" / f"linux-source-{version}"
    (top / "arch/riscv/lib").mkdir(parents=True)
    (top / "tools/testing/kunit").mkdir(parents=True)
    (top / ".gitignore").write_text("*.o\n#\n# Debian packaging: ignore everything at the top level\n/*\n!/debian/\n")
    (top / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 99\nSUBLEVEL = 3\n")
    (top / "arch/riscv/lib/uaccess.S").write_text("/* the copy */\n")
    for rel, text in FAULT_NEEDS.items():     # what the fault suite needs of a tree
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(text)
    (top / "tools/testing/kunit/kunit.py").write_text(KUNIT_STANDIN)
    tar = tmp_path / f"linux-source-{version}.tar.xz"
    subprocess.run(["tar", "-cJf", tar, "-C", tmp_path / "src", top.name], check=True)
    return tar


def test_a_debian_tarball_becomes_a_tree_with_every_file_committed(tmp_path, cache, monkeypatch):
    tar = _tarball(tmp_path)
    monkeypatch.setattr(tree, "TARBALL", str(tmp_path / "linux-source-{version}.tar.xz"))
    got = tree.get_tree("6.99")
    assert got == cache / "linux-source-6.99"
    files = run_git(["ls-files"], got).stdout.split()
    # the top-level `/*` of Debian's .gitignore did not keep anything out
    assert {"Makefile", "arch/riscv/lib/uaccess.S", "tools/testing/kunit/kunit.py"} <= set(files)
    assert run_git(["status", "--porcelain"], got).stdout == ""
    assert run_git(["log", "--format=%s"], got).stdout.strip() == \
        "Linux 6.99.3 (Debian linux-source-6.99)"
    assert run_git(["config", "user.email"], got).stdout.strip() == tree.IDENTITY[1]
    # a second call keeps the tree as it is
    head = run_git(["rev-parse", "HEAD"], got).stdout
    assert tree.get_tree("6.99") == got and run_git(["rev-parse", "HEAD"], got).stdout == head
    assert tar.exists()


def test_a_missing_tarball_names_the_package(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(tree, "TARBALL", str(tmp_path / "none-{version}.tar.xz"))
    with pytest.raises(ToolError, match="not found") as err:
        tree.get_tree("6.99")
    assert "apt-get install linux-source-6.99" in err.value.hint
    assert not (cache / "linux-source-6.99").exists()
    with pytest.raises(CopygenError, match="not a kernel series"):
        tree.get_tree("six")


@pytest.fixture
def fake_tree(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(tree, "TARBALL", str(tmp_path / "linux-source-{version}.tar.xz"))
    monkeypatch.setattr(kunit, "check_ready", lambda t: None)
    monkeypatch.setattr(kunit, "run_logged", _python_is_this_one(kunit.run_logged))
    _tarball(tmp_path)
    return tree.get_tree("6.99")


def _python_is_this_one(run_logged):
    def run(name, args, package, **kw):
        return run_logged(sys.executable if name == "python3" else name, args, package, **kw)
    return run


def _commit(t, text, msg):
    (t / "arch/riscv/lib/uaccess.S").write_text(text)
    run_git(["commit", "-qam", msg], t)
    return run_git(["rev-parse", "HEAD"], t).stdout.strip()


def test_kunit_runs_each_commit_without_and_with_v_and_restores_the_checkout(fake_tree):
    base = run_git(["rev-parse", "HEAD"], fake_tree).stdout.strip()
    bad = _commit(fake_tree, "/* FAILS with vectors */\n", "a patch")
    run_git(["checkout", "-q", base], fake_tree)
    run_git(["checkout", "-q", "-b", "work"], fake_tree)
    runs = kunit.run_commit(fake_tree, bad, "patched", tell=lambda m: None, fault_suite=False)
    assert [r.vector for r in runs] == [False, True]
    assert all(r.commit == bad and r.tested == bad for r in runs)
    assert runs[0].ok and runs[0].failed() == []
    assert not runs[1].ok and runs[1].failed() == ["usercopy.usercopy_test_valid"]
    assert runs[0].suites[0] == kunit.Suite("usercopy", 2, 2, ())
    assert runs[0].build_seconds == 7.0
    calls = (kunit.build_dir(fake_tree).parent / "calls").read_text().splitlines()
    assert calls == ["run -", f"exec {kunit.VECTOR_CPU}"]
    # the checkout is back on its branch, at its commit
    assert run_git(["symbolic-ref", "--short", "HEAD"], fake_tree).stdout.strip() == "work"
    assert run_git(["rev-parse", "HEAD"], fake_tree).stdout.strip() == base


def test_each_commit_is_booted_with_the_fault_suite_on_top_of_it(fake_tree):
    from copygen.kernel import faultsuite
    base = run_git(["rev-parse", "HEAD"], fake_tree).stdout.strip()
    bad = _commit(fake_tree, "/* BLOCKY fault return */\n", "a patch")
    run_git(["checkout", "-q", base], fake_tree)
    branches = run_git(["branch"], fake_tree).stdout
    (run,) = kunit.run_commit(fake_tree, bad, "patched", vector_too=False)
    assert run.commit == bad and run.tested != bad
    assert run_git(["rev-parse", f"{run.tested}^"], fake_tree).stdout.strip() == bad
    assert faultsuite.files(fake_tree, run.tested) == {}          # the suite is in what booted
    assert run.failed() == ["usercopy_fault.copy_to_user_test.user+0 kernel+0"]
    assert run.fault["copy_to_user_test.user+0 kernel+0"] == {
        "ok": False, "calls": 9, "digest": "00000000000000aa", "failed": 2,
        "first": "copy_to_user n=72 k=8: returned 72"}
    # what `copygen patch --test kunit` shows when the patch breaks a case
    assert kunit.first_failures([run], run.failed()) == [
        "  usercopy_fault.copy_to_user_test.user+0 kernel+0: 2 of 9 calls fail, the first: "
        "copy_to_user n=72 k=8: returned 72"]
    config = (kunit.build_dir(fake_tree).parent / f"{kunit.build_dir(fake_tree).name}.kunitconfig")
    assert faultsuite.CONFIG + "=y" in config.read_text()
    # the checkout, the branches and the working files are as they were
    assert run_git(["rev-parse", "HEAD"], fake_tree).stdout.strip() == base
    assert run_git(["branch"], fake_tree).stdout == branches
    assert run_git(["status", "--porcelain"], fake_tree).stdout == ""


def test_copygen_kunit_names_the_first_failing_call_and_exits_3(fake_tree):
    from click.testing import CliRunner
    from copygen.cli import main
    _commit(fake_tree, "/* BLOCKY fault return */\n", "a patch")
    r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(fake_tree), "--no-vector"])
    assert r.exit_code == 3
    assert ("  copy_to_user_test.user+0 kernel+0: 2 of 9 calls fail; the first: "
            "copy_to_user n=72 k=8: returned 72") in r.stdout
    r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(fake_tree), "--no-vector", "--json"])
    doc = json.loads(r.stdout)                                  # one envelope, failures in it
    assert r.exit_code == 3 and not doc["ok"] and len(doc["failed"]) == 1


def test_a_build_failure_shows_the_compilers_lines(fake_tree):
    broken = _commit(fake_tree, "BROKEN\n", "does not build")
    run_git(["checkout", "-q", "HEAD~1"], fake_tree)
    with pytest.raises(ToolError, match="does not build") as err:
        kunit.run_commit(fake_tree, broken, "patched", vector_too=False)
    assert "unknown mnemonic `BROKEN'" in err.value.detail
    assert "uaccess.o] Error 1" in err.value.detail
    assert err.value.exit_code == 1


def test_what_a_run_needs_is_named_with_its_package(tmp_path, monkeypatch):
    (tmp_path / kunit.KUNIT).parent.mkdir(parents=True)
    (tmp_path / kunit.KUNIT).write_text("")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ToolError, match="qemu-system-riscv64") as err:
        kunit.check_ready(tmp_path)
    assert "qemu-system-misc" in err.value.hint
    with pytest.raises(ToolError, match="kunit.py not found"):
        kunit.check_ready(tmp_path / "nothing")


def test_patch_messages_carry_one_kunit_line_per_suite():
    from copygen.patch import message
    base = [kunit.Run("base", "a", False, [kunit.Suite("usercopy", 4, 4), kunit.Suite("memcpy", 6, 6)]),
            kunit.Run("base", "a", True, [kunit.Suite("usercopy", 4, 4), kunit.Suite("memcpy", 6, 6)])]
    after = [kunit.Run("patched", "b", False, [kunit.Suite("usercopy", 4, 4), kunit.Suite("memcpy", 6, 6)]),
             kunit.Run("patched", "b", True, [kunit.Suite("usercopy", 3, 4, ("t",)),
                                             kunit.Suite("memcpy", 6, 6)])]
    assert message.kunit_lines(base, after) == (
        "  usercopy  no V 4/4 -> 4/4, with V 4/4 -> 3/4",
        "  memcpy    no V 6/6 -> 6/6, with V 6/6 -> 6/6")


REAL = tree.cache_dir() / "linux-source-6.12"


@pytest.mark.kernel
@pytest.mark.skipif(not (REAL / ".git").exists(),
                    reason=f"no Linux 6.12 tree at {REAL}: ./install.sh --kernel && copygen tree")
def test_a_patch_builds_boots_and_passes_kunit_on_linux_6_12(tmp_path):
    """The whole loop on the real tree, with a strategy quick to prove."""
    from click.testing import CliRunner
    from copygen.cli import main
    from tests.patch.test_patch import SMALL
    src = tmp_path / "small.copy"
    src.write_text(SMALL)
    branch = "copygen/test-small"
    run_git(["branch", "-D", branch], REAL, check=False)
    r = CliRunner().invoke(main, ["patch", str(src), "--kernel-tree", str(REAL), "-o",
                                  str(tmp_path / "out"), "--branch", branch, "--test", "kunit",
                                  "--no-vector", "--proof-cache", str(tmp_path / "proofs"), "--json"])
    run_git(["branch", "-D", branch], REAL, check=False)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["layout"] == "6.8"
    suites = {state: {s["name"]: (s["passed"], s["total"]) for s in run["suites"]}
              for state, (run,) in doc["kunit"].items()}
    for state in ("base", "patched"):
        assert set(suites[state]) == {"usercopy", "memcpy", "string", "usercopy_fault"}
    # 6.12's fault return breaks the rule in the 16 classes where both
    # buffers have the same alignment (its word loop); the patch's does not
    assert suites["base"]["usercopy_fault"] == (120, 136)
    assert all(p == t for p, t in suites["patched"].values())
    assert "usercopy  no V 4/4 -> 4/4" in doc["commits"][0]["message"]
    assert "usercopy_fault no V 120/136 -> 136/136" in doc["commits"][0]["message"]
