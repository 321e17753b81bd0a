"""The command line's rough edges: usage errors in the envelope, what bench
takes, help that says what each command does, can return and defaults to,
what patch takes and reports, where tune keeps its store, what verify
--bounded says, and a command stopped by SIGTERM ending in one line."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

import click
import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.commands_kernel import KUNIT_FAILED
from copygen.gen import toolchain
from copygen.verify.contract.verdict import EXIT
from tests.conftest import ROOT

EXAMPLES = ROOT / "examples"
KERNEL2021 = EXAMPLES / "kernel2021.copy"
SWEEP = "sweep s for kernel2021 { small below [71, 96] }\n"
LIB = "arch/riscv/lib"


def _cli(*argv):
    r = CliRunner().invoke(main, [str(a) for a in argv], prog_name="copygen")
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r


def _sweep(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(KERNEL2021.read_text() + SWEEP)
    return path


# --- usage errors and inputs --------------------------------------------------

@pytest.mark.parametrize("argv, command", [
    (["build", EXAMPLES], "build"),                         # a directory where files go
    (["bench", KERNEL2021, "--no-such-option"], "bench"),
    (["verify"], "verify"),                                 # a missing argument
    (["tune", "show"], "tune"),
    (["tune", KERNEL2021, "--top", "-1"], "tune"),          # a value out of range
    (["no-such-command"], "copygen"),
])
def test_a_usage_error_answers_in_the_envelope(argv, command):
    plain = _cli(*argv)
    assert plain.exit_code == 2 and plain.stdout == "" and "Usage:" in plain.stderr
    r = _cli(*argv, "--json")
    assert r.exit_code == 2 and "Usage:" in r.stderr
    out = json.loads(r.stdout)                 # one object: json.loads refuses more
    assert (out["schema"], out["command"], out["ok"]) == (1, command, False), out
    assert f"Error: {out['error']['message']}" in r.stderr and out["error"]["hint"], out


@pytest.mark.parametrize("command", ["bench", "rank"])
def test_bench_and_rank_say_they_take_a_copy_file(command, tmp_path):
    asm = ROOT / "out" / "kernel2021" / "uaccess.S"
    r = _cli(command, asm, "--build-cache", tmp_path / "cache", "--json")
    assert r.exit_code == 2, r.stderr
    err = json.loads(r.stdout)["error"]
    assert ".copy" in err["message"] and err["file"] == str(asm), err
    assert "syntax error" not in r.stderr and not (tmp_path / "cache").exists()


def test_an_unknown_profile_lists_the_profiles_once(tmp_path):
    from copygen.emu.timing.profile import available
    r = _cli("bench", KERNEL2021, "--profile", "u47", "--sizes", "8",
             "--build-cache", tmp_path / "cache")
    assert r.exit_code == 2 and "unknown cost profile" in r.stderr, r.stderr
    for name in available():            # a whole name: u74 is not counted inside u74_2021
        assert len(re.findall(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", r.stderr)) == 1, r.stderr


def test_tune_show_hints_at_no_option_it_lacks(tmp_path):
    show = main.commands["tune"].commands["show"]
    has = {o for p in show.params for o in p.opts}
    for db in (KERNEL2021, tmp_path / "none.db"):
        r = _cli("tune", "show", db, "--json")
        assert r.exit_code == 2, r.stderr
        hint = json.loads(r.stdout)["error"]["hint"]
        said = re.sub(r"`[^`]*`", "", hint)      # a command quoted whole is another form's
        assert set(re.findall(r"--[a-z][a-z-]*", said)) <= has, hint
    assert "copygen tune show build/tune/kernel2021.tune.db" in json.loads(
        _cli("tune", "show", KERNEL2021, "--json").stdout)["error"]["hint"]


# --- help ---------------------------------------------------------------------

def _commands(group=main, path=()):
    """(the words that name it, the command) of every command a user can
    name, sub-commands too; a hidden one (tune's walk) is its group's help."""
    for name, cmd in group.commands.items():
        if cmd.hidden:
            continue
        yield path + (name,), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, path + (name,))


def _leaves(group=main, path=()):
    """Every command that takes options, hidden ones too."""
    for name, cmd in group.commands.items():
        here = path + (() if cmd.hidden else (name,))
        if isinstance(cmd, click.Group):
            yield from _leaves(cmd, here)
        else:
            yield here, cmd


TOOL = {0, 1, 2}        # success, an external program failed, bad input
PROOF = set(EXIT.values())
# what each command can return besides SIGTERM's 143 (copygen.output.command
# gives that to every command)
CAN_RETURN = {
    ("check",): {0, 2},                 # parses, runs no program
    ("build",): TOOL, ("bench",): TOOL, ("rank",): TOOL, ("hwbench",): TOOL,
    ("mutate",): TOOL, ("tree",): TOOL, ("calibrate",): TOOL,
    ("tune",): TOOL,                    # a point's proof is a row of its table, not the status
    ("tune", "show"): {0, 2},           # reads a store
    ("verify",): TOOL | PROOF,
    ("patch",): TOOL | PROOF | {KUNIT_FAILED},
    ("kunit",): TOOL | {KUNIT_FAILED},
}


def _footer(argv) -> set[int]:
    text = " ".join(_cli(*argv, "--help").stdout.split())
    assert text.count("Exit status:") == 1, text
    listed = re.search(r"Exit status: ([^.]*)\.", text)[1]
    return {int(c) for c in re.findall(r"(?:^|; )(\d+) ", listed)}


def test_every_help_lists_the_exit_statuses_its_command_can_return():
    named = [words for words, _ in _commands()]
    assert sorted(named) == sorted(CAN_RETURN), "a command without a row, or a row without one"
    for words in named:
        assert _footer(words) == CAN_RETURN[words] | {143}, words
    assert _footer([]) == set().union(*CAN_RETURN.values()) | {143}


def test_patch_help_names_every_file_it_replaces():
    said = " ".join(_cli("patch", "--help").stdout.split("Options:")[0].split())
    for name in ("uaccess.S", "memcpy.S", "memmove.S", "memset.S", "string.c", "Makefile",
                 "uaccess_vector.S", "Kconfig"):
        assert name in said, name


def test_every_jobs_option_says_its_default_and_why():
    jobs = [(words, p) for words, cmd in _leaves() for p in cmd.params if "-j" in p.opts]
    assert {words for words, _ in jobs} >= {("verify",), ("patch",), ("tune",), ("mutate",)}
    for words, p in jobs:
        assert not p.show_default, words         # the help says it, with its reason
        assert re.search(r"\[default: [^]:]+: [^]]+\]", p.help), (words, p.help)


def test_tune_guard_help_says_what_a_guard_does():
    guard = next(p for p in main.commands["tune"].commands["run"].params if p.name == "guards")
    assert "at least as fast as in every cell" in guard.help and "cannot win" in guard.help
    assert not re.search(r"\bthat are rank\b", guard.help)


# --- patch: the blocks taken, the files reported --------------------------------

def _tree(path, files: dict[str, str]):
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    for args in (["init", "-q", "-b", "master"], ["config", "user.name", "K"],
                 ["config", "user.email", "k@example.org"], ["add", "-A"],
                 ["commit", "-q", "-m", "the tree as it was"]):
        toolchain.run_git(args, path)
    return path


def test_patch_takes_the_string_block_of_a_file_that_has_no_other(tmp_path):
    """string2021.copy has a string block alone: without --routine it goes
    on to the tree's string files (this tree lacks the Makefile)."""
    tree = _tree(tmp_path / "linux", {f"{LIB}/uaccess.S": "/* uaccess */\n"})
    r = _cli("patch", EXAMPLES / "string2021.copy", "--kernel-tree", tree, "-o", tmp_path / "p",
             "--proof-cache", tmp_path / "proofs", "--json")
    err = json.loads(r.stdout)["error"]
    assert r.exit_code == 2 and err["message"] == f"{LIB}/Makefile is missing", err
    assert not (tmp_path / "p").exists()


def test_a_patch_names_the_files_its_commits_change(tmp_path):
    from copygen.commands_patch import branch_line
    from copygen.patch import git
    root = _tree(tmp_path / "linux", {f"{LIB}/uaccess.S": "u\n", f"{LIB}/Makefile": "memcpy.o\n",
                                      f"{LIB}/memmove.S": "m\n"})
    tree = git.check_tree(root, "copygen/t")
    tip = git.commit_files(tree, tree.head, {f"{LIB}/Makefile": "string.o\n", f"{LIB}/memmove.S": None,
                                             f"{LIB}/string.c": "s\n"}, "string functions in C")
    files = git.changed(tree, tree.head, tip)
    assert branch_line("copygen/t", 1, files) == (
        f"branch copygen/t: 1 commit changing {LIB}/Makefile, {LIB}/memmove.S, {LIB}/string.c")
    assert branch_line("b", 2, [f"{LIB}/uaccess.S"]) == f"branch b: 2 commits changing {LIB}/uaccess.S"


# --- tune's store, verify --bounded -----------------------------------------------

def test_tune_keeps_its_store_under_build_not_beside_the_copy(tmp_path, monkeypatch):
    src = _sweep(tmp_path / "examples" / "k.copy")
    monkeypatch.chdir(tmp_path)
    r = _cli("tune", src, "--top", "0", "--workload", "uniform:0-64",
             "--build-cache", tmp_path / "cache")
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "build" / "tune" / "k.tune.db").is_file()
    assert [p.name for p in src.parent.iterdir()] == ["k.copy"]


def test_git_ignores_a_tuning_store_wherever_it_is():
    for name in ("examples/kernel2021.tune.db", "elsewhere/x.tune.db-wal"):
        assert toolchain.run_git(["check-ignore", "-q", name], ROOT, check=False).returncode == 0, name


def test_verify_bounded_says_so_when_everything_is_proved(tmp_path):
    r = _cli("verify", ROOT / "tests" / "asm" / "memset_bytes.S", "--bounded", "4", "-j", "1",
             "--workdir", tmp_path / "w", "--proof-cache", tmp_path / "proofs")
    assert r.exit_code == 0, r.stderr
    assert [ln for ln in r.stdout.splitlines() if ln.startswith("bounded:")] == [
        "bounded: every n <= 4 checked, and every required clause is proved for every n"]


# --- SIGTERM ------------------------------------------------------------------------

# a command whose work is held in a pool of forked workers that would sleep
# for a minute, then given SIGTERM: `held` stands in for the command's own
# work (verify's proofs, tune's evaluations), the pool is the real one
HELD = """
import sys, time
from copygen import commands_verify
from copygen.tune import run
from copygen.verify.solver.parallel import fork_map

def sleep(*args):
    print("held", file=sys.stderr, flush=True)
    time.sleep(60)

def proofs(*args):
    fork_map(sleep, 4, 2)

def evaluate(job):
    sleep()

commands_verify._run = proofs
run.evaluate = evaluate
from copygen.cli import main
main(sys.argv[1:], prog_name="copygen")
"""


def _stopped(argv, tmp_path, workers):
    """Run `argv` under HELD, SIGTERM it once its work is in the pool
    (`workers` of them up and sleeping, then a moment for the command to
    wait on them); (status, stdout, stderr), every worker gone with it
    (else the pipes stay open for their minute)."""
    p = subprocess.Popen([sys.executable, "-c", HELD, *map(str, argv)], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err, up = [], 0
    for line in p.stderr:
        err.append(line)
        up += line.count("held")            # two workers' lines may run together
        if up == workers:
            break
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    out, rest = p.communicate(timeout=20)
    return p.returncode, out, "".join(err) + rest


@pytest.mark.parametrize("command", ["verify", "tune"])
def test_a_command_stopped_by_sigterm_ends_in_one_line(command, tmp_path):
    argv = {"verify": ["verify", ROOT / "tests" / "asm" / "memset_bytes.S", "-j", "2",
                       "--workdir", tmp_path / "w", "--proof-cache", tmp_path / "proofs"],
            "tune": ["tune", _sweep(tmp_path / "k.copy"), "-j", "2", "--top", "0",
                     "--db", tmp_path / "t.db", "--build-cache", tmp_path / "cache"]}[command]
    workers = 2              # -j 2: both workers up (verify's four items, tune's two points)
    status, out, err = _stopped(argv, tmp_path, workers)
    assert status == 143, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert err.splitlines()[-1] == "copygen: stopped by SIGTERM", err
    status, out, err = _stopped(argv + ["--json"], tmp_path, workers)
    assert status == 143 and "Traceback" not in err, err
    assert json.loads(out)["error"]["message"] == "stopped by SIGTERM"


def test_the_pool_of_a_killed_process_ends_quietly(tmp_path):
    """A process killed outright (no command around it to end its pool):
    its workers end with it, without a traceback each."""
    script = ("import sys, time\nfrom copygen.verify.solver.parallel import fork_map\n"
              "print('held', file=sys.stderr, flush=True)\n"
              "fork_map(lambda i: time.sleep(60), 4, 2)\n")
    p = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    assert p.stderr.readline().strip() == "held"
    time.sleep(1.0)
    p.kill()
    _, err = p.communicate(timeout=20)
    assert "Traceback" not in err, err
