"""Bad input: each kind gives its message at the right file:line:col, never
a traceback; the command line exits 2 for bad input, 1 for a failing tool."""
from __future__ import annotations

import subprocess
import sys

import pytest

from copygen.errors import CopygenError
from copygen.gen.front.validate import load_text

TARGET = "target u74 {\n    xlen 64\n    misaligned slow\n}\n"
GOOD_COPY = """copy_user cu for u74 {
    small below 71
    align dst
    words unroll 8 schedule loads_first
    shift unroll 1
    tail bytes
    fault exact
}
"""


def _with(setting_line_old: str, new: str) -> str:
    assert setting_line_old in GOOD_COPY
    return TARGET + GOOD_COPY.replace(setting_line_old, new)


# (id, source, expected line, expected col, words that must be in the message)
CASES = [
    ("syntax-unexpected-token", TARGET + "copy_user cu u74 {}\n", 5, 14, ["syntax error", "'u74'"]),
    ("syntax-bad-character", TARGET + "copy_user cu for u74 { small below 7$ }\n", 5, 37,
     ["syntax error", "character"]),
    ("syntax-unexpected-eof", TARGET + "copy_user cu for u74 {\n    small below 71\n", 6, 19,
     ["end of file"]),
    ("syntax-unknown-keyword", _with("tail bytes", "tail nibbles"), 10, 10, ["syntax error"]),
    ("syntax-unknown-schedule", _with("schedule loads_first", "schedule random"), 8, 29,
     ["syntax error"]),
    ("unroll-too-large", _with("words unroll 8", "words unroll 33"), 8, 5, ["unroll 33", "1..32"]),
    ("unroll-zero", _with("shift unroll 1", "shift unroll 0"), 9, 5, ["unroll 0"]),
    ("unknown-target", TARGET + GOOD_COPY.replace("for u74", "for c999"), 5, 18,
     ["unknown target `c999`"]),
    ("duplicate-target", TARGET + TARGET + GOOD_COPY, 5, 1, ["defined twice"]),
    ("duplicate-routine-name", TARGET + GOOD_COPY +
     "clear_user cu for u74 { small below 16; words unroll 1; tail bytes; fault exact }\n",
     13, 1, ["`cu` used twice"]),
    ("second-copy-user", TARGET + GOOD_COPY + GOOD_COPY.replace("cu for", "cu2 for"), 13, 1,
     ["second `copy_user`"]),
    ("duplicate-setting", _with("tail bytes", "tail bytes\n    tail bytes"), 11, 5,
     ["given twice"]),
    ("missing-phase", _with("    fault exact\n", ""), 5, 1, ["no `fault` phase"]),
    ("xlen-32", TARGET.replace("xlen 64", "xlen 32") + GOOD_COPY, 2, 5, ["xlen 32"]),
    ("target-without-misaligned", "target u74 { xlen 64 }\n" + GOOD_COPY, 1, 1,
     ["does not say `misaligned`"]),
    ("overlap-tail-on-slow-core", _with("tail bytes", "tail overlap"), 10, 5,
     ["misaligned slow"]),
    ("align-none-on-slow-core", _with("align dst", "align none"), 7, 5, ["misaligned"]),
    ("align-src-on-slow-core", _with("align dst", "align src"), 7, 5, ["align src"]),
    ("align-none-in-an-exact-clear", TARGET.replace("misaligned slow", "misaligned fast")
     + "clear_user cl for u74 {\n    small below 16\n    align none\n    words unroll 2\n"
       "    tail words\n    fault exact\n}\n", 7, 5, ["align none", "exact count"]),
    ("align-src-on-fast-core", TARGET.replace("misaligned slow", "misaligned fast")
     + GOOD_COPY.replace("align dst", "align src").replace("shift unroll 1", "shift off"),
     7, 5, ["`align src` is not implemented"]),
    ("align-src-in-a-string-function", TARGET.replace("misaligned slow", "misaligned fast")
     + "string lib for u74 {\n    memcpy { small below 16; align src; words unroll 2; "
       "shift off; tail words }\n    memmove { forward memcpy; backward words }\n"
       "    memset { small below 16; align dst; words unroll 2; tail words }\n}\n",
     6, 30, ["`align src` is not implemented"]),
    ("pipelined-too-wide", _with("words unroll 8 schedule loads_first",
                                 "words unroll 16 schedule pipelined"), 8, 5, ["registers"]),
    ("shift-pipelined-too-wide", _with("shift unroll 1", "shift unroll 8 schedule pipelined"),
     9, 5, ["only 6 fit"]),
    ("fault-in-string", TARGET + "string s for u74 {\n  memcpy { small below 16; words unroll 1;"
     " tail bytes; fault exact }\n  memset { small below 16; words unroll 1; tail bytes }\n}\n",
     6, 56, ["kernel memory never faults"]),
    ("shift-in-memset", TARGET + "string s for u74 {\n  memcpy { small below 16; words unroll 1;"
     " tail bytes }\n  memset { small below 16; words unroll 1; shift unroll 2; tail bytes }\n}\n",
     7, 44, ["no source"]),
    ("string-without-memset", TARGET + "string s for u74 {\n  memcpy { small below 16; "
     "words unroll 1; tail bytes }\n}\n", 5, 1, ["no `memset`"]),
    ("threshold-absurd", _with("small below 71", "small below 0x1000000"), 6, 5, ["1 MiB"]),
    ("sweep-unknown-routine", TARGET + GOOD_COPY + "sweep s for nothing { small below [8] }\n",
     13, 13, ["unknown routine"]),
    ("sweep-unroll-out-of-range", TARGET + GOOD_COPY + "sweep s for cu { words unroll [4, 64] }\n",
     13, 18, ["unroll 64"]),
    ("nothing-to-generate", TARGET, 1, 1, ["nothing to generate"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_reported_at_its_location(case):
    _, src, line, col, words = case
    with pytest.raises(CopygenError) as info:
        load_text(src, "bad.copy")
    err = info.value
    assert err.exit_code == 2
    assert (err.loc.file, err.loc.line, err.loc.col) == ("bad.copy", line, col), err.render()
    for w in words:
        assert w in err.message or w in (err.hint or ""), err.render()
    text = err.render()
    assert text.startswith(f"bad.copy:{line}:{col}: error:")


def test_syntax_error_shows_line_caret_and_expectation():
    err = pytest.raises(CopygenError, load_text, TARGET + "copy_user cu u74 {}\n", "x.copy").value
    lines = err.render().splitlines()
    assert lines[1].strip() == "copy_user cu u74 {}"
    assert lines[2].index("^") == lines[1].index("u74")
    assert "expected 'for'" in err.render()


def test_small_threshold_is_raised_with_a_warning():
    st = load_text(_with("small below 71", "small below 16"), "w.copy")
    assert st.copy_user.phases.threshold == 71
    (w,) = [w for w in st.warnings if "threshold" in w.message]
    assert "raised from 16 to 71" in w.message and w.loc.line == 6


def test_shift_on_fast_core_warns():
    src = (TARGET.replace("slow", "fast") + GOOD_COPY)
    st = load_text(src, "f.copy")
    assert any("pointless" in w.message for w in st.warnings)


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "copygen", *args], capture_output=True,
                          text=True, env=env)


def test_cli_exit_codes(tmp_path):
    good = tmp_path / "good.copy"
    good.write_text(TARGET + GOOD_COPY)
    bad = tmp_path / "bad.copy"
    bad.write_text(TARGET + "copy_user cu for u74 { small below x }\n")
    ok = _cli("check", str(good))
    assert ok.returncode == 0, ok.stderr
    r = _cli("check", str(bad))
    assert r.returncode == 2 and f"{bad}:5:36: error" in r.stderr and "Traceback" not in r.stderr
    r = _cli("check", str(tmp_path / "missing.copy"))
    assert r.returncode == 2 and "no such file" in r.stderr
    notutf = tmp_path / "bin.copy"
    notutf.write_bytes(b"\xff\xfe\x00")
    r = _cli("check", str(notutf))
    assert r.returncode == 2 and "not UTF-8" in r.stderr


def test_cli_names_the_missing_toolchain(tmp_path):
    import os
    good = tmp_path / "good.copy"
    good.write_text(TARGET + GOOD_COPY)
    env = dict(os.environ, CROSS_COMPILE="nonexistent-riscv-")
    r = _cli("build", str(good), "-o", str(tmp_path / "o"), env=env)
    assert r.returncode == 1
    assert "nonexistent-riscv-gcc" in r.stderr and "gcc-riscv64-linux-gnu" in r.stderr


def test_cli_reports_assembler_failure_with_its_stderr(tmp_path, monkeypatch):
    from copygen.gen import toolchain
    from copygen.errors import ToolError
    bad = tmp_path / "broken.S"
    bad.write_text("\tnot_an_instruction a0\n")
    with pytest.raises(ToolError) as info:
        toolchain.assemble(bad, tmp_path, tmp_path / "x.o")
    assert info.value.exit_code == 1 and "not_an_instruction" in info.value.detail
