"""`copygen patch` on kernel trees made here (issue 19): a git tree with
arch/riscv/lib/uaccess.S from tests/kernel_style/mainline_layout.S, another
from layout_2021.S, scripts/ without checkpatch, an identity in the tree's
own config (global and system git config are kept out).

The patch applies with `git am` on a fresh copy of the tree, the patched
file assembles with the shim, every line outside the replaced bodies is
as it was, the patched routines prove, the message holds the table and
the Signed-off-by; bad input leaves the tree untouched.  Proofs share one
cache per module run, so each version of a file is proved once (the
proof-heavy tests are marked slow; about four minutes in all).
"""
from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.emu.timing.profile import load_profile
from copygen.gen import toolchain
from copygen.patch import kernelfile
from tests.conftest import ROOT, SHARED_PROOFS

HERE = ROOT / "tests" / "kernel_style"
UACCESS = kernelfile.UACCESS
IDENTITY = ("Ada Tester", "ada@example.org")
SMALL = """# A strategy quick to prove, for copygen's patch tests.
target u74 {
    xlen 64
    misaligned slow
}

copy_user small for u74 {
    small below 23
    align dst
    words unroll 2 schedule loads_first
    shift unroll 1 schedule interleave
    tail bytes
    fault exact
}

clear_user small_clear for u74 {
    small below 16
    align dst
    words unroll 2
    tail bytes
    fault exact
}
"""
# fault block: a store fault inside a block of __clear_user counts the
# words stored before it as not stored (C4/C6 violated)
BLOCKY = """target u74 { xlen 64; misaligned slow }
clear_user blocky for u74 { small below 40; align dst; words unroll 4; tail bytes; fault block }
"""


@pytest.fixture(autouse=True)
def _own_git_config(monkeypatch, tmp_path_factory):
    """Only the tree's own config: no user.name from the machine's."""
    empty = tmp_path_factory.getbasetemp() / "gitconfig"
    empty.touch()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def git(tree, *args, check=True) -> str:
    return toolchain.run_git(list(args), tree, check=check).stdout


def make_tree(path, fixture="mainline_layout.S", identity=True, text=None):
    (path / "arch/riscv/lib").mkdir(parents=True)
    (path / "scripts").mkdir()
    (path / "scripts" / "README").write_text("scripts of the kernel build\n")
    (path / UACCESS).write_text(text if text is not None else (HERE / fixture).read_text())
    git(path, "init", "-q", "-b", "master")
    if identity:
        git(path, "config", "user.name", IDENTITY[0])
        git(path, "config", "user.email", IDENTITY[1])
    env = {"GIT_AUTHOR_NAME": "k", "GIT_AUTHOR_EMAIL": "k@k", "GIT_COMMITTER_NAME": "k",
           "GIT_COMMITTER_EMAIL": "k@k"}
    git(path, "add", "-A")
    toolchain.run_git(["commit", "-q", "-m", "the tree as it was"], path, env=env)
    return path


def snapshot(tree):
    """What a refused patch must leave as it was."""
    return (git(tree, "status", "--porcelain"), git(tree, "rev-parse", "HEAD"),
            git(tree, "branch", "--list"), (tree / UACCESS).read_bytes() if (tree / UACCESS).exists() else None)


def patch(strategy, tree, out, cache, *extra):
    args = ["patch", str(strategy), "--kernel-tree", str(tree), "-o", str(out),
            "--proof-cache", str(cache), "--json", *extra]
    r = CliRunner().invoke(main, args)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r, json.loads(r.stdout) if r.stdout.strip() else None


@pytest.fixture(scope="module")
def cache():
    return SHARED_PROOFS


@pytest.fixture
def small(tmp_path):
    p = tmp_path / "small.copy"
    p.write_text(SMALL)
    return p


# --- bad input: refused with exit 2, the tree untouched ----------------------

def _refused(strategy, tree, tmp_path, cache, words, *extra):
    before = snapshot(tree)
    r, out = patch(strategy, tree, tmp_path / "out", cache, *extra)
    assert r.exit_code == 2, r.output
    assert out["ok"] is False and re.search(words, out["error"]["message"]), out["error"]
    assert snapshot(tree) == before
    assert not (tmp_path / "out").exists()


def test_not_a_git_tree_is_refused(small, tmp_path, cache):
    tree = tmp_path / "linux"
    (tree / "arch/riscv/lib").mkdir(parents=True)
    (tree / UACCESS).write_text((HERE / "mainline_layout.S").read_text())
    r, out = patch(small, tree, tmp_path / "out", cache)
    assert r.exit_code == 2 and "not a git tree" in out["error"]["message"]
    assert not (tree / ".git").exists() and not (tmp_path / "out").exists()


def test_a_dirty_tree_is_refused(small, tmp_path, cache):
    tree = make_tree(tmp_path / "linux")
    with (tree / UACCESS).open("a") as f:
        f.write("/* local change */\n")
    _refused(small, tree, tmp_path, cache, "changes not committed")


def test_a_missing_file_is_refused(small, tmp_path, cache):
    tree = make_tree(tmp_path / "linux")
    git(tree, "rm", "-q", UACCESS)
    git(tree, "commit", "-q", "-m", "no uaccess.S")
    _refused(small, tree, tmp_path, cache, "missing")


def test_a_routine_the_file_lacks_is_refused(small, tmp_path, cache):
    text = (HERE / "mainline_layout.S").read_text()
    start = text.index("SYM_FUNC_START(__clear_user)")
    end = text.index("EXPORT_SYMBOL(__clear_user)") + len("EXPORT_SYMBOL(__clear_user)\n")
    tree = make_tree(tmp_path / "linux", text=text[:start] + text[end:])
    _refused(small, tree, tmp_path, cache, "no function __clear_user")


def test_an_existing_branch_is_refused(small, tmp_path, cache):
    tree = make_tree(tmp_path / "linux")
    git(tree, "branch", "copygen/small")
    _refused(small, tree, tmp_path, cache, "already exists")


def test_no_git_identity_is_refused(small, tmp_path, cache):
    tree = make_tree(tmp_path / "linux", identity=False)
    _refused(small, tree, tmp_path, cache, "user.name")


def test_series_needs_both_blocks(tmp_path, cache):
    tree = make_tree(tmp_path / "linux")
    blocky = tmp_path / "blocky.copy"
    blocky.write_text(BLOCKY)
    _refused(blocky, tree, tmp_path, cache, "--series", "--series")


# --- a patch of the mainline layout ------------------------------------------

@pytest.fixture(scope="module")
def mainline(tmp_path_factory, cache):
    base = tmp_path_factory.mktemp("mainline")
    mp = pytest.MonkeyPatch()
    empty = base / "gitconfig"
    empty.touch()
    mp.setenv("GIT_CONFIG_GLOBAL", str(empty))
    mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
    strategy = base / "small.copy"
    strategy.write_text(SMALL)
    tree = make_tree(base / "linux")
    before = snapshot(tree)
    # copy_to_user: its entry points only (proving copy_from_user's too
    # would double the module's time); the message says which were left out
    r, out = patch(strategy, tree, base / "out", cache, "--routine", "copy_to_user",
                   "--routine", "clear_user")
    mp.undo()
    assert r.exit_code == 0, r.output
    return {"tree": tree, "out": out, "before": before, "base": base, "stderr": r.stderr}


@pytest.mark.slow
def test_mainline_patch_progress_says_before_and_after_in_a_developers_words(mainline):
    """Piped, progress is one line per proof and bench, naming the states as
    a kernel developer does: the base tree, the patched one."""
    lines = mainline["stderr"].splitlines()
    assert "proving __asm_copy_to_user, before (base tree)" in lines
    assert "proving __asm_copy_to_user, after (patched: copy_user+clear_user)" in lines
    assert not any("state" in ln for ln in lines), lines


def test_progress_names_the_states_base_tree_and_patched(monkeypatch, tmp_path):
    """The states whose proofs and benches progress reports are named
    "before (base tree)" and "after (patched: KINDS)", never state0/state1."""
    from types import SimpleNamespace
    from copygen.patch import evidence, run
    said = []
    monkeypatch.setattr(evidence, "build", lambda name, text, d, label: evidence.State(name, d, d, label))

    def prove(state, kinds, *args):
        state.proofs.update({k: [] for k in kinds})
        said.append(f"proving x, {state.label}")
    monkeypatch.setattr(evidence, "prove", prove)
    monkeypatch.setattr(evidence, "measure", lambda *a, **k: [])
    monkeypatch.setattr(run.message, "Change", lambda *a, **k: None)
    steps = [SimpleNamespace(kinds=("copy_user",)), SimpleNamespace(kinds=("clear_user",))]
    req = SimpleNamespace(proof_cache=None, jobs=1, entries=None, allow_unproven=True, measured=(),
                          source="x.copy")
    run._evidence(["a", "b", "c"], steps, req, [], tmp_path, said.append, run.Stages())
    assert said == ["proving x, after (patched: copy_user)", "proving x, after (patched: clear_user)",
                    "proving x, before (base tree)", "proving x, after (patched: copy_user)"]


def _outside_bodies(text: str, names) -> list[str]:
    lines = text.splitlines()
    fns = kernelfile.functions(lines, "uaccess.S")
    drop = {i for n in names for i in range(fns[n].body_start, fns[n].body_end)}
    return [line for i, line in enumerate(lines) if i not in drop]


def _assembles(text: str, tmp_path) -> None:
    src = tmp_path / "patched.S"
    src.write_text(text)
    toolchain.assemble(src, ROOT / "shim" / "include", tmp_path / "patched.o")


@pytest.mark.slow
def test_mainline_patch_leaves_the_checkout_and_makes_one_commit(mainline):
    tree, out = mainline["tree"], mainline["out"]
    status, head, branches, text = mainline["before"]
    assert snapshot(tree) == (status, head, "  copygen/small\n" + branches, text)
    assert git(tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == "master"
    assert out["ok"] and out["layout"] == "mainline" and out["branch"] == "copygen/small"
    assert git(tree, "rev-list", "--count", "master..copygen/small").strip() == "1"
    assert len(out["patches"]) == 1 and out["checkpatch"] is None


@pytest.mark.slow
def test_mainline_patch_replaces_only_the_bodies(mainline, tmp_path):
    tree = mainline["tree"]
    old = (tree / UACCESS).read_text()
    new = git(tree, "show", f"copygen/small:{UACCESS}")
    names = ("fallback_scalar_usercopy_sum_enabled", "__clear_user")
    assert _outside_bodies(old, names) == _outside_bodies(new, names)
    assert "do not edit" not in new
    _assembles(new, tmp_path)
    # the scalar copy runs with SUM held by its callers: no SUM handling in it
    body = new[new.index("SYM_FUNC_START(fallback_scalar_usercopy_sum_enabled)"):
               new.index("SYM_FUNC_END(fallback_scalar_usercopy_sum_enabled)")]
    assert "fixup " in body and "csrs" not in body and "csrc" not in body and "SR_SUM" not in body
    clear = new[new.index("SYM_FUNC_START(__clear_user)"):new.index("SYM_FUNC_END(__clear_user)")]
    assert "csrs\tCSR_STATUS" in clear and "csrc\tCSR_STATUS" in clear


@pytest.mark.slow
def test_mainline_patch_applies_with_git_am_on_a_fresh_tree(mainline, tmp_path):
    fresh = make_tree(tmp_path / "fresh")
    patch_file = mainline["out"]["patches"][0]
    git(fresh, "am", "-q", patch_file)
    assert (fresh / UACCESS).read_text() == git(mainline["tree"], "show", f"copygen/small:{UACCESS}")
    assert git(fresh, "log", "-1", "--format=%an <%ae>").strip() == f"{IDENTITY[0]} <{IDENTITY[1]}>"


@pytest.mark.slow
def test_mainline_patch_message_holds_the_table_and_the_proofs(mainline):
    commit = mainline["out"]["commits"][0]
    msg = commit["message"]
    subject = msg.splitlines()[0]
    assert subject.startswith("riscv: lib: ") and len(subject) < 75
    assert all(len(line) <= 75 for line in msg.splitlines()), max(msg.splitlines(), key=len)
    assert msg.rstrip().endswith(f"Signed-off-by: {IDENTITY[0]} <{IDENTITY[1]}>")
    u74 = load_profile("u74")
    flat = " ".join(msg.split())
    assert f"cost profile u74, {u74.provenance.split(', cross')[0]}" in flat
    for routine in ("copy_to_user", "clear_user"):
        assert routine in msg
    # one line per size: before and after of copy_to_user's and
    # clear_user's aligned and misaligned classes side by side
    assert re.search(r"^\s+copy_to_user\s+clear_user$", msg, re.M)
    assert re.search(r"^\s+size\s+aligned\s+misaligned\s+aligned\s+misaligned$", msg, re.M)
    for size in (8, 16, 32, 64, 128, 256, 1024, 4096, 8192):
        assert re.search(rf"^\s+{size}(\s+\d+){{8}}$", msg, re.M), size
    assert "Cycles before and after:" in msg and "Proved after it: C1," in msg
    for sym in ("__asm_copy_to_user", "__asm_copy_to_user_sum_enabled", "__clear_user"):
        assert re.search(rf"^\s+{sym}\s+\w+\s+proved$", msg, re.M)
    assert "copygen 0.1.0" in msg and "copy_user small for u74 { small below 23;" in msg
    assert "--routine copy_to_user" in msg and "--routine clear_user" in msg
    assert re.search(r"Not proved here.*__asm_copy_from_user", msg, re.S)
    assert len(commit["rows"]) == 2 * 9 * 2


@pytest.mark.slow
def test_mainline_patched_file_proves_with_verify(mainline, tmp_path, cache):
    src = tmp_path / "uaccess.S"
    src.write_text(git(mainline["tree"], "show", f"copygen/small:{UACCESS}"))
    r = CliRunner().invoke(main, ["verify", str(src), "--workdir", str(tmp_path / "w"),
                                  "--proof-cache", str(cache), "--routine", "copy_to_user",
                                  "--routine", "clear_user"])
    assert r.exit_code == 0, r.output
    assert "copy_to_user_sum_enabled" in r.output


# --- the 2021 layout, as a series --------------------------------------------

@pytest.mark.slow
def test_2021_layout_series_two_patches_and_a_cover_letter(small, tmp_path, cache):
    tree = make_tree(tmp_path / "linux", "layout_2021.S")
    before = snapshot(tree)
    # copy_from_user shares copy_to_user's body: proving its entry point too
    # would add two proofs and test nothing the mainline patch does not
    r, out = patch(small, tree, tmp_path / "out", cache, "--series",
                   "--routine", "copy_to_user", "--routine", "clear_user")
    assert r.exit_code == 0, r.output
    assert snapshot(tree)[:2] == before[:2] and snapshot(tree)[3] == before[3]
    assert out["layout"] == "2021"
    cover, *patches = out["patches"]
    assert "0000-cover-letter" in cover and len(patches) == 2
    text = open(cover).read()
    assert "*** SUBJECT HERE ***" not in text and "*** BLURB HERE ***" not in text
    assert "copy_to_user" in text and "clear_user" in text and "Cycles before and after:" in text
    assert [c["routines"] for c in out["commits"]] == [["copy_user"], ["clear_user"]]
    fresh = make_tree(tmp_path / "fresh", "layout_2021.S")
    git(fresh, "am", "-q", *patches)
    new = (fresh / UACCESS).read_text()
    assert new == git(tree, "show", f"copygen/small:{UACCESS}")
    _assembles(new, tmp_path)
    # outside the two bodies only the .fixup code they alone reached is gone
    old = (HERE / "layout_2021.S").read_text()
    names = ("__asm_copy_to_user", "__clear_user")
    kept_old = _outside_bodies(old[:old.index("\n\n\n\t/*\n\t * Fault code.")] + "\n", names)
    assert _outside_bodies(new, names) == kept_old
    body = new[new.index("ENTRY(__asm_copy_from_user)"):new.index("END(__asm_copy_to_user)")]
    assert "csrs\tCSR_STATUS" in body and "csrc\tCSR_STATUS" in body
    # the second patch proved __clear_user in the file as the series leaves it
    src = tmp_path / "uaccess.S"
    src.write_text(new)
    v = CliRunner().invoke(main, ["verify", str(src), "--workdir", str(tmp_path / "w"),
                                  "--proof-cache", str(cache), "--routine", "clear_user"])
    assert v.exit_code == 0, v.output


# --- an unproven candidate -----------------------------------------------------

@pytest.mark.slow
def test_an_unproven_candidate_is_refused_and_a_draft_says_so(tmp_path, cache):
    tree = make_tree(tmp_path / "linux")
    blocky = tmp_path / "blocky.copy"
    blocky.write_text(BLOCKY)
    before = snapshot(tree)
    r, out = patch(blocky, tree, tmp_path / "out", cache)
    assert r.exit_code == 3, r.output
    assert "not proved" in out["error"]["message"] and "__clear_user" in out["error"]["message"]
    assert re.search(r"__clear_user C[46]: violated", r.stderr)
    assert snapshot(tree) == before and not (tmp_path / "out").exists()
    # a draft is written when asked for, and says so first; the tree's
    # checkpatch is run on it with --strict
    checkpatch = tree / "scripts" / "checkpatch.pl"
    checkpatch.write_text('print "checkpatch ran: @ARGV\\n"; print "total: 0 errors, 0 warnings\\n";\n')
    git(tree, "add", "scripts/checkpatch.pl")
    git(tree, "commit", "-q", "-m", "checkpatch")
    r, out = patch(blocky, tree, tmp_path / "out", cache, "--allow-unproven")
    assert r.exit_code == 0, r.output
    assert out["commits"][0]["subject"].startswith("riscv: lib: uaccess: unproven draft")
    assert "checkpatch ran: --strict" in out["checkpatch"]
    assert git(tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == "master"



# --- the layer's parts, without proofs -----------------------------------------

def _spliced(text, kinds, strategy=SMALL):
    from copygen.gen.front.validate import load_text
    from copygen.patch import bodies, splice
    st = load_text(strategy, "small.copy")
    lines = text.splitlines(keepends=True)
    _, places = kernelfile.places(lines, "uaccess.S", kinds)
    return splice.splice(text, bodies.bodies(st, lines, places), "uaccess.S")


def test_2021_fault_code_goes_only_with_the_bodies_that_reached_it():
    old = (HERE / "layout_2021.S").read_text()
    copy_only = _spliced(old, ("copy_user",)).text
    # __clear_user's exit (20:) stays in .fixup; the copy's pieces are gone
    assert ".section .fixup" in copy_only and "\n20:\n" in copy_only
    assert "\n10:\n" not in copy_only and ".Lcopy_tail" not in copy_only
    both = _spliced(old, ("copy_user", "clear_user")).text
    assert ".section .fixup" not in both and "Fault code" not in both
    assert both.endswith("EXPORT_SYMBOL(__clear_user)\n")


def test_generated_labels_avoid_the_files_own():
    text = (HERE / "mainline_layout.S").read_text().replace(".Lclear_bytes", ".Lcopy_bytes")
    new = _spliced(text, ("copy_user",)).text
    assert ".Lcopy_user_bytes:" in new and new.count(".Lcopy_bytes:") == 1


def test_a_kept_line_that_needs_a_replaced_label_is_refused():
    from copygen.errors import CopygenError
    text = (HERE / "mainline_layout.S").read_text().replace(
        "\tcall\tfallback_scalar_usercopy_sum_enabled\n",
        "\tcall\tfallback_scalar_usercopy_sum_enabled\n\tj\t.Lbyte_tail\n")
    with pytest.raises(CopygenError, match=".Lbyte_tail"):
        _spliced(text, ("copy_user",))


def test_subject_and_message_fit_and_say_a_draft_first():
    from copygen.patch import message
    from copygen.patch.evidence import Proof, Row
    ok = {c: "proved" for c in ("C1", "C4", "C5", "S1")}
    bad = {**ok, "C5": "violated"}
    before = {"copy_user": [Proof("__asm_copy_to_user", "copy_user", "violated", bad,
                                  {"C5": "returns n " * 30}, 1.0)],
              "clear_user": [Proof("__clear_user", "clear_user", "proved", ok, {}, 1.0)]}
    after = {k: [Proof(p.symbol, k, "proved", ok, {}, 1.0) for p in v] for k, v in before.items()}
    rows = [Row("u74", "copy_to_user", 8, "aligned", 10.0, 9.0)]
    ch = message.Change(("copy_user", "clear_user"), "mainline", before, after, rows,
                        {"u74": "within 2 % " * 20})
    subject = message.subject(ch)
    assert subject == "riscv: lib: uaccess: fix the fault return of the scalar user copy"
    msg = message.commit_message(ch, "0.1.0", "copygen patch x.copy " + "--profile u74 " * 9,
                                 SMALL, "x.copy", "A <a@b>")
    assert all(len(line) <= 75 for line in msg.splitlines())
    draft = message.subject(message.Change(ch.kinds, "2021", before, before, rows, {}, draft=True))
    assert draft.startswith("riscv: lib: uaccess: unproven draft:") and len(draft) < 75


def test_the_subject_names_what_was_violated_not_what_was_left_unchecked():
    """A1, B1 ... left unchecked once C4-C6 were found violated say nothing
    about the calling convention: the subject is the fault return, the
    unchecked clauses take one line, no command-line advice, and the whole
    message of a two-block patch with its KUnit lines stays short."""
    from copygen.patch import message
    from copygen.patch.evidence import Proof, Row
    ok = {c: "proved" for c in ("C1", "C2", "C3", "C4", "C5", "C6", "S1", "S2", "A1", "B1", "B2",
                                "X1", "T1")}
    unchecked = {c: "not checked" for c in ("A1", "B1", "B2", "C1", "C2", "C3", "S1", "S2", "X1", "T1")}
    bad = {**ok, **unchecked, "C4": "violated", "C5": "violated", "C6": "violated"}
    why = {c: "not checked: a violation decided the verdict first (--all-clauses proves the others)"
           for c in unchecked}
    why["C5"] = "returns n although bytes before the fault were accessible"
    syms = ("__asm_copy_to_user", "__asm_copy_from_user")
    before = {"copy_user": [Proof(s, "copy_user", "violated", bad, why, 1.0) for s in syms],
              "clear_user": [Proof("__clear_user", "clear_user", "proved", ok, {}, 1.0)]}
    after = {k: [Proof(p.symbol, k, "proved", ok, {}, 1.0) for p in v] for k, v in before.items()}
    rows = [Row("u74", r, n, a, 100.0 + n, 90.0 + n) for r in ("copy_to_user", "clear_user")
            for n in (8, 16, 32, 64, 128, 256, 1024, 4096, 8192) for a in ("aligned", "misaligned")]
    ch = message.Change(("copy_user", "clear_user"), "6.8", before, after, rows, {"u74": "2 %"},
                        kunit=("  usercopy  no V 4/4 -> 4/4, with V 4/4 -> 4/4",))
    assert message.subject(ch) == "riscv: lib: uaccess: fix the fault return of the scalar user copy"
    msg = message.commit_message(ch, "0.1.0", "copygen patch u74tuned.copy --kernel-tree LINUX",
                                 (ROOT / "examples" / "u74tuned.copy").read_text(), "u74tuned.copy",
                                 "A <a@b>")
    assert "--all-clauses" not in msg and msg.count("not checked") == 1
    assert ("stopped at the first violation: C1, C2, C3, S1, S2, A1, B1, B2, X1, T1 were not "
            "checked" in " ".join(msg.split()))
    assert "usercopy  no V 4/4 -> 4/4" in msg and "string u74tuned_lib" not in msg
    assert len(msg.splitlines()) <= 62 and all(len(line) <= 75 for line in msg.splitlines())


def test_a_string_patch_says_where_memmove_went():
    """With memmove in memcpy.S the subject lists memmove with the
    assembly and the body says that memmove.S goes and no string.c is
    built; without it, memmove is in C, in string.c."""
    from copygen.patch import message
    from copygen.patch.evidence import Proof, Row
    ok = {"C1": "proved"}
    proofs = {"string": [Proof(s, k, "proved", ok, {}, 1.0)
                         for s, k in (("__memcpy", "memcpy"), ("__memmove", "memmove"))]}
    rows = [Row("u74", "memmove", n, "misaligned", 60.0, 50.0) for n in (8, 16)]
    layout = message.string_layout(("memcpy", "memset"))
    plain = message.Change(("string",), layout, proofs, proofs, rows, {"u74": "2 %"})
    entry = message.Change(("string",), layout, proofs, proofs, rows, {"u74": "2 %"},
                           memmove_in_memcpy=True)
    assert message.subject(plain).endswith("generated memmove in C, memcpy and memset in asm, "
                                           "faster")
    assert message.subject(entry).endswith("generated memcpy, memmove and memset in asm, faster")
    text = " ".join(message.commit_message(entry, "0.1.0", "copygen patch u74tuned.copy",
                                           (ROOT / "examples" / "u74tuned.copy").read_text(),
                                           "u74tuned.copy", "A <a@b>").split())
    assert "memmove goes into memcpy.S, after memcpy" in text
    assert "memmove.S is removed" in text and "string.c" not in text
    plain_text = " ".join(message.commit_message(plain, "0.1.0", "x", "", "x.copy",
                                                 "A <a@b>").split())
    assert "Build string.c (memmove)" in plain_text and "memmove goes into" not in plain_text


def test_a_string_patch_is_faster_only_if_no_case_is_slower():
    """The subject says "faster" as a uaccess subject says "speed up":
    faster on the mean and in no case more than 1 % slower.  A string.c
    faster on the mean but slower in a case (c910fast on 6.12: 61 of 108)
    does not say it."""
    from copygen.patch import message
    from copygen.patch.evidence import Proof, Row
    ok = {"C1": "proved"}
    proofs = {"string": [Proof("__memcpy", "memcpy", "proved", ok, {}, 1.0)]}
    layout = message.string_layout(())
    rows = [Row("c910", "memcpy", 8192, "misaligned", 13331.0, 2071.0),
            Row("c910", "memcpy", 8, "aligned", 10.0, 22.0)]
    mixed = message.Change(("string",), layout, proofs, proofs, rows, {"c910": "?"})
    assert message.subject(mixed).endswith("generated memcpy, memmove and memset in C")
    rows = [rows[0], Row("c910", "memcpy", 8, "aligned", 10.0, 10.05)]
    within = message.Change(("string",), layout, proofs, proofs, rows, {"c910": "?"})
    assert message.subject(within).endswith("in C, faster")


# --- the three layouts a maintained kernel has (docs/patching.md) ---------

DISPATCH_6_8 = """#ifdef CONFIG_RISCV_ISA_V
\t/*
\t * Harts without Zve32x keep the jump; the others copy at least
\t * riscv_v_usercopy_threshold bytes with vectors.
\t */
\tALTERNATIVE("j fallback_scalar_usercopy", "nop", 0, RISCV_ISA_EXT_ZVE32X, CONFIG_RISCV_ISA_V)
\tREG_L\tt0, riscv_v_usercopy_threshold
\tbltu\ta2, t0, fallback_scalar_usercopy
\ttail\tenter_vector_usercopy
#endif
SYM_FUNC_START(fallback_scalar_usercopy)
"""


def layout_6_8() -> str:
    """uaccess_2021_ok.S laid out as Linux 6.8-6.15 lay it out: the vector
    dispatch opens __asm_copy_to_user, fallback_scalar_usercopy starts
    inside it (SUM handling and all) and both functions end together."""
    text = (HERE / "uaccess_2021_ok.S").read_text()
    start, end = "SYM_FUNC_START(__asm_copy_to_user)\n", "SYM_FUNC_END(__asm_copy_to_user)\n"
    text = text.replace("#include <asm/csr.h>\n", "#include <asm/csr.h>\n#include <asm/hwcap.h>\n"
                        "#include <asm/alternative-macros.h>\n", 1)
    text = text.replace(start, start + DISPATCH_6_8, 1)
    return text.replace(end, end + "SYM_FUNC_END(fallback_scalar_usercopy)\n", 1)


def test_the_6_8_layout_replaces_only_the_nested_scalar_copy(tmp_path):
    """Linux 6.8-6.15: fallback_scalar_usercopy opens inside
    __asm_copy_to_user.  Its body ends at SYM_FUNC_END(__asm_copy_to_user);
    the dispatch and both start and end markers stay as they were."""
    old = layout_6_8()
    lines = old.splitlines(keepends=True)
    lay, (place,) = kernelfile.places(lines, "uaccess.S", ("copy_user",))
    assert lay == "6.8" and place.function.name == "fallback_scalar_usercopy"
    assert not place.sum_held and place.keep == ()
    assert lines[place.function.body_end].strip() == "SYM_FUNC_END(__asm_copy_to_user)"
    new = _spliced(old, ("copy_user",)).text
    for kept in ("SYM_FUNC_START(__asm_copy_to_user)\n#ifdef CONFIG_RISCV_ISA_V\n",
                 "\ttail\tenter_vector_usercopy\n#endif\nSYM_FUNC_START(fallback_scalar_usercopy)\n",
                 "SYM_FUNC_END(__asm_copy_to_user)\nSYM_FUNC_END(fallback_scalar_usercopy)\n"):
        assert kept in new
    assert "csrs\tCSR_STATUS, t6" in new.split("SYM_FUNC_START(fallback_scalar_usercopy)")[1]
    _assembles(new, tmp_path)
    # with the vector dispatch assembled in too, as a V kernel builds it
    src = tmp_path / "v.S"
    src.write_text("#define CONFIG_RISCV_ISA_V 1\n" + new)
    toolchain.assemble(src, ROOT / "shim" / "include", tmp_path / "v.o")


@pytest.mark.parametrize("change, words", [
    # a fallback outside __asm_copy_to_user, without the _sum_enabled split
    (("SYM_FUNC_END(__asm_copy_to_user)\nSYM_FUNC_END(fallback_scalar_usercopy)\n",
      "SYM_FUNC_END(__asm_copy_to_user)\n\tret\nSYM_FUNC_START(fallback_scalar_usercopy)\n"
      "\tret\nSYM_FUNC_END(fallback_scalar_usercopy)\n"), "not as any kernel lays it out"),
    # no __asm_copy_to_user at all
    (("__asm_copy_to_user", "__asm_copy_to_usr"), "has no __asm_copy_to_user"),
])
def test_a_file_of_no_known_layout_is_refused_with_its_line(change, words):
    from copygen.errors import CopygenError
    text = layout_6_8()
    if change[0] == "__asm_copy_to_user":
        text = text.replace(*change)
    else:
        text = text.replace("SYM_FUNC_START(fallback_scalar_usercopy)\n", "", 1).replace(*change)
    with pytest.raises(CopygenError, match=words) as err:
        kernelfile.places(text.splitlines(keepends=True), "uaccess.S", ("copy_user",))
    assert "layouts" in err.value.hint


def test_mainline_wrapper_keeps_a7_and_the_body_leaves_it_alone():
    """Mainline's fallback_scalar_usercopy keeps ra in a7 across its call:
    read from the file, and no instruction of the generated body names a7."""
    lines = (HERE / "mainline_layout.S").read_text().splitlines(keepends=True)
    _, (place,) = kernelfile.places(lines, "uaccess.S", ("copy_user",))
    assert place.sum_held and place.keep == ("a7",)
    tuned = (ROOT / "examples" / "u74tuned.copy").read_text()
    assert "a7" in (ROOT / "out" / "u74tuned" / "uaccess.S").read_text()
    new = _spliced("".join(lines), ("copy_user",), tuned).text
    body = new.split("SYM_FUNC_START(fallback_scalar_usercopy_sum_enabled)")[1]
    body = body.split("SYM_FUNC_END(fallback_scalar_usercopy_sum_enabled)")[0]
    assert not re.search(r"\ba7\b", body)
    # kept by a stack frame instead, the register is the body's to use
    framed = "".join(lines).replace("\tmv\ta7, ra\n", "\taddi\tsp, sp, -16\n\tsd\tra, 8(sp)\n")
    framed = framed.replace("\tmv\tra, a7\n", "\tld\tra, 8(sp)\n\taddi\tsp, sp, 16\n")
    _, (place,) = kernelfile.places(framed.splitlines(keepends=True), "uaccess.S", ("copy_user",))
    assert place.keep == ()


def test_a_strategy_that_needs_the_kept_register_is_refused(tmp_path, cache):
    """u74pipelined's 8-word pipelined block with the entry's t0 cannot do
    without a7 and t0: a located error before any proof, the tree untouched."""
    text = (HERE / "mainline_layout.S").read_text().replace("a7", "t0")
    tree = make_tree(tmp_path / "linux", text=text)
    _refused(ROOT / "examples" / "u74pipelined.copy", tree, tmp_path, cache,
             "u74_pipelined: .* uses .*t0.*keeps live")


# --- a string block as a kernel change (no Kbuild here: the plan alone) -------

LIB_MAKEFILE = """# SPDX-License-Identifier: GPL-2.0-only
# arch/riscv/lib/Makefile as Linux 6.12 lays it out (written for copygen)
lib-y			+= delay.o
lib-y			+= memcpy.o
lib-y			+= memset.o
lib-y			+= memmove.o
lib-y			+= csum.o
lib-$(CONFIG_MMU)	+= uaccess.o
"""
KSYMS = "".join(f"EXPORT_SYMBOL({p}{n});\n" for p in ("", "__") for n in ("memset", "memcpy", "memmove"))


def _string_plan(files, users=lambda path: [], text=None):
    from copygen.gen.front.validate import load_file, load_text
    from copygen.emu.timing.profile import available
    from copygen.patch import stringfile
    st = (load_file(str(ROOT / "examples" / "string2021.copy"), available()) if text is None
          else load_text(text, "jump.copy", available()))
    return stringfile, stringfile.plan(st, "string2021.copy", files.get, users)


JUMP_LIB = """target u74 { xlen 64; misaligned slow; profile u74 }
string lib for u74 {
    memcpy { small below 16; align dst; words unroll 2; shift unroll 1; tail words }
    memmove { forward memcpy; backward words }
    memset { small below 16; align dst; words unroll 8; tail jump }
}
"""


def test_an_assembly_memset_replaces_memset_s_and_keeps_its_object(tmp_path):
    """With `tail jump` the string.c has memcpy and memmove; memset.S gets
    the generated text, memset.o stays, and the file assembles against the
    kernel's headers (here the shim) into the same symbols as before."""
    tree = {"arch/riscv/lib/Makefile": LIB_MAKEFILE, "arch/riscv/kernel/riscv_ksyms.c": KSYMS,
            **{f"arch/riscv/lib/{n}.S": "/* the tree's own */\n" for n in ("memcpy", "memset", "memmove")}}
    sf, plan = _string_plan(tree, text=JUMP_LIB)
    mk = plan.files[sf.MAKEFILE]
    assert "lib-y\t\t\t+= string.o\n" in mk and "lib-y\t\t\t+= memset.o\n" in mk
    assert not re.search(r"mem(cpy|move)\.o", mk)
    assert plan.files["arch/riscv/lib/memcpy.S"] is None is plan.files["arch/riscv/lib/memmove.S"]
    assert plan.objects_after == ("arch/riscv/lib/string.o", "arch/riscv/lib/memset.o")
    # and with memcpy in assembly too, both .S files get generated text
    _, both = _string_plan(tree, text=JUMP_LIB.replace("tail words }", "tail words; form asm }"))
    assert both.objects_after == ("arch/riscv/lib/string.o", "arch/riscv/lib/memcpy.o",
                                  "arch/riscv/lib/memset.o")
    assert "SYM_FUNC_START(__memcpy)" in both.files["arch/riscv/lib/memcpy.S"]
    assert "lib-y\t\t\t+= memcpy.o\n" in both.files[sf.MAKEFILE]
    assert both.files["arch/riscv/lib/memmove.S"] is None
    assert "__memset(" not in plan.files[sf.STRING_C]
    memset_s = plan.files[sf.MEMSET_S]
    assert "EXPORT_SYMBOL" not in memset_s and "#include <linux/export.h>" not in memset_s
    src = tmp_path / "memset.S"
    src.write_text(memset_s)
    toolchain.assemble(src, ROOT / "shim" / "include", tmp_path / "memset.o")
    syms = dict(line.split()[1:3][::-1] for line in toolchain.run(
        "nm", [tmp_path / "memset.o"]).stdout.splitlines() if len(line.split()) == 3)
    assert syms["__memset"] == "T" and syms["memset"] == "W"
    assert syms["__pi_memset"] == syms["__pi___memset"] == "T"


def test_all_three_in_assembly_builds_no_string_c(tmp_path):
    """memcpy and memset in assembly and memmove inside memcpy.S (`form
    asm`): memcpy.S and memset.S get generated text, memmove.S and its
    object go, and the Makefile builds no string.o (nothing is in C)."""
    tree = {"arch/riscv/lib/Makefile": LIB_MAKEFILE, "arch/riscv/kernel/riscv_ksyms.c": KSYMS,
            **{f"arch/riscv/lib/{n}.S": "/* the tree's own */\n" for n in ("memcpy", "memset", "memmove")}}
    text = JUMP_LIB.replace("tail words }", "tail words; form asm }").replace(
        "backward words }", "backward words; form asm }")
    sf, plan = _string_plan(tree, text=text)
    mk = plan.files[sf.MAKEFILE]
    assert "lib-y\t\t\t+= memcpy.o\n" in mk and "lib-y\t\t\t+= memset.o\n" in mk
    assert "memmove.o" not in mk and "string.o" not in mk and "CFLAGS_string.o" not in mk
    assert sf.STRING_C not in plan.files
    assert plan.files["arch/riscv/lib/memmove.S"] is None
    assert plan.objects_after == ("arch/riscv/lib/memcpy.o", "arch/riscv/lib/memset.o")
    src = tmp_path / "memcpy.S"
    src.write_text(plan.files[sf.MEMCPY_S])
    toolchain.assemble(src, ROOT / "shim" / "include", tmp_path / "memcpy.o")
    syms = dict(line.split()[1:3][::-1] for line in toolchain.run(
        "nm", [tmp_path / "memcpy.o"]).stdout.splitlines() if len(line.split()) == 3)
    for n in ("memcpy", "memmove"):
        assert syms[f"__{n}"] == "T" and syms[n] == "W"
        assert syms[f"__pi_{n}"] == syms[f"__pi___{n}"] == "T"
    assert toolchain.run("nm", ["-u", tmp_path / "memcpy.o"]).stdout == ""


def test_a_string_block_replaces_the_three_assembly_files(tmp_path):
    tree = {"arch/riscv/lib/Makefile": LIB_MAKEFILE, "arch/riscv/kernel/riscv_ksyms.c": KSYMS,
            **{f"arch/riscv/lib/{n}.S": "/* the tree's own */\n" for n in ("memcpy", "memset", "memmove")}}
    sf, plan = _string_plan(tree)
    mk = plan.files[sf.MAKEFILE]
    assert "lib-y\t\t\t+= string.o\n" in mk and "lib-y\t\t\t+= delay.o\n" in mk
    assert not re.search(r"mem(cpy|set|move)\.o", mk)
    assert "CFLAGS_string.o\t\t\t:= -ffreestanding" in mk and "$(CC_FLAGS_FTRACE)" in mk
    assert all(plan.files[f"arch/riscv/lib/{n}.S"] is None for n in ("memcpy", "memset", "memmove"))
    text = plan.files[sf.STRING_C]
    assert not plan.exports and "EXPORT_SYMBOL" not in text      # riscv_ksyms.c exports them
    # a declaration under a function's brace wants a blank line (checkpatch --strict)
    assert "}\n\nvoid *memmove(void *dest" in text and not re.search(r"\}\nvoid \*", text)
    # every symbol the assembly defined is defined again, with the same binding
    src = tmp_path / "string.c"
    src.write_text(text)
    toolchain.compile_c(src, ROOT / "shim" / "include", tmp_path / "string.o")
    syms = dict(line.split()[1:3][::-1] for line in toolchain.run(
        "nm", [tmp_path / "string.o"]).stdout.splitlines() if len(line.split()) == 3)
    for n in ("memcpy", "memset", "memmove"):
        assert syms[f"__{n}"] == "T" and syms[n] == "W"
        assert syms[f"__pi_{n}"] == syms[f"__pi___{n}"] == "T"
    # a tree that does not export them elsewhere gets the exports in string.c
    _, plan = _string_plan({**tree, "arch/riscv/kernel/riscv_ksyms.c": None})
    assert plan.exports and "EXPORT_SYMBOL(memcpy);" in plan.files[sf.STRING_C]


def test_assembly_another_makefile_builds_stays_in_the_tree():
    """Linux 6.12's arch/riscv/purgatory/Makefile builds its own memcpy.o
    and memset.o from arch/riscv/lib/memcpy.S and memset.S (kexec): the
    first string patch of the real tree deleted them and Kbuild stopped in
    arch/riscv/purgatory.  They stay; memmove.S, which nothing else builds,
    goes."""
    tree = {"arch/riscv/lib/Makefile": LIB_MAKEFILE,
            **{f"arch/riscv/lib/{n}.S": "" for n in ("memcpy", "memset", "memmove")}}
    purgatory = {"arch/riscv/lib/memcpy.S", "arch/riscv/lib/memset.S"}
    sf, plan = _string_plan(tree, lambda path: ["arch/riscv/purgatory/Makefile"]
                            if path in purgatory else [])
    assert plan.files["arch/riscv/lib/memmove.S"] is None
    assert not purgatory & set(plan.files)
    assert "string.o" in plan.files[sf.MAKEFILE]


def test_a_makefile_without_the_objects_is_refused_with_its_name():
    from copygen.errors import CopygenError
    tree = {"arch/riscv/lib/Makefile": LIB_MAKEFILE.replace("lib-y\t\t\t+= memset.o\n", ""),
            **{f"arch/riscv/lib/{n}.S": "" for n in ("memcpy", "memset", "memmove")}}
    with pytest.raises(CopygenError, match=r"Makefile does not build memset\.o"):
        _string_plan(tree)
