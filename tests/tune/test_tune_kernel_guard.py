"""copygen tune guarded by a kernel's own assembly: `--guard FILE.S` and
`--guard-kernel-tree DIR` (the tree's arch/riscv/lib file of the swept
routine), assembled in place against the shim and benched like a point.

The kernel file here is tests/asm/memset_bytes.S (a byte loop memset in the
kernel's SYM_FUNC_START form), put where a tree keeps memset.S."""
from __future__ import annotations

import json
import re
import shutil

from click.testing import CliRunner

from copygen.cli import main
from tests.conftest import ROOT

SWEEP = """target u74 { xlen 64; misaligned slow }
string lib for u74 {
    memcpy { small below 16; align dst; words unroll 1; shift unroll 1; tail bytes }
    memset { small below 16; align dst; words unroll 1; tail bytes }
}
sweep ms for lib.memset { small below [8, 64]; words unroll [4] }
"""
BYTES_S = ROOT / "tests" / "asm" / "memset_bytes.S"


def _tune(tmp_path, *args):
    src = tmp_path / "t.copy"
    src.write_text(SWEEP)
    return CliRunner().invoke(main, ["tune", str(src), "--top", "0", "--workload", "small",
                                     "--db", str(tmp_path / "t.db"), "--json",
                                     "--build-cache", str(tmp_path / "cache"), *map(str, args)])


def _tree(tmp_path):
    lib = tmp_path / "linux" / "arch" / "riscv" / "lib"
    lib.mkdir(parents=True)
    shutil.copy(BYTES_S, lib / "memset.S")
    return tmp_path / "linux"


def test_a_kernel_memset_guards_a_memset_sweep_from_a_file_or_a_tree(tmp_path):
    """The kernel's byte loop (20 bytes of code) beats both points' C on
    short calls: each is slower than it in some cells, and says so."""
    by_file = _tune(tmp_path, "--guard", BYTES_S)
    assert by_file.exit_code == 0, by_file.output
    out = json.loads(by_file.stdout)
    assert out["baselines"][str(BYTES_S)]["name"] == "memset_bytes.S"
    rows = out["rows"]
    assert len(rows) == 2 and all(re.search(rf"\d+ cells? slower than {BYTES_S.stem}", r["proof"]) for r in rows)
    tree = _tree(tmp_path)
    by_tree = _tune(tmp_path, "--guard-kernel-tree", tree)
    assert by_tree.exit_code == 0, by_tree.output
    again = json.loads(by_tree.stdout)
    assert [(r["point"], r["proof"].split(" cells")[0]) for r in again["rows"]] == [
        (r["point"], r["proof"].split(" cells")[0]) for r in rows]
    assert str(tree / "arch" / "riscv" / "lib" / "memset.S") in again["baselines"]


def test_a_kernel_file_without_the_routine_or_a_tree_without_the_file_is_an_error(tmp_path):
    r = _tune(tmp_path, "--guard", ROOT / "tests" / "asm" / "memcpy_saves_s0.S")
    assert r.exit_code == 2 and "defines no memset" in r.stderr
    (tmp_path / "empty").mkdir()
    r = _tune(tmp_path, "--guard-kernel-tree", tmp_path / "empty")
    assert r.exit_code == 2 and "no arch/riscv/lib/memset.S" in r.stderr


def test_no_winner_names_a_tree_guard_by_its_file_not_its_path(tmp_path):
    """The line under the table and the report's sentence say `memset`,
    as the table's columns do, not the tree's absolute path."""
    tree = _tree(tmp_path)
    src = tmp_path / "t.copy"
    src.write_text(SWEEP)
    r = CliRunner().invoke(main, ["tune", str(src), "--top", "0", "--workload", "small",
                                  "--db", str(tmp_path / "t.db"), "--report", str(tmp_path / "rep"),
                                  "--build-cache", str(tmp_path / "cache"),
                                  "--guard-kernel-tree", str(tree)])
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("no winner"))
    assert "as fast as memset in every cell" in line and str(tmp_path) not in line
    md = (tmp_path / "rep" / "report.md").read_text()
    sentence = next(ln for ln in md.splitlines() if ln.startswith("**No winner**"))
    assert sentence.endswith("nowhere slower than memset.") and str(tmp_path) not in sentence
