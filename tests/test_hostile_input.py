"""Hostile input (issue 17): devices, FIFOs, huge files and lines, a BOM,
out-of-range options, names check used to let through, and two inputs that
would share an output directory.  Each is refused with a located exit-2
error, promptly; nothing hangs, nothing prints a traceback."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.errors import CopygenError, Loc, _excerpt
from copygen.gen.front.parse import MAX_SOURCE_BYTES, read_source
from copygen.gen.front.validate import MAX_SWEEP_POINTS, load_text
from tests.test_errors import GOOD_COPY, TARGET

GOOD = TARGET + GOOD_COPY
CLEAR = "clear_user clr for u74 { small below 16; align dst; words unroll 1; tail bytes; fault exact }\n"
STRING = ("string lib for u74 {\n  memcpy { small below 16; words unroll 1; tail bytes }\n"
          "  memset { small below 16; words unroll 1; tail bytes }\n}\n")
PROFILES = ("c910", "u74")


def _cli(*args, timeout=60):
    """The command line in its own process: a hang fails the test, not the run."""
    return subprocess.run([sys.executable, "-m", "copygen", *args], capture_output=True,
                          text=True, timeout=timeout)


def _run(*args):
    return CliRunner().invoke(main, list(args))


def _error(src: str, profiles=None) -> CopygenError:
    with pytest.raises(CopygenError) as info:
        load_text(src, "bad.copy", *([profiles] if profiles else []))
    assert info.value.exit_code == 2
    return info.value


# ------------------------------------------------------------- not a file

def test_check_refuses_dev_zero_without_reading_it():
    r = _cli("check", "/dev/zero", timeout=30)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "/dev/zero" in r.stderr and "character device" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.copy"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("command", ["check", "build", "verify"])
def test_a_fifo_is_refused_not_waited_on(command, fifo, tmp_path):
    extra = {"build": ["-o", str(tmp_path / "out")],
             "verify": ["--workdir", str(tmp_path / "work")]}.get(command, [])
    r = _cli(command, str(fifo), *extra)
    assert r.returncode == 2, r.stderr
    assert f"{fifo} is a FIFO" in r.stderr and "Traceback" not in r.stderr


def test_verify_refuses_a_fifo_given_as_an_elf(tmp_path):
    from copygen.inputs import linked_elf
    path = tmp_path / "pipe"            # no suffix: taken for a linked ELF
    os.mkfifo(path)
    with pytest.raises(CopygenError, match="is a FIFO") as info:
        linked_elf(str(path), tmp_path / "work")
    assert info.value.loc.file == str(path)


def test_a_source_over_the_limit_is_refused(tmp_path):
    big = tmp_path / "big.copy"
    big.write_bytes(b"#" * MAX_SOURCE_BYTES + b"\n")
    r = _run("check", str(big))
    assert r.exit_code == 2
    assert str(big) in r.stderr and "1024 KiB" in r.stderr


def test_a_source_at_the_limit_is_read(tmp_path):
    edge = tmp_path / "edge.copy"
    edge.write_bytes(b"#" * (MAX_SOURCE_BYTES - 1) + b"\n")
    assert len(read_source(edge)) == MAX_SOURCE_BYTES


# ------------------------------------------------------------- long lines, BOM

def test_an_error_on_a_long_line_prints_a_window_of_it(tmp_path):
    pad = " " * 400_000
    syntax = tmp_path / "syntax.copy"
    syntax.write_text(TARGET + "copy_user cu for u74 {" + pad + "small below x }\n")
    semantic = tmp_path / "semantic.copy"
    semantic.write_text(GOOD.replace("words unroll 8", pad + "words unroll 33"))
    for path in (syntax, semantic):
        r = _run("check", str(path))
        assert r.exit_code == 2 and "error" in r.stderr
        assert len(r.stderr) < 1000, r.stderr[:300]
        line, caret = r.stderr.splitlines()[1:3]
        assert line.lstrip().startswith("...")
        assert line[caret.index("^")] in "xw"


def test_excerpt_window_keeps_the_caret_under_its_character():
    text = "\t" + "a" * 300 + "X" + "b" * 300
    shown, caret = _excerpt(Loc("f", 1, 302), text)
    assert shown[caret.index("^")] == "X"
    assert shown.startswith("    ...") and shown.endswith("...")
    assert len(shown) < 220
    shown, caret = _excerpt(Loc("f", 1, 3), "\tab" + "c" * 500)
    assert caret == "    \t ^" and shown[caret.index("^")] == "b" and not shown.startswith("    ...")


def test_a_huge_number_is_a_located_error_not_a_traceback():
    err = _error(GOOD.replace("small below 71", "small below " + "9" * 5000))
    assert "too large" in err.message and (err.loc.line, err.loc.col) == (6, 17)
    assert len(err.render()) < 1000


def test_a_leading_bom_is_accepted(tmp_path):
    path = tmp_path / "bom.copy"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    r = _run("check", str(path))
    assert r.exit_code == 0, r.stderr


def test_columns_on_a_bom_file_count_visible_characters(tmp_path):
    path = tmp_path / "bom.copy"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.replace("target u74 {", "target u74 {$").encode())
    r = _run("check", str(path))
    assert r.exit_code == 2 and f"{path}:1:13: error" in r.stderr
    line, caret = r.stderr.splitlines()[1:3]
    assert "\ufeff" not in line and line[caret.index("^")] == "$"


# ------------------------------------------------------------- option ranges

@pytest.mark.parametrize("args", [["--bounded", "-1"], ["-j", "0"], ["-j", "-5"],
                                  ["--jobs", "0"]])
def test_verify_refuses_out_of_range_options(args, tmp_path):
    path = tmp_path / "good.copy"
    path.write_text(GOOD)
    r = _run("verify", str(path), "--workdir", str(tmp_path / "w"), *args)
    assert r.exit_code == 2 and "Invalid value" in r.stderr and args[0] in r.stderr
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("args", [["-j", "0"], ["--count", "0"]])
def test_mutate_refuses_out_of_range_options(args, tmp_path):
    path = tmp_path / "u.S"
    path.write_text("\n")
    r = _run("mutate", str(path), *args)
    assert r.exit_code == 2 and "Invalid value" in r.stderr


# ------------------------------------------------------------- profiles

def test_an_unknown_profile_is_located_when_profiles_are_given():
    src = GOOD.replace("misaligned slow\n", "misaligned slow\n    profile u75\n")
    err = _error(src, PROFILES)
    assert "unknown cost profile `u75`" in err.message
    assert (err.loc.line, err.loc.col) == (4, 5) and "c910, u74" in err.hint
    assert load_text(src, "lib.copy").targets[0].profile == "u75"   # library use: unchecked
    assert load_text(src.replace("u75", "c910"), "ok.copy", PROFILES)


@pytest.mark.parametrize("command", ["check", "build"])
def test_check_and_build_refuse_an_unknown_profile(command, tmp_path):
    path = tmp_path / "p.copy"
    path.write_text(GOOD.replace("misaligned slow\n", "misaligned slow\n    profile nosuch\n"))
    extra = ["-o", str(tmp_path / "out"), "--no-link"] if command == "build" else []
    r = _run(command, str(path), *extra)
    assert r.exit_code == 2 and f"{path}:4:5: error: unknown cost profile" in r.stderr
    assert "u74" in r.stderr


# ------------------------------------------------------------- sweeps

def test_two_sweeps_with_one_name():
    src = GOOD + "sweep s for cu { small below [71] }\nsweep s for cu { small below [96] }\n"
    err = _error(src)
    assert "sweep name `s` used twice" in err.message
    assert (err.loc.line, err.loc.col) == (14, 1) and "line 13" in err.hint


def test_a_shift_axis_on_clear_user():
    err = _error(GOOD + CLEAR + "sweep s for clr {\n  words unroll [1, 2]\n  shift unroll [1, 2]\n}\n")
    assert "`shift` axis" in err.message and (err.loc.line, err.loc.col) == (16, 3)


def test_a_sweep_over_a_string_block():
    err = _error(GOOD + STRING + "sweep s for lib { small below [16] }\n")
    assert "string block" in err.message and (err.loc.line, err.loc.col) == (17, 13)


@pytest.mark.parametrize("axes, words", [
    ("small below [71] shift unroll [2, 8] schedule [pipelined]",
     ["small below 71, shift unroll 8 schedule pipelined", "only 6 fit"]),
    ("small below [96, 0x1000000]", ["small below 16777216", "1 MiB"]),
])
def test_every_sweep_point_is_validated(axes, words):
    err = _error(GOOD + f"sweep s for cu {{ {axes} }}\n")
    assert (err.loc.line, err.loc.col) == (13, 1), err.render()
    assert err.message.startswith("sweep `s`: the point ")
    for w in words:
        assert w in err.message or w in (err.hint or ""), err.render()


def test_points_invalid_only_in_combination_are_pruned_with_a_warning():
    # unroll 16 works loads_first, pipelined works at 4: only their
    # combination is too wide, and the tuner prunes it
    st = load_text(GOOD + "sweep s for cu { words unroll [4, 16] schedule [loads_first, pipelined] }\n",
                   "ok.copy")
    (w,) = [w for w in st.warnings if "pruned" in w.message]
    assert "1 of 4 points" in w.message and "words unroll 16 schedule pipelined" in w.message
    assert (w.loc.line, w.loc.col) == (13, 1)


def test_a_sweep_axis_keeps_the_routines_schedule():
    pipelined = GOOD.replace("schedule loads_first", "schedule pipelined")
    err = _error(pipelined + "sweep s for cu { words unroll [8, 12] }\n")
    assert "words unroll 12 schedule pipelined" in err.message
    assert load_text(GOOD + "sweep s for cu { words unroll [8, 12] }\n", "ok.copy").sweeps


def test_a_sweep_of_too_many_points():
    smalls = ", ".join(str(v) for v in range(72, 72 + 3000))
    src = GOOD + (f"sweep s for cu {{ small below [{smalls}] words unroll [1, 2, 4, 8, 16] "
                  "schedule [loads_first, interleave] shift unroll [1, 2, 4, 8, 16] }\n")
    err = _error(src)
    assert f"at most {MAX_SWEEP_POINTS}" in err.message and err.loc.line == 13


def test_a_large_valid_sweep_is_accepted():
    smalls = ", ".join(str(v) for v in range(72, 72 + 40))
    st = load_text(GOOD + f"sweep s for cu {{ small below [{smalls}] words unroll [1, 2, 4, 8] "
                   "schedule [loads_first, interleave, pipelined] shift unroll [1, 2, 4] "
                   "schedule [loads_first, interleave, pipelined] }\n", "ok.copy")
    assert [name for name, _ in st.sweeps[0].axes] == ["small", "words", "shift"]


# ------------------------------------------------------------- build outputs

def test_build_refuses_two_inputs_with_one_output_directory(tmp_path):
    for d in ("d1", "d2"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "x.copy").write_text(GOOD)
    a, b, out = tmp_path / "d1" / "x.copy", tmp_path / "d2" / "x.copy", tmp_path / "out"
    r = _run("build", str(a), str(b), "-o", str(out), "--no-link")
    assert r.exit_code == 2
    assert str(a) in r.stderr and str(b) in r.stderr and str(out / "x") in r.stderr
    assert not out.exists(), "nothing may be built"
    r = _run("build", str(a), str(a), "-o", str(out), "--no-link")
    assert r.exit_code == 0, r.stderr


# ------------------------------------------------------------- bad paths

def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_mutate_refuses_a_file_that_does_not_assemble(tmp_path):
    path = tmp_path / "bad.S"
    path.write_text("\t.text\n\tnot_an_insn a0, a1\n")
    r = _run("mutate", str(path))
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith(f"{path}:2:1: error: does not assemble"), r.stderr
    assert "Traceback" not in r.output and _tree(tmp_path) == ["bad.S"]


def test_mutate_refuses_a_strategy(tmp_path):
    path = tmp_path / "k.copy"
    path.write_text(GOOD)
    r = _run("mutate", str(path))
    assert r.exit_code == 2 and r.stderr.startswith(f"{path}: error: a strategy, not assembly")
    assert "copygen build" in r.stderr


def test_verify_refuses_an_object_that_is_not_elf(tmp_path):
    path = tmp_path / "x.o"
    path.write_text("not an object\n")
    r = _run("verify", str(path), "--workdir", str(tmp_path / "work"))
    assert r.exit_code == 2 and r.stderr.startswith(f"{path}: error: not an ELF object"), r.stderr
    assert _tree(tmp_path) == ["x.o"]


# every path a command takes: the ones it writes (checked before any work)
# and the ones it reads
OUTPUTS = {("build", "-o"), ("bench", "--plot"), ("bench", "--build-cache"),
           ("rank", "--build-cache"), ("verify", "--junit"), ("verify", "--proof-cache"),
           ("verify", "--workdir"), ("tune", "--db"), ("tune", "--report"),
           ("tune", "--build-cache"), ("tune", "--proof-cache"), ("tune show", "--report"),
           ("patch", "-o"), ("patch", "--proof-cache"), ("tree", "--dir"), ("hwbench", "-o"),
           ("kunit", "--add-fault-suite"),
           ("calibrate", "-o"), ("calibrate", "--plot")}
INPUTS = {("check", "files"), ("build", "files"), ("bench", "file"), ("rank", "files"),
          ("verify", "files"), ("mutate", "file"), ("mutate", "--include"), ("tune", "file"),
          ("tune", "--baseline"), ("tune", "--guard"), ("tune", "--guard-kernel-tree"),
          ("tune show", "db"),
          ("patch", "file"), ("patch", "--kernel-tree"), ("kunit", "--kernel-tree"),
          ("bench", "--measured"), ("rank", "--measured"), ("patch", "--measured"),
          ("tune", "--measured"), ("tune show", "--measured"), ("patch", "--fast-body"),
          ("hwbench", "files"), ("calibrate", "measured"), ("calibrate", "--kernel-tree")}


def _path_params(cmd=main, prefix=()):
    """(command, option) of every parameter that takes a path, read from click."""
    import click
    if isinstance(cmd, click.Group):
        return {pp for name, sub in cmd.commands.items()        # a hidden walk is the group's own
                for pp in _path_params(sub, prefix + (() if sub.hidden else (name,)))}
    return {(" ".join(prefix), p.opts[0] if isinstance(p, click.Option) else p.name)
            for p in cmd.params if isinstance(p.type, click.Path)}


def test_every_path_option_is_in_the_sweep():
    assert _path_params() == OUTPUTS | INPUTS


def _board_csv(tmp_path):
    """A board's measurements of one memcpy cell, for calibrate's command line."""
    (tmp_path / "mc.S").write_text("\t.text\n")
    path = tmp_path / "board.csv"
    path.write_text("board,core,clock_ghz,routine,source_file,mode,size,bytes_per_ns\n"
                    "b,u74,1.5,memcpy,mc.S,aligned,64,1.0\n")
    return path


def _argv(command, tmp_path):
    """A command line that would run (and write only under tmp_path)."""
    good = tmp_path / "good.copy"
    good.write_text(GOOD + "sweep s for cu { small below [71, 96] }\n")
    (tmp_path / "u.S").write_text("\t.text\n")
    (tmp_path / "tree").mkdir()
    out = {"build": [good, "-o", tmp_path / "out", "--no-link"],
           "check": [good],
           "bench": [good, "--sizes", "8", "--align", "0:0", "--routine", "clear_user",
                     "--build-cache", tmp_path / "cache"],
           "rank": [good, "--workload", "uniform:0-8", "--build-cache", tmp_path / "cache"],
           "verify": [good, "--workdir", tmp_path / "w", "--proof-cache", tmp_path / "p"],
           "mutate": [tmp_path / "u.S"],
           "tune": [good, "--dry-run", "--db", tmp_path / "t.db"],
           "tune show": [tmp_path / "t.db"],
           "patch": [good, "--kernel-tree", tmp_path / "tree", "-o", tmp_path / "patches",
                     "--proof-cache", tmp_path / "p"],
           "tree": ["--version", "6.12"],
           "kunit": ["--kernel-tree", tmp_path / "tree"],
           "hwbench": [good, "-o", tmp_path / "hw"],
           "calibrate": [_board_csv(tmp_path), "--profile", "u74", "--free", "latency.load",
                         "--routine", f"memcpy={tmp_path / 'mc.S'}", "-o", tmp_path / "fit.toml"]}[command]
    return command.split() + [str(a) for a in out]


@pytest.mark.parametrize("command, option", sorted(OUTPUTS | INPUTS))
def test_a_path_under_a_regular_file_is_one_located_error(command, option, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = _argv(command, tmp_path)
    (tmp_path / "afile").write_text("a regular file\n")
    bad = str(tmp_path / "afile" / ("x.copy" if option in ("files", "file") else "sub"))
    if option.startswith("-"):
        argv += [option, bad]
    else:           # the positional path: the first argument after the command
        argv[len(command.split())] = bad
    before = _tree(tmp_path)
    r = _run(*argv)
    assert r.exit_code == 2, (argv, r.output)
    assert "Traceback" not in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert r.stderr.startswith(f"{bad}: error: ") or f"'{bad}'" in r.stderr, r.stderr
    assert _tree(tmp_path) == before, "nothing may be written"


# options that take a name or a file (a cost profile, a workload)
NAMED_FILES = [("bench", "--profile", ".toml"), ("rank", "--profile", ".toml"),
               ("rank", "--workload", ".csv"), ("tune", "--profile", ".toml"),
               ("tune", "--workload", ".csv"), ("patch", "--profile", ".toml")]


@pytest.mark.parametrize("command, option, suffix", NAMED_FILES)
def test_a_named_file_under_a_regular_file_is_one_located_error(command, option, suffix, tmp_path,
                                                                monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = _argv(command, tmp_path)
    (tmp_path / "afile").write_text("a regular file\n")
    bad = str(tmp_path / "afile" / f"x{suffix}")
    before = _tree(tmp_path)
    r = _run(*argv, option, bad)
    assert r.exit_code == 2 and r.stderr.startswith(f"{bad}: error: {option}: no such file"), r.stderr
    assert _tree(tmp_path) == before


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_build_refuses_a_directory_it_cannot_make(tmp_path):
    """/proc takes no new directory, even from root (a read-only or
    unwritable directory does not stop root, so it stands in for them)."""
    path = tmp_path / "good.copy"
    path.write_text(GOOD)
    r = _run("build", str(path), "-o", "/proc/copygen-out", "--no-link")
    assert r.exit_code == 2 and r.stderr.startswith("/proc/copygen-out: error: -o: cannot write in /proc")
    if os.geteuid() != 0:
        (tmp_path / "ro").mkdir(mode=0o500)
        r = _run("build", str(path), "-o", str(tmp_path / "ro" / "out"), "--no-link")
        assert r.exit_code == 2 and "cannot write in" in r.stderr
