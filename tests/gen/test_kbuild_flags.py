"""string.c is compiled as Kbuild compiles arch/riscv/lib/string.o: with
-mstrict-align (a portable kernel) and frame pointers, and with KCFLAGS
from the environment after them.  Under those flags a fast-misaligned
core's word loop still loads and stores whole words, through the
accessors that say ld and sd (gen.lower.lower_string), and the build cache tells
builds with different KCFLAGS apart."""
from __future__ import annotations

import re

import pytest

from copygen.gen import toolchain
from copygen.gen.build import build_cached, build_file

UNALIGNED = """typedef unsigned long __attribute__((__aligned__(1))) uw;
unsigned long get(const void *p) { return *(const uw *)p; }
"""

FAST = """target c910 { xlen 64; misaligned fast; profile c910 }
string lib for c910 {
    memcpy { small below 16; align dst; words unroll 4; shift off; tail overlap }
    memmove { forward memcpy; backward words }
    memset { small below 16; align dst; words unroll 4; tail overlap }
}
"""


def _disassembly(obj) -> dict[str, list[str]]:
    """Mnemonics per function symbol of an object file, but for the
    frame's own accesses (sd/ld of s0 and ra at sp)."""
    text = toolchain.run("objdump", ["-d", "--no-show-raw-insn", obj]).stdout
    out: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>.][^>]*)>:$", line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name and re.match(r"^\s+[0-9a-f]+:\s", line):
            insn = line.split(":", 1)[1].split()
            if not re.fullmatch(r"(s0|ra),-?\d+\(sp\)", insn[-1]):
                out[name].append(insn[0])
    return out


def _compiled(tmp_path, monkeypatch, kcflags: str | None):
    if kcflags is None:
        monkeypatch.delenv("KCFLAGS", raising=False)
    else:
        monkeypatch.setenv("KCFLAGS", kcflags)
    src = tmp_path / "u.c"
    src.write_text(UNALIGNED)
    obj = tmp_path / f"u{abs(hash(kcflags))}.o"
    toolchain.compile_c(src, tmp_path, obj)
    return _disassembly(obj)["get"]


def test_an_unaligned_access_in_c_is_bytes_as_in_a_portable_kernel(tmp_path, monkeypatch):
    insns = _compiled(tmp_path, monkeypatch, None)
    assert insns.count("lbu") == 8 and "ld" not in insns


def test_kcflags_are_honoured_after_the_kernels_own(tmp_path, monkeypatch):
    insns = _compiled(tmp_path, monkeypatch, "-mno-strict-align -mtune=thead-c906")
    assert "lbu" not in insns and insns.count("ld") == 1


def test_kcflags_with_a_quoted_argument_split_as_a_shell_would(monkeypatch):
    monkeypatch.setenv("KCFLAGS", "-DNAME='a b' -O2")
    assert toolchain.kcflags() == ["-DNAME=a b", "-O2"]


def test_a_fast_cores_c_memcpy_moves_whole_words_under_strict_align(tmp_path, monkeypatch):
    monkeypatch.delenv("KCFLAGS", raising=False)
    src = tmp_path / "fast.copy"
    src.write_text(FAST)
    res = build_file(src, tmp_path)
    fns = _disassembly(next(o for o in res.objects if o.name == "string.o"))
    for name in ("__memcpy", "__memset"):
        insns = fns[name]
        assert insns.count("sd") >= 4 + 1, (name, insns)     # the block, the tail word
    memcpy = fns["__memcpy"]
    # bytes only in the head and the short-copy loop: one lbu each
    assert memcpy.count("lbu") <= 2 and memcpy.count("ld") >= 4 + 1, memcpy


def test_the_build_cache_keeps_builds_with_other_kcflags_apart(tmp_path, monkeypatch):
    src = tmp_path / "fast.copy"
    src.write_text(FAST)
    monkeypatch.delenv("KCFLAGS", raising=False)
    plain = build_cached(src, tmp_path / "cache")
    monkeypatch.setenv("KCFLAGS", "-mno-strict-align -mtune=thead-c906")
    tuned = build_cached(src, tmp_path / "cache")
    assert plain.outdir != tuned.outdir
    monkeypatch.delenv("KCFLAGS")
    assert build_cached(src, tmp_path / "cache").outdir == plain.outdir


@pytest.mark.parametrize("fn", ["__memcpy", "__memset"])
def test_c_functions_keep_a_frame_as_with_config_frame_pointer(tmp_path, monkeypatch, fn):
    """riscv selects CONFIG_FRAME_POINTER by default: Kbuild's string.o
    saves s0 and points it at the frame even in a leaf function."""
    monkeypatch.delenv("KCFLAGS", raising=False)
    src = tmp_path / "fast.copy"
    src.write_text(FAST)
    res = build_file(src, tmp_path)
    obj = next(o for o in res.objects if o.name == "string.o")
    text = toolchain.run("objdump", ["-d", "--no-show-raw-insn", obj]).stdout
    body = text.split(f"<{fn}>:")[1].split("\n\n")[0]
    assert re.search(r"\bsd\s+s0,\d+\(sp\)", body), body


def test_kcflags_a_shell_could_not_split_is_a_located_error(tmp_path):
    """An unbalanced quote in KCFLAGS: exit 2 and one line saying so, no
    traceback, nothing built."""
    import os
    import subprocess
    import sys
    src = tmp_path / "fast.copy"
    src.write_text(FAST)
    env = {**os.environ, "KCFLAGS": "-DNAME='a b"}
    proc = subprocess.run([sys.executable, "-m", "copygen", "build", str(src), "-o",
                           str(tmp_path / "out")], capture_output=True, text=True, env=env)
    assert proc.returncode == 2, proc.stderr
    assert "KCFLAGS cannot be split" in proc.stderr and "Traceback" not in proc.stderr
    assert not any((tmp_path / "out").rglob("*"))
