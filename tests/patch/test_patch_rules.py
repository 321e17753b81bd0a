"""`copygen patch` reads a tree's register rules (issue 63, patch.rules):
no t6 in the hand-written assembly it replaces -> t6 reserved; -ffixed-REG
in arch/riscv/Makefile -> REG reserved; a memset.S whose computed jump
goes through t2 -> jumps only through t2.  The strategy may add a rule,
never drop one.  The generated bodies follow the rules, the proofs add
clause R1, and the message and the JSON say which rule was followed and
why.  A tree that uses t6 (the 2021 and 6.12 layouts) gets no rule, and
its patch is what it was.

tests/kernel_style/mainline_layout.S keeps SR_SUM in t6, as mainline did
until 2025; today's mainline ("avoid using t6/x31 in hand asm") keeps it
in t5, which `t6_free` makes of it.  The proof-heavy tests are marked slow.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from copygen.errors import CopygenError
from copygen.gen.emission import asmtext
from copygen.gen.front.validate import load_text
from copygen.patch import bodies, kernelfile, rules
from tests.conftest import ROOT, SHARED_PROOFS
from tests.patch.test_patch import SMALL, _own_git_config, git, make_tree, patch, snapshot  # noqa: F401

HERE = ROOT / "tests" / "kernel_style"
UACCESS = kernelfile.UACCESS
MEMSET = """/* SPDX-License-Identifier: MIT */
/* copygen test fixture: a byte memset entered through t2, as a kernel
 * with landing pads routes its computed jumps */
#include <linux/linkage.h>
#include <asm/asm.h>

SYM_FUNC_START(__memset)
	mv	t0, a0
	beqz	a2, 2f
	lla	t2, 1f
	jr	t2
1:
	sb	a1, 0(t0)
	addi	t0, t0, 1
	addi	a2, a2, -1
	bnez	a2, 1b
2:
	ret
SYM_FUNC_END(__memset)
"""
RULE_T6 = "t6 is not used by the tree's hand-written assembly (uaccess.S): reserved"
RULE_T2 = "the tree's memset.S computes its jump through t2: computed jumps only through t2"
REG = re.compile(r"(?<![\w.$])t6(?![\w.$])")


def t6_free() -> str:
    """The mainline fixture as mainline has it since 2025: SR_SUM in t5."""
    text = (HERE / "mainline_layout.S").read_text()
    assert "t5" not in text[text.index("SYM_FUNC_START(__clear_user)"):]
    return text.replace("t6", "t5")


def shown(files: dict[str, str]):
    return lambda rel: files.get(rel)


def from_tree(uaccess: str, **more) -> rules.Rules:
    return rules.from_tree(shown({UACCESS: uaccess, **more}), (UACCESS,))


def commit_files(tree: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    git(tree, "add", "-A")
    git(tree, "-c", "user.name=k", "-c", "user.email=k@k", "commit", "-q", "-m", "more files")


# --- reading the rules (fast) --------------------------------------------------

def test_a_tree_without_t6_reserves_it_and_says_why():
    got = from_tree(t6_free())
    assert got.reserve == ("t6",) and got.jump is None
    lines = got.lines()
    assert lines[0] == "Register rules (the generated code follows them; clause R1 proves it):"
    assert " ".join(" ".join(lines[1:]).split()) == RULE_T6
    assert all(len(ln) <= 72 for ln in lines)
    assert got.verify_rules().reserved == ("t6",)


def test_a_tree_that_uses_t6_has_no_rule():
    assert not from_tree((HERE / "mainline_layout.S").read_text()).rules
    assert not from_tree((HERE / "layout_2021.S").read_text()).rules
    assert from_tree((HERE / "layout_2021.S").read_text()).lines() == []


def test_comments_do_not_count_and_macros_do():
    text = t6_free()
    assert from_tree(text.replace("SYM_FUNC_START(__clear_user)",
                                  "/* t6 is free */\nSYM_FUNC_START(__clear_user)")).reserve == ("t6",)
    macro = "\t.macro keep_t6\n\tmv\tx31, x31\n\t.endm\n"
    assert not from_tree(text.replace("\t.text\n", macro + "\t.text\n", 1)).rules


def test_ffixed_in_the_makefile_reserves_the_register():
    mk = ("# -ffixed-t0 in a comment is no rule\n"
          "KBUILD_CFLAGS += -ffixed-x27 -mcmodel=medany\n")
    got = from_tree((HERE / "layout_2021.S").read_text(), **{rules.MAKEFILE: mk})
    assert got.reserve == ("s11",)
    assert got.rules[0].line() == "arch/riscv/Makefile has -ffixed-x27: s11 reserved"
    with pytest.raises(CopygenError, match="-ffixed-a0; a0 cannot be reserved"):
        from_tree(t6_free(), **{rules.MAKEFILE: "KBUILD_CFLAGS += -ffixed-a0\n"})


def test_memset_through_t2_is_the_jump_rule_and_through_a5_none():
    got = from_tree(t6_free(), **{rules.MEMSET_S: MEMSET})
    assert got.jump == "t2" and RULE_T2 in [r.line() for r in got.rules]
    assert from_tree(t6_free(), **{rules.MEMSET_S: MEMSET.replace("t2", "a5")}).jump is None


def test_the_strategy_adds_rules_and_may_not_change_the_jump():
    tree = from_tree(t6_free(), **{rules.MEMSET_S: MEMSET})
    st = load_text(SMALL.replace("misaligned slow\n", "misaligned slow\n    reserve t5\n"), "s.copy")
    merged = rules.with_strategy(tree, st)
    assert merged.reserve == ("t6", "t5") and merged.jump == "t2"
    assert "the strategy's target u74 says `reserve t5`: t5 reserved" in [r.line() for r in merged.rules]
    under = rules.under(st, merged)
    assert under.copy_user.target.reserve == ("t5", "t6") and under.clear_user.target.jump == "t2"
    bad = load_text(SMALL.replace("misaligned slow\n", "misaligned slow\n    jump a5\n"), "b.copy")
    with pytest.raises(CopygenError, match="tree's rule is t2") as e:
        rules.with_strategy(tree, bad)
    target_line = SMALL.splitlines().index("target u74 {") + 1
    assert e.value.loc.file == "b.copy" and e.value.loc.line == target_line


def test_the_bodies_for_a_t6_free_tree_name_no_t6():
    """u74tuned's copy and clear for today's mainline, under its rules: no
    code line names t6; without the rule (the fixture as it is) they do."""
    st = load_text((ROOT / "examples" / "u74tuned.copy").read_text(), "u74tuned.copy")
    for text, want in ((t6_free(), False), ((HERE / "mainline_layout.S").read_text(), True)):
        lines = text.splitlines(keepends=True)
        _, places = kernelfile.places(lines, UACCESS, ("copy_user", "clear_user"))
        tree_rules = rules.with_strategy(from_tree(text), st)
        made = bodies.bodies(rules.under(st, tree_rules), lines, places)
        code = [ln.code for _, body in made for ln in asmtext.code_lines(body.splitlines())]
        assert any(REG.search(c) for c in code) is want
        if not want:        # nor does a comment: `git grep -w t6` finds nothing new
            assert not any(REG.search(body) for _, body in made)


def test_6_12_tree_has_no_rule():
    """Debian's 6.12 source, where it is: uaccess.S and memcpy.S use t6,
    memset jumps through a5, no -ffixed: nothing is inferred, so its patch
    is the one it was."""
    root = Path.home() / ".cache" / "copygen" / "linux-source-6.12"
    if not (root / UACCESS).is_file():
        pytest.skip("no 6.12 tree in ~/.cache/copygen")

    def show(rel):
        p = root / rel
        return p.read_text() if p.is_file() else None
    assert not rules.from_tree(show, (UACCESS, *rules.STRING_FILES)).rules


# --- refused before anything is proved (fast) ----------------------------------

@pytest.mark.parametrize("strategy, files, words", [
    (SMALL.replace("misaligned slow\n", "misaligned slow\n    jump a5\n"),
     {rules.MEMSET_S: MEMSET}, "tree's rule is t2"),
    (SMALL, {rules.MAKEFILE: "KBUILD_CFLAGS += -ffixed-ra\n"}, "ra cannot be reserved"),
], ids=["strategy-jump-a5", "makefile-ffixed-ra"])
def test_a_rule_that_cannot_hold_is_refused_and_the_tree_untouched(tmp_path, strategy, files, words):
    tree = make_tree(tmp_path / "linux", text=t6_free())
    commit_files(tree, files)
    src = tmp_path / "s.copy"
    src.write_text(strategy)
    before = snapshot(tree)
    r, out = patch(src, tree, tmp_path / "out", SHARED_PROOFS)
    assert r.exit_code == 2, r.output
    assert re.search(words, out["error"]["message"]) and snapshot(tree) == before
    assert not (tmp_path / "out").exists()


# --- whole patches (slow: proofs before and after) ------------------------------

@pytest.mark.slow
def test_the_mainline_patch_follows_the_rules_says_them_and_proves_r1(tmp_path):
    """SMALL patched into today's mainline layout with a t2 memset: the
    added code names no t6 and has no computed jump, the message and the
    JSON give both rules with their reasons, and every entry point is
    proved, R1 included, before and after."""
    src = tmp_path / "small.copy"
    src.write_text(SMALL)
    tree = make_tree(tmp_path / "linux", text=t6_free())
    commit_files(tree, {rules.MEMSET_S: MEMSET})
    r, out = patch(src, tree, tmp_path / "out", SHARED_PROOFS, "--routine", "copy_to_user",
                   "--routine", "clear_user")
    assert r.exit_code == 0, r.output
    diff = git(tree, "diff", "master", "copygen/small", "--", UACCESS)
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    code = [ln.code for ln in asmtext.code_lines(added)]
    assert code and not any(REG.search(ln) for ln in added)
    assert not re.search(r"\bjr\b|\bjalr\b", "\n".join(code))
    msg = out["commits"][0]["message"]
    flat = " ".join(msg.split())
    assert RULE_T6 in flat and RULE_T2 in flat
    assert all(len(line) <= 75 for line in msg.splitlines())
    assert [r["register"] for r in out["register_rules"]] == ["t6", "t2"]
    commit = out["commits"][0]
    for side in ("before", "after"):
        proofs = [p for ps in commit[side].values() for p in ps]
        assert proofs and all(p["status"].get("R1") == "proved" for p in proofs), side
        assert all(p["verdict"] == "proved" for p in proofs), side


@pytest.mark.slow
def test_a_tree_that_uses_t6_gets_the_patch_it_had(tmp_path):
    """layout_2021.S names t6: no rule, no R1, and the message has no rules
    paragraph."""
    src = tmp_path / "small.copy"
    src.write_text(SMALL)
    tree = make_tree(tmp_path / "linux", "layout_2021.S")
    r, out = patch(src, tree, tmp_path / "out", SHARED_PROOFS, "--routine", "copy_to_user",
                   "--routine", "clear_user")
    assert r.exit_code == 0, r.output
    assert out["register_rules"] == []
    commit = out["commits"][0]
    assert "Register rules" not in commit["message"]
    assert not any("R1" in p["status"] for ps in commit["after"].values() for p in ps)
