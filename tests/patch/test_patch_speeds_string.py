"""`copygen patch SLOW.copy --fast-body FAST.copy --routine string`
(docs/speeds.md, "The string functions"): a second memcpy and memmove in
memcpy.S, picked at boot by static branches on the probe's
fast_unaligned_access_speed_key at the top of __memcpy and __memmove.

Fast tests, on fixture trees (test_patch.make_tree with the lib Makefile,
mem*.S files assembled from a small strategy, and a stand-in of the
probe's file): the new memcpy.S and Makefile, the builds with and without
the flag (purgatory's: no branch, no fast body), both static branches
read from the machine code, and every refusal (exit 2, the tree
untouched).  Slow: the whole patch, proved in both key states and
composed, applied with `git am`.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from copygen.emu.elf import read_elf
from copygen.emu.timing.profile import available
from copygen.errors import CopygenError
from copygen.gen import toolchain
from copygen.gen.build import shim_elf
from copygen.gen.emission.emit import render_memcpy, render_memset
from copygen.gen.front.validate import load_text
from copygen.patch import stringfile
from copygen.patch.speeds import dispatch, stringplan
from copygen.patch.speeds import run as speeds_run
from copygen.verify.compose import jumplabel
from copygen.verify.compose import speeds as compose
from tests.conftest import SHARED_PROOFS
from tests.patch.test_patch import KSYMS, LIB_MAKEFILE, git, make_tree, patch, snapshot

SLOW_LIB = """# A misaligned-slow string block quick to prove.
target u74 { xlen 64; misaligned slow; profile u74 }
string slow_lib for u74 {
    memcpy { small below 16; align dst; words unroll 2; shift unroll 1; tail words; form asm }
    memmove { forward memcpy; backward words; form asm }
    memset { small below 16; align dst; words unroll 8; tail jump }
}
"""
FAST_LIB = """# A misaligned-fast string block quick to prove.
target c920 { xlen 64; misaligned fast; profile c920 }
string fast_lib for c920 {
    memcpy { small below 16; align dst; words unroll 2; shift off; tail overlap; form asm }
    memmove { forward memcpy; backward words; form asm }
    memset { small below 16; align dst; words unroll 8; tail jump }
}
"""
PROBE_C = "/* the boot probe of misaligned access speed, a stand-in */\n" \
          "DEFINE_STATIC_KEY_FALSE(fast_unaligned_access_speed_key);\n"
LIB = stringfile.LIB


def strategy(text: str, name: str):
    return load_text(text, name, available())


def tree_files(probe_c: str | None = PROBE_C) -> dict[str, str]:
    """The files of the fixture tree beside uaccess.S: the lib Makefile,
    riscv_ksyms.c, memcpy.S (memcpy and memmove), an empty memmove.S and
    memset.S, all from SLOW_LIB, and the probe's file."""
    st = strategy(SLOW_LIB, "tree.copy")
    files = {stringfile.MAKEFILE: LIB_MAKEFILE, stringfile.KSYMS: KSYMS,
             f"{LIB}/memcpy.S": render_memcpy(st, "tree.copy", False, ("__pi_",)),
             f"{LIB}/memmove.S": "/* memmove is in memcpy.S here */\n",
             f"{LIB}/memset.S": render_memset(st, "tree.copy", False, ("__pi_",))}
    if probe_c is not None:
        files[dispatch.PROBE] = probe_c
    return files


def string_tree(path: Path, probe_c: str | None = PROBE_C) -> Path:
    tree = make_tree(path)
    for rel, text in tree_files(probe_c).items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    git(tree, "add", "-A")
    toolchain.run_git(["commit", "-q", "-m", "the string files"], tree,
                      env={"GIT_AUTHOR_NAME": "k", "GIT_AUTHOR_EMAIL": "k@k",
                           "GIT_COMMITTER_NAME": "k", "GIT_COMMITTER_EMAIL": "k@k"})
    return tree


def _plan() -> stringplan.Plan:
    files = tree_files()
    return stringplan.plan(strategy(SLOW_LIB, "slow.copy"), strategy(FAST_LIB, "fast.copy"),
                             "slow.copy", "fast.copy", files.get)


def test_both_functions_are_headed_by_the_branch_and_the_fast_bodies_are_local():
    plan = _plan()
    text = plan.string.files[stringfile.MEMCPY_S]
    assert plan.sites == (("__memcpy", "__memcpy_fast"), ("__memmove", "__memmove_fast"))
    for name in ("__memcpy", "__memmove"):
        head = text[text.index(f"SYM_FUNC_START({name})\n"):]
        first = next(ln for ln in head.splitlines()[1:] if ln.strip() and not ln.strip().startswith(("/*", "*")))
        assert first.strip() == f"{dispatch.MACRO} {name}_fast"
        assert f"SYM_FUNC_START_LOCAL({name}_fast)" in text
    # the fast memmove hands disjoint buffers to the fast memcpy: one read of the key a call
    fast_mm = text[text.index("SYM_FUNC_START_LOCAL(__memmove_fast)"):]
    assert "__memcpy_fast" in fast_mm and "\t__memcpy\n" not in fast_mm
    assert f"#ifdef {stringplan.GUARD}" in text and f"defined({stringplan.FLAG})" in text
    mk = plan.string.files[stringfile.MAKEFILE]
    assert f"AFLAGS_memcpy.o\t\t\t+= -D{stringplan.FLAG}" in mk
    assert "lib-y\t\t\t+= memcpy.o" in mk and "memmove.o" not in mk


def _build(text: str, tmp: Path, flag: bool) -> Path:
    (tmp / "memcpy.S").write_text(text)
    (tmp / "speeds.S").write_text(speeds_run.wrapper("memcpy.S", *[stringplan.FLAG] * flag))
    return shim_elf(tmp / "speeds.S", tmp)


def test_two_sites_read_from_the_machine_code_and_none_in_purgatory(tmp_path):
    """Built as lib/'s memcpy.o (the flag): one site per function, at its
    first instruction, a nop jumping to its fast body with the key on.
    Built as purgatory's (no flag): no __jump_table, no fast body."""
    text = _plan().string.files[stringfile.MEMCPY_S]
    (tmp_path / "lib").mkdir()
    (tmp_path / "purgatory").mkdir()
    elf = _build(text, tmp_path / "lib", True)
    syms = read_elf(elf).symbols
    sites = compose.check_sites(elf, dispatch.KEY, {syms["__memcpy"]: syms["__memcpy_fast"],
                                                  syms["__memmove"]: syms["__memmove_fast"]})
    assert [s.holds() for s in sites] == ["nop", "nop"]
    on, _ = jumplabel.with_key(elf, dispatch.KEY, tmp_path / "on.elf")
    assert [s.holds() for s in jumplabel.sites(on)] == ["jump", "jump"]
    bare = _build(text, tmp_path / "purgatory", False)
    assert jumplabel.sites(bare) == []
    assert "__memcpy_fast" not in read_elf(bare).symbols
    # a pair the machine code does not have is refused
    with pytest.raises(CopygenError, match="not at the string function's first instruction"):
        compose.check_sites(elf, dispatch.KEY, {syms["__memcpy"] + 4: syms["__memcpy_fast"],
                                              syms["__memmove"]: syms["__memmove_fast"]},
                            "the string function")


NO_ASM = FAST_LIB.replace("; form asm }", " }")


@pytest.mark.parametrize("case, words", [
    ("fast_is_slow", "cannot go into the fast .--fast-body. slot"),
    ("slow_is_fast", "cannot go into the slow .FILE. slot"),
    ("fast_in_c", "must both be in assembly"),
    ("no_string", "has no string block"),
    ("no_probe", "no boot probe of misaligned access speed"),
    ("twice", "two string bodies"),
    ("with_uaccess", "makes one patch of the string functions"),
])
def test_refused_with_the_tree_untouched(case, words, tmp_path):
    tree = string_tree(tmp_path / "linux", None if case == "no_probe" else PROBE_C)
    slow, fast = tmp_path / "slow.copy", tmp_path / "fast.copy"
    slow.write_text(FAST_LIB if case == "slow_is_fast" else SLOW_LIB)
    fast.write_text({"fast_is_slow": SLOW_LIB, "fast_in_c": NO_ASM,
                     "no_string": "target c920 { xlen 64; misaligned fast; profile c920 }\n"
                                  "copy_user c for c920 { small below auto; align dst; "
                                  "words unroll 2; shift off; tail overlap; fault exact }\n"}
                    .get(case, FAST_LIB))
    extra = ["--fast-body", str(fast)] * (2 if case == "twice" else 1)
    extra += ["--routine", "string"] + (["--routine", "copy_user"] if case == "with_uaccess" else [])
    before = snapshot(tree)
    r, out = patch(slow, tree, tmp_path / "out", SHARED_PROOFS, *extra)
    assert r.exit_code == 2, r.output
    assert out["ok"] is False and re.search(words, out["error"]["message"]), out
    assert snapshot(tree) == before
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


@pytest.mark.slow
def test_the_two_body_string_patch_proves_composes_and_applies(tmp_path):
    tree = string_tree(tmp_path / "linux")
    slow, fast = tmp_path / "slow.copy", tmp_path / "fast.copy"
    slow.write_text(SLOW_LIB)
    fast.write_text(FAST_LIB)
    r, out = patch(slow, tree, tmp_path / "out", SHARED_PROOFS, "--fast-body", str(fast),
                   "--routine", "string", "--profile", "u74")
    assert r.exit_code == 0, r.output
    (commit,) = out["commits"]
    assert [p["verdict"] for p in commit["after"]["string"]] == ["proved", "proved"]
    msg = commit["message"]
    assert msg.startswith(stringplan.SUBJECT)
    assert "string slow_lib for u74" in msg and "string fast_lib for c920" in msg
    assert "memcpy               proved    proved   proved   proved" in msg
    assert "memmove              proved    proved   proved   proved" in msg
    assert "On x60, misaligned access fast" in msg and "On u74, misaligned access slow" in msg
    assert all(len(ln) <= 72 for ln in msg.splitlines() if not ln.startswith(("    ", "  ")))
    # applies with git am onto the tree as it was, giving the branch's files
    work = tmp_path / "am"
    git(tree, "worktree", "add", "-q", "--detach", str(work), "master")
    git(work, "am", "-q", *out["patches"])
    for rel in (stringfile.MEMCPY_S, stringfile.MAKEFILE):
        assert (work / rel).read_text() == git(tree, "show", f"{out['branch']}:{rel}")
