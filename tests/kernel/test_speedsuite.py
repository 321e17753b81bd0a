"""`copygen kunit --force-misaligned`: a two-body patch booted with the
misaligned-access probe's verdict forced fast and slow, without and with
V, each boot saying which scalar copy ran (kernel.speedsuite).

The trees are made here: a Debian-style tarball (tests/kernel/test_kernel.py)
with the files the forced-speed suite needs, and a kunit.py stand-in that
reads the kernel command line kunit.py is given, as the suite's
late_initcall does, and writes the KTAP and console lines the suite
prints.  The compile test uses a kept build directory of a real tree
when there is one.
"""
from __future__ import annotations

import json
import re
import subprocess

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.gen.toolchain import run_git
from copygen.kernel import faultsuite, kunit, speedsuite, tree
from tests.kernel.test_faultsuite import _kbuild_flags
from tests.conftest import ROOT
from tests.kernel.test_kernel import _python_is_this_one, _tarball, cache  # noqa: F401

# reads --kernel_args as the suite's parameter does; "IGNORES_KEY" in
# uaccess.S stands for a site the jump-label code never writes (the slow
# copy runs whatever the key says)
STANDIN = r'''
import json, os, sys
args = {}
for a in sys.argv[2:]:
    if "=" in a:
        k, v = a.split("=", 1)
        args.setdefault(k, []).append(v)
one = {k: v[-1] for k, v in args.items()}
force = next((v.split("=", 1)[1] for v in args.get("--kernel_args", [])
              if v.startswith("usercopy_speeds_kunit.force=")), "")
with open(os.path.join(os.path.dirname(one["--build_dir"]), "calls"), "a") as f:
    f.write(" ".join([sys.argv[1], one.get("--qemu_args", "-"), force or "-"]) + "\n")
config = open(one["--kunitconfig"]).read()
doc = {"name": "KUnit Test Group", "sub_groups": [
    {"name": "usercopy", "sub_groups": [], "test_cases": [{"name": "usercopy_test_valid", "status": "PASS"}]}]}
log = "cpu0: Ratio of byte access time to unaligned word access is 6.92, unaligned accesses are fast\n"
speeds = "CONFIG_RISCV_USERCOPY_SPEEDS_KUNIT_TEST=y" in config
suite = "arch/riscv/kernel/tests/usercopy_speeds_kunit.c"
if speeds and os.path.exists(suite):
    cases = open(suite).read()
    key = {"fast": "on", "slow": "off"}.get(force, "on")
    log += ("    # Subtest: usercopy_speeds\n"
            f"    # speeds_key_as_forced: the probe left the key on; forced {force or 'nothing'}: "
            f"the key is {key}\n    ok 1 speeds_key_as_forced\n")
    results = [{"name": "speeds_key_as_forced", "status": "PASS"}]
    bodies = {"copy": ("arch/riscv/lib/uaccess.S", 20608, "", ""),
              "memcpy": ("arch/riscv/lib/memcpy.S", 10304, "__memcpy", "__memcpy_fast"),
              "memmove": ("arch/riscv/lib/memcpy.S", 20608, "__memmove", "__memmove_fast")}
    for routine, (source, calls, slow_name, fast_name) in bodies.items():
        if f"KUNIT_CASE(speeds_{routine}_entered)" not in cases:
            continue
        ran_fast = key == "on" and "IGNORES_KEY" not in open(source).read()
        # other callers of memcpy add calls to the body that runs
        slow, fast = (0, calls + 7) if ran_fast else (calls + 7, 0)
        ok = (slow == 0) == (key == "on")
        if routine == "copy":
            slow, fast = (0, calls) if ran_fast else (calls, 0)
            log += (f"    # speeds_copy_entered: key {key}: {calls} copies checked; slow copy "
                    f"entered {slow} times, fast copy {fast}\n")
        else:
            log += (f"    # speeds_{routine}_entered: key {key}: {calls} calls checked; slow "
                    f"{slow_name} entered {slow} times, fast {fast_name} {fast}\n")
        log += f"    {'ok' if ok else 'not ok'} {len(results) + 1} speeds_{routine}_entered\n"
        results.append({"name": f"speeds_{routine}_entered", "status": "PASS" if ok else "FAIL"})
    doc["sub_groups"].append({"name": "usercopy_speeds", "sub_groups": [], "test_cases": results})
with open(os.path.join(one["--build_dir"], "test.log"), "w") as f:
    f.write(log)
print("Building KUnit Kernel ...")
print("Starting KUnit Kernel (1/1)...")
json.dump(doc, open(one["--json"], "w"))
print("Elapsed time: 12.500s total, 0.500s configuring, 7.000s building, 5.000s running")
'''

PROBE_C = ("/* the boot probe, as a tree since 6.10 has it */\n"
           "DEFINE_STATIC_KEY_FALSE(fast_unaligned_access_speed_key);\n")
TWO_BODIES = """SYM_FUNC_START(__asm_copy_to_user)
SYM_FUNC_START(fallback_scalar_usercopy)
\tbranch_if_misaligned_fast fallback_scalar_usercopy_fast
\tret
SYM_FUNC_END(__asm_copy_to_user)
SYM_FUNC_END(fallback_scalar_usercopy)
SYM_FUNC_START_LOCAL(fallback_scalar_usercopy_fast)
\tret
SYM_FUNC_END(fallback_scalar_usercopy_fast)
"""
TESTS_KCONFIG = """menu "riscv kernel tests"
if RUNTIME_KERNEL_TESTING_MENU
config SOME_OTHER_TEST
\tbool "another test"
endif # RUNTIME_TESTING_MENU
endmenu
"""
SPEEDS_FILES = {speedsuite.PROBE: PROBE_C, speedsuite.KCONFIG: TESTS_KCONFIG,
                speedsuite.MAKEFILE: "obj-y += module_test/\n", speedsuite.UACCESS: TWO_BODIES}
# memcpy.S as `copygen patch --fast-body ... --routine string` writes it
TWO_STRING_BODIES = """\t.macro branch_if_misaligned_fast fast
\t.endm
SYM_FUNC_START(__memcpy)
\tbranch_if_misaligned_fast __memcpy_fast
\tret
SYM_FUNC_END(__memcpy)
SYM_FUNC_ALIAS_WEAK(memcpy, __memcpy)
SYM_FUNC_START(__memmove)
\tbranch_if_misaligned_fast __memmove_fast
\tret
SYM_FUNC_END(__memmove)
SYM_FUNC_START_LOCAL(__memcpy_fast)
\tret
SYM_FUNC_END(__memcpy_fast)
SYM_FUNC_START_LOCAL(__memmove_fast)
\tret
SYM_FUNC_END(__memmove_fast)
"""
ONE_COPY = "SYM_FUNC_START(__asm_copy_to_user)\n\tret\n"


@pytest.fixture
def speeds_tree(tmp_path, cache, monkeypatch):  # noqa: F811
    """A tree whose HEAD is a two-body patch, and the stand-in kunit.py."""
    monkeypatch.setattr(tree, "TARBALL", str(tmp_path / "linux-source-{version}.tar.xz"))
    monkeypatch.setattr(kunit, "check_ready", lambda t: None)
    monkeypatch.setattr(kunit, "run_logged", _python_is_this_one(kunit.run_logged))
    _tarball(tmp_path)
    t = tree.get_tree("6.99")
    _write(t, {**SPEEDS_FILES, kunit.KUNIT: STANDIN})
    run_git(["commit", "-qm", "two scalar copies"], t)
    return t


@pytest.fixture
def string_tree(speeds_tree):
    """A tree whose HEAD is the two-body string patch: memcpy.S has two
    memcpys and two memmoves, uaccess.S one scalar copy."""
    _write(speeds_tree, {speedsuite.UACCESS: ONE_COPY, speedsuite.MEMCPY: TWO_STRING_BODIES})
    run_git(["commit", "-qm", "two memcpys, two memmoves"], speeds_tree)
    return speeds_tree


def _write(t, files):
    for rel, text in files.items():
        (t / rel).parent.mkdir(parents=True, exist_ok=True)
        (t / rel).write_text(text)
    run_git(["add", "-f", "-A"], t)   # Debian's .gitignore ignores the top level


def _state(t):
    return (run_git(["rev-parse", "HEAD"], t).stdout, run_git(["branch", "-a"], t).stdout,
            run_git(["status", "--porcelain"], t).stdout)


def _calls(t):
    f = kunit.build_dir(t).parent / "calls"
    return f.read_text().splitlines() if f.exists() else []


def test_the_kunitconfig_has_jump_labels_so_a_two_body_patch_boots_both_copies():
    # without CONFIG_JUMP_LABEL branch_if_misaligned_fast emits nothing: only the slow copy
    for config in (kunit.kunitconfig(), kunit.kunitconfig(False), kunit.kunitconfig(True, True)):
        assert "CONFIG_JUMP_LABEL=y\n" in config and "CONFIG_KPROBES=y\n" in config
    assert f"{speedsuite.CONFIG}=y" in kunit.kunitconfig(True, True)
    assert f"{speedsuite.CONFIG}=y" not in kunit.kunitconfig()
    assert kunit.forced_speeds("both") == ("slow", "fast") and kunit.forced_speeds(None) == ()


def test_each_speed_is_forced_on_one_build_without_and_with_v(speeds_tree):
    t = speeds_tree
    run_git(["checkout", "-q", "-b", "work"], t)
    before = _state(t)
    # the label is a branch name, as `copygen kunit copygen/x` gives it: no directory
    runs = kunit.run_commit(t, "HEAD", "copygen/two-bodies", force=("slow", "fast"))
    # one build (kunit.py run), then three boots of that kernel, the speed on its command line
    assert _calls(t) == ["run - slow", f"exec {kunit.VECTOR_CPU} slow",
                         "exec - fast", f"exec {kunit.VECTOR_CPU} fast"]
    assert [(r.forced, r.vector) for r in runs] == [("slow", False), ("slow", True),
                                                    ("fast", False), ("fast", True)]
    for r in runs:
        assert r.ok and r.failed() == []
        assert r.speeds["forced"] == r.forced and r.speeds["ran"] == r.forced
        assert r.speeds["key"] == {"fast": "on", "slow": "off"}[r.forced]
        assert r.speeds["copies"] == 20608 and r.speeds["probe"] == [
            {"cpu": 0, "ratio": 6.92, "verdict": "fast"}]
        assert "usercopy_speeds" in {s.name for s in r.suites}
    assert speedsuite.describe(runs[0].speeds) == (
        "forced slow, key off: the slow copy ran (20608 calls entered the slow copy, 0 the fast "
        "one, of 20608)")
    # what booted: the speeds suite on the fault suite on the commit
    head = run_git(["rev-parse", "HEAD"], t).stdout.strip()
    tested = runs[0].tested
    assert run_git(["rev-parse", f"{tested}~2"], t).stdout.strip() == head
    assert speedsuite.files(t, tested) == {} and faultsuite.files(t, tested) == {}
    c = run_git(["show", f"{tested}:{speedsuite.SOURCE}"], t).stdout
    assert '.symbol_name = "fallback_scalar_usercopy",' in c
    assert '.symbol_name = "fallback_scalar_usercopy_fast",' in c
    assert "module_param_named(force, speeds_force, charp, 0444);" in c
    assert "late_initcall(speeds_force_key);" in c
    kconf = run_git(["show", f"{tested}:{speedsuite.KCONFIG}"], t).stdout
    # the entry is inside the menu's `if`, before its endif
    assert kconf.index("config RISCV_USERCOPY_SPEEDS_KUNIT_TEST") < kconf.index("endif")
    assert "usercopy_speeds_kunit.o" in run_git(["show", f"{tested}:{speedsuite.MAKEFILE}"], t).stdout
    config = kunit.build_dir(t).parent / f"{kunit.build_dir(t).name}.kunitconfig"
    assert f"{speedsuite.CONFIG}=y" in config.read_text()
    # the same commit again: the kept build directory sees the same tree
    assert speedsuite.on_top(t, faultsuite_top(t)) == tested
    assert _state(t) == before


def faultsuite_top(t):
    from copygen.kernel import faultpatch
    return faultpatch.on_top(t, "HEAD")


def test_copygen_kunit_says_which_copy_ran_and_records_it_in_json(speeds_tree):
    r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(speeds_tree), "--force-misaligned",
                                  "fast", "--no-vector"])
    assert r.exit_code == 0, r.output
    assert "HEAD " in r.stdout and "misaligned access forced fast: usercopy 1/1" in r.stdout
    assert ("  usercopy_speeds: forced fast, key on: the fast copy ran (0 calls entered the slow "
            "copy, 20608 the fast one, of 20608)") in r.stdout
    r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(speeds_tree), "--force-misaligned",
                                  "both", "--json"])
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["ok"]
    assert [(x["forced"], x["vector"], x["speeds"]["ran"]) for x in doc["runs"]] == [
        ("slow", False, "slow"), ("slow", True, "slow"), ("fast", False, "fast"), ("fast", True, "fast")]


def test_a_copy_the_key_does_not_pick_fails_the_forced_boot(speeds_tree):
    t = speeds_tree
    _write(t, {speedsuite.UACCESS: TWO_BODIES + "/* IGNORES_KEY */\n"})
    run_git(["commit", "-qm", "a site nobody writes"], t)
    r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(t), "--force-misaligned", "both",
                                  "--no-vector"])
    assert r.exit_code == 3, r.output
    assert "forced slow, key off: the slow copy ran" in r.stdout
    assert "forced fast, key on: the slow copy ran (20608 calls entered the slow copy" in r.stdout
    assert "(forced fast): usercopy_speeds.speeds_copy_entered" in r.output
    # a boot whose suite printed no counts is not taken as passing either
    run = kunit.Run("x", "c", False, [kunit.Suite("usercopy", 1, 1)], forced="fast", speeds={})
    assert not run.ok and run.failed() == [
        "usercopy_speeds (forced fast: the forced-speed suite printed no counts)"]


@pytest.mark.parametrize("files, said", [
    ({speedsuite.PROBE: "/* no probe here */\n"}, "no boot probe of misaligned access speed"),
    ({speedsuite.PROBE: PROBE_C.replace("FALSE", "TRUE")}, "is true by default"),
    ({speedsuite.UACCESS: ONE_COPY}, "has one scalar copy and arch/riscv/lib/memcpy.S one memcpy"),
    ({speedsuite.KCONFIG: "# no menu\n"}, "cannot build the forced-speed suite"),
])
def test_a_revision_that_cannot_honour_the_option_is_refused_untouched(speeds_tree, files, said):
    t = speeds_tree
    _write(t, files)
    run_git(["commit", "-qm", "not a two-body patch"], t)
    before = _state(t)
    r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(t), "--force-misaligned", "fast"])
    assert r.exit_code == 2, r.output
    assert said in r.output
    assert _calls(t) == [] and _state(t) == before
    # a good revision before a bad one boots nothing either: all are checked first
    r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(t), "HEAD~1", "HEAD",
                                  "--force-misaligned", "both"])
    assert r.exit_code == 2 and _calls(t) == [] and _state(t) == before


def test_forcing_and_writing_the_fault_suite_patch_do_not_go_together(speeds_tree, tmp_path):
    r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(speeds_tree), "--force-misaligned",
                                  "fast", "--add-fault-suite", str(tmp_path / "out")])
    assert r.exit_code == 2 and "--add-fault-suite boots nothing" in r.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_the_sites_bodies_are_read_from_either_layout():
    assert speedsuite.bodies(TWO_BODIES) == speedsuite.Bodies("fallback_scalar_usercopy",
                                                              "fallback_scalar_usercopy_fast")
    mainline = ("SYM_FUNC_START(fallback_scalar_usercopy_sum_enabled)\n"
                "\tbranch_if_misaligned_fast fallback_scalar_usercopy_sum_enabled_fast\n")
    assert speedsuite.bodies(mainline).dispatcher == "fallback_scalar_usercopy_sum_enabled"
    # the macro's definition is not a site
    assert speedsuite.bodies("\t.macro branch_if_misaligned_fast fast\n\t.endm\n") is None


def test_the_boot_log_gives_the_probe_the_forcing_and_the_counts():
    log = """[    0.41] cpu0: Ratio of byte access time to unaligned word access is 6.92, unaligned accesses are fast
    # Subtest: usercopy_speeds
    # speeds_key_as_forced: the probe left the key on; forced slow: the key is off
    ok 1 speeds_key_as_forced
    # speeds_copy_entered: key off: 20608 copies checked; slow copy entered 20608 times, fast copy 0
    ok 2 speeds_copy_entered
"""
    got = speedsuite.parse_log(log)
    assert got == {"probe": [{"cpu": 0, "ratio": 6.92, "verdict": "fast"}], "probed_key": "on",
                   "forced": "slow", "key": "off", "copies": 20608, "slow_entered": 20608,
                   "fast_entered": 0, "ran": "slow"}
    both = log.replace("fast copy 0", "fast copy 3")
    assert speedsuite.parse_log(both)["ran"] == "both"


def test_the_string_patchs_bodies_are_counted_when_forced(string_tree):
    t = string_tree
    runs = kunit.run_commit(t, "HEAD", "copygen/string", force=("slow", "fast"))
    assert [(r.forced, r.vector) for r in runs] == [("slow", False), ("slow", True),
                                                    ("fast", False), ("fast", True)]
    for r in runs:
        assert r.ok and r.failed() == [], r.failed()
        assert r.speeds["ran"] == r.forced and "copies" not in r.speeds
        fast = r.forced == "fast"
        assert r.speeds["string"] == {
            "memcpy": {"calls": 10304, "slow": "__memcpy", "fast": "__memcpy_fast",
                       "slow_entered": 0 if fast else 10311, "fast_entered": 10311 if fast else 0,
                       "ran": r.forced},
            "memmove": {"calls": 20608, "slow": "__memmove", "fast": "__memmove_fast",
                        "slow_entered": 0 if fast else 20615, "fast_entered": 20615 if fast else 0,
                        "ran": r.forced}}
    assert speedsuite.describe(runs[2].speeds) == (
        "forced fast, key on: memcpy: the fast body ran (__memcpy entered 0 times, __memcpy_fast "
        "10311, of 10304 calls); memmove: the fast body ran (__memmove entered 0 times, "
        "__memmove_fast 20615, of 20608 calls)")
    # the suite: a case for memcpy and one for memmove, none for the one user copy
    c = run_git(["show", f"{runs[0].tested}:{speedsuite.SOURCE}"], t).stdout
    for name in ("__memcpy", "__memcpy_fast", "__memmove", "__memmove_fast"):
        assert f'.symbol_name = "{name}",' in c
    assert "KUNIT_CASE(speeds_memcpy_entered)" in c and "KUNIT_CASE(speeds_memmove_entered)" in c
    assert "speeds_copy_entered" not in c and "kunit_vm_mmap" not in c


def test_copygen_kunit_says_which_memcpy_and_memmove_ran_and_records_it_in_json(string_tree):
    r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(string_tree), "--force-misaligned",
                                  "slow", "--no-vector"])
    assert r.exit_code == 0, r.output
    assert ("  usercopy_speeds: forced slow, key off: memcpy: the slow body ran (__memcpy entered "
            "10311 times, __memcpy_fast 0, of 10304 calls); memmove: the slow body ran (__memmove "
            "entered 20615 times, __memmove_fast 0, of 20608 calls)") in r.stdout
    r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(string_tree), "--force-misaligned",
                                  "both", "--json"])
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["ok"]
    assert [(x["forced"], x["vector"], x["speeds"]["ran"], x["speeds"]["string"]["memcpy"]["ran"],
             x["speeds"]["string"]["memmove"]["ran"]) for x in doc["runs"]] == [
        ("slow", False, "slow", "slow", "slow"), ("slow", True, "slow", "slow", "slow"),
        ("fast", False, "fast", "fast", "fast"), ("fast", True, "fast", "fast", "fast")]
    # bench/kernel/speeds_string_boot.py's record of such a run
    from bench.kernel import speeds_string_boot
    record = {"boots": speeds_string_boot.boots(doc)}
    assert speeds_string_boot.ran_forced(record) and speeds_string_boot.passed(record)
    assert record["boots"][2]["memcpy"]["fast_entered"] == 10311
    record["boots"][2]["memmove"]["ran"] = "both"
    assert not speeds_string_boot.ran_forced(record)


def test_both_patches_on_one_tree_count_the_copy_and_the_string_functions(string_tree):
    t = string_tree
    _write(t, {speedsuite.UACCESS: TWO_BODIES})
    run_git(["commit", "-qm", "and two scalar copies"], t)
    assert speedsuite.check(t, "HEAD").routines == ("copy", "memcpy", "memmove")
    (run,) = kunit.run_commit(t, "HEAD", "both", vector_too=False, force=("fast",))
    assert run.ok and run.speeds["ran"] == "fast" and run.speeds["copies"] == 20608
    assert set(run.speeds["string"]) == {"memcpy", "memmove"}
    assert speedsuite.describe(run.speeds).startswith(
        "forced fast, key on: the fast copy ran (0 calls entered the slow copy, 20608 the fast "
        "one, of 20608); memcpy: the fast body ran")


def test_a_memcpy_the_key_does_not_pick_fails_the_forced_boot(string_tree):
    t = string_tree
    _write(t, {speedsuite.MEMCPY: TWO_STRING_BODIES + "/* IGNORES_KEY */\n"})
    run_git(["commit", "-qm", "sites nobody writes"], t)
    r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(t), "--force-misaligned", "both",
                                  "--no-vector"])
    assert r.exit_code == 3, r.output
    assert "forced slow, key off: memcpy: the slow body ran" in r.stdout
    assert "forced fast, key on: memcpy: the slow body ran (__memcpy entered 10311 times" in r.stdout
    assert "(forced fast): usercopy_speeds.speeds_memcpy_entered" in r.output


def test_the_boot_log_gives_each_string_routines_counts_and_names_one_missing():
    log = """    # speeds_key_as_forced: the probe left the key on; forced fast: the key is on
    # speeds_memcpy_entered: key on: 10304 calls checked; slow __memcpy entered 0 times, fast __memcpy_fast 10377
    # speeds_memmove_entered: key on: 20608 calls checked; slow __memmove entered 0 times, fast __memmove_fast 20608
"""
    got = speedsuite.parse_log(log, ("memcpy", "memmove"))
    assert got["ran"] == "fast" and got["key"] == "on" and "missing" not in got
    assert got["string"]["memcpy"] == {"calls": 10304, "slow": "__memcpy", "fast": "__memcpy_fast",
                                       "slow_entered": 0, "fast_entered": 10377, "ran": "fast"}
    # memmove in both bodies: the boot ran both
    both = log.replace("__memmove entered 0 times", "__memmove entered 2 times")
    assert speedsuite.parse_log(both)["ran"] == "both"
    assert speedsuite.parse_log(both)["string"]["memmove"]["ran"] == "both"
    # a routine the suite counts but whose line is not in the log: no verdict, and a failed boot
    got = speedsuite.parse_log(log.splitlines()[0] + "\n" + log.splitlines()[1],
                               ("memcpy", "memmove"))
    assert "ran" not in got and got["missing"] == ["memmove"]
    run = kunit.Run("x", "c", False, [kunit.Suite("usercopy_speeds", 3, 3)], forced="fast",
                    speeds=got)
    assert not run.ok and run.failed() == [
        "usercopy_speeds (forced fast: forced fast, key on: memcpy: the fast body ran (__memcpy "
        "entered 0 times, __memcpy_fast 10377, of 10304 calls); memmove: no counts printed)"]


def test_the_recorded_string_boots_ran_the_body_forced_and_passed():
    """bench/kernel/results/speeds_string_boot.json (docs/speeds.md, the
    string functions, "Booted"): each boot's memcpy and memmove calls
    entered the body forced and only it; with the user copy patch below,
    every suite passed; alone, only the fault suite's cases that 6.12's
    own uaccess.S fails."""
    from bench.kernel import speeds_string_boot
    runs = json.loads(speeds_string_boot.OUT.read_text())["runs"]
    for label, rec in runs.items():
        assert rec["command"].startswith("copygen kunit --kernel-tree ")
        assert [(b["forced"], b["vector"]) for b in rec["boots"]] == [
            ("slow", False), ("slow", True), ("fast", False), ("fast", True)], label
        assert speeds_string_boot.ran_forced(rec) and rec["every_boot_ran_the_forced_bodies"]
        for b in rec["boots"]:
            for name, calls in (("memcpy", 10304), ("memmove", 20608)):
                other = "fast" if b["forced"] == "slow" else "slow"
                assert b[name]["calls"] == calls and b[name][f"{other}_entered"] == 0
                assert b[name][f"{b['forced']}_entered"] >= calls
            assert b["suites"]["string"] == "20/20" and b["suites"]["memcpy"] == "6/6"
    both = runs["both_patches"]
    assert both["ok"] and both["every_suite_passed"] and speeds_string_boot.passed(both)
    assert all(b["copy"][f"{b['forced']}_entered"] == b["copy"]["calls"] == 20608
               for b in both["boots"])
    alone = runs["alone"]
    assert {name for b in alone["boots"] for name, got in b["suites"].items()
            if got.split("/")[0] != got.split("/")[1]} == {"usercopy_fault"}


@pytest.mark.skipif(_kbuild_flags() is None, reason="no kept kernel build directory with "
                    "arch/riscv/lib built (copygen kunit makes one)")
@pytest.mark.parametrize("uaccess, memcpy", [(TWO_BODIES, ""), ("", TWO_STRING_BODIES),
                                             (TWO_BODIES, TWO_STRING_BODIES)],
                         ids=["copy", "string", "both"])
def test_the_suite_compiles_with_the_kernels_flags_without_a_warning(tmp_path, uaccess, memcpy):
    bdir, argv = _kbuild_flags()
    src = tmp_path / "usercopy_speeds_kunit.c"
    src.write_text(speedsuite.render(speedsuite.Sites(speedsuite.bodies(uaccess),
                                                      speedsuite.string_bodies(memcpy))))
    argv = [re.sub("riscv_v_helpers", "usercopy_speeds_kunit", a) for a in argv]
    r = subprocess.run([*argv, "-Werror", "-c", "-o", str(tmp_path / "t.o"), str(src)], cwd=bdir,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


REAL = tree.cache_dir() / "linux-source-6.12"


@pytest.mark.kernel
@pytest.mark.skipif(not (REAL / ".git").exists(),
                    reason=f"no Linux 6.12 tree at {REAL}: ./install.sh --kernel && copygen tree")
def test_the_two_body_patch_runs_each_copy_when_forced_on_linux_6_12(tmp_path):
    """u74tuned + c910fast on the real tree, each speed forced, without and
    with V: every suite passes and every checked call entered the copy
    forced (about 5 minutes of proofs with an empty cache, and four boots)."""
    branch = "copygen/test-forced-speeds"
    run_git(["branch", "-D", branch], REAL, check=False)
    head = run_git(["rev-parse", "HEAD"], REAL).stdout
    try:
        r = CliRunner().invoke(main, ["patch", str(ROOT / "examples/u74tuned.copy"), "--fast-body",
                                      str(ROOT / "examples/c910fast.copy"), "--kernel-tree", str(REAL),
                                      "--branch", branch, "-o", str(tmp_path / "out"),
                                      "--proof-cache", str(tmp_path / "proofs"), "--json"])
        assert r.exit_code == 0, r.output
        r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(REAL), branch,
                                      "--force-misaligned", "both", "--json"])
        assert r.exit_code == 0, r.output
        runs = json.loads(r.stdout)["runs"]
        assert [(x["forced"], x["vector"]) for x in runs] == [
            ("slow", False), ("slow", True), ("fast", False), ("fast", True)]
        for x in runs:
            assert x["speeds"]["ran"] == x["forced"] and x["speeds"]["copies"] == 20608
            assert all(s["passed"] == s["total"] for s in x["suites"])
            assert {"usercopy_speeds", "usercopy_fault", "usercopy"} <= {s["name"] for s in x["suites"]}
    finally:
        run_git(["branch", "-D", branch], REAL, check=False)
    assert run_git(["rev-parse", "HEAD"], REAL).stdout == head


@pytest.mark.kernel
@pytest.mark.skipif(not (REAL / ".git").exists(),
                    reason=f"no Linux 6.12 tree at {REAL}: ./install.sh --kernel && copygen tree")
def test_the_string_patch_runs_each_memcpy_and_memmove_when_forced_on_linux_6_12(tmp_path):
    """u74tuned + c910tuned's string functions on the real tree, each speed
    forced, without and with V: the kernel's memcpy and string suites pass
    and every checked call entered the body forced (about 8 minutes of
    proofs with an empty cache, and four boots; the fault suite is left
    out: 6.12's own uaccess.S fails 16 of its cases, which this patch does
    not touch; bench/kernel/speeds_string_boot.py boots it with them)."""
    branch = "copygen/test-forced-string-speeds"
    run_git(["branch", "-D", branch], REAL, check=False)
    head = run_git(["rev-parse", "HEAD"], REAL).stdout
    try:
        r = CliRunner().invoke(main, ["patch", str(ROOT / "examples/u74tuned.copy"), "--fast-body",
                                      str(ROOT / "examples/c910tuned.copy"), "--routine", "string",
                                      "--kernel-tree", str(REAL), "--branch", branch,
                                      "-o", str(tmp_path / "out"),
                                      "--proof-cache", str(tmp_path / "proofs"), "--json"])
        assert r.exit_code == 0, r.output
        r = CliRunner().invoke(main, ["kunit", "--kernel-tree", str(REAL), branch,
                                      "--force-misaligned", "both", "--no-fault-suite", "--json"])
        assert r.exit_code == 0, r.output
        runs = json.loads(r.stdout)["runs"]
        assert [(x["forced"], x["vector"]) for x in runs] == [
            ("slow", False), ("slow", True), ("fast", False), ("fast", True)]
        for x in runs:
            assert x["speeds"]["ran"] == x["forced"]
            assert x["speeds"]["string"]["memcpy"]["calls"] == 10304
            assert x["speeds"]["string"]["memmove"]["calls"] == 20608
            assert all(s["passed"] == s["total"] for s in x["suites"])
            assert {"usercopy_speeds", "memcpy", "string"} <= {s["name"] for s in x["suites"]}
    finally:
        run_git(["branch", "-D", branch], REAL, check=False)
    assert run_git(["rev-parse", "HEAD"], REAL).stdout == head
