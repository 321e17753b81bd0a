"""A patch that carries a board's figures (`copygen patch --measured`):
the cases a board measured of both the tree's file and the strategy go
into the message as measured, named by board, CPU, kernel and date, apart
from the model's table; a bad or emulated file is refused before anything
runs and the tree is left as it was."""
from __future__ import annotations

import json
from click.testing import CliRunner

from copygen.cli import main
from copygen.emu.timing.profile import load_profile
from copygen.patch import evidence, message
from tests.conftest import SHARED_PROOFS
from tests.patch.test_patch import SMALL, make_tree, snapshot

HEAD = """# copygen-measurements 1
# board: testboard
# emulated: {emulated}
# uname: Linux 6.6.20 riscv64
# date: 2026-11-30
# cpuinfo: uarch : sifive,u74-mc
board,core,clock_ghz,routine,source_file,mode,size,src_off,dst_off,method,state,reps,value,unit,spread
"""


def _rows(source, size, cycles, pairs):
    from copygen.measure.measurements import mode_of
    return "".join(f"testboard,u74,1.5,__asm_copy_to_user,{source},{mode_of(s, d)},{size},{s},{d},"
                   f"isolated,warm,9,{c},cycles_per_call,0.01\n" for (s, d), c in zip(pairs, cycles))


def _file(tmp_path, emulated="no", misaligned_after=(100, 100, 100, 100)):
    aligned = evidence.COPY_PAIRS["aligned"]
    mis = evidence.COPY_PAIRS["misaligned"]
    text = (HEAD.format(emulated=emulated)
            + _rows("linux/arch/riscv/lib/uaccess.S", 64, (50,), aligned)
            + _rows("small.copy", 64, (40,), aligned)
            + _rows("linux/arch/riscv/lib/uaccess.S", 64, (300, 300, 300, 300), mis)
            + _rows("small.copy", 64, misaligned_after[:3], mis[:3]))   # one pair left out
    path = tmp_path / "board.csv"
    path.write_text(text)
    return str(path)


def test_a_class_is_measured_only_when_all_its_pairs_are_for_both_states(tmp_path):
    rows, where = evidence.board_rows((_file(tmp_path),), "small.copy", ("copy_user",))
    assert [(r.routine, r.size, r.align, r.before, r.after) for r in rows] == [
        ("copy_to_user", 64, "aligned", 50, 40)]
    assert rows[0].profile == "measured"
    assert where == "measured on testboard (sifive,u74-mc, Linux 6.6.20 riscv64, 2026-11-30)"


def test_the_message_puts_measured_cases_apart_from_modelled_ones(tmp_path):
    board, where = evidence.board_rows((_file(tmp_path),), "small.copy", ("copy_user",))
    modelled = [evidence.Row("u74", "copy_to_user", 64, "aligned", 60.0, 50.0)]
    ch = message.Change(("copy_user",), "mainline", {}, {}, modelled, {"u74": "within 2 %"},
                        board=tuple(board), board_on=where)
    text = "\n".join(message.evidence_lines(ch))
    first, second = text.index("Measured on testboard"), text.index("Modelled by")
    assert first < second
    assert "fewer cycles in 1 of the 1 cases measured" in " ".join(text[first:second].split())
    assert "     50     40" in text[first:second]          # the board's cycles, before and after
    assert "     60     50" in text[second:]                 # the model's, in its own table
    plain = message.Change(("copy_user",), "mainline", {}, {}, modelled, {"u74": "x"})
    assert "Measured on" not in "\n".join(message.evidence_lines(plain))


def test_an_emulated_file_is_refused_and_the_tree_left_alone(tmp_path):
    strategy = tmp_path / "small.copy"
    strategy.write_text(SMALL)
    tree = make_tree(tmp_path / "linux")
    before = snapshot(tree)
    r = CliRunner().invoke(main, ["patch", str(strategy), "--kernel-tree", str(tree), "-o",
                                  str(tmp_path / "out"), "--proof-cache", str(SHARED_PROOFS),
                                  "--measured", _file(tmp_path, "yes"), "--json"])
    assert r.exit_code == 2
    out = json.loads(r.stdout)
    assert "under an emulator" in out["error"]["message"]
    assert snapshot(tree) == before and not (tmp_path / "out").exists()


def test_the_modelled_paragraph_says_what_each_profile_was_fitted_to():
    """The fitted default says its measurements and cross-validated error;
    a profile from documentation says it was fitted to none."""
    rows = [evidence.Row(p.name, "copy_to_user", 64, "aligned", 60.0, 50.0)
            for p in (load_profile("u74"), load_profile("x60"))]
    cal = {p: load_profile(p).provenance for p in ("u74", "x60")}
    text = " ".join("\n".join(message.evidence_lines(
        message.Change(("copy_user",), "mainline", {}, {}, rows, cal))).split())
    assert "u74, fitted to memcpy_2024_upstream.csv on JH7110, cross-validated error" in text
    assert "x60, not fitted to a board's measurements" in text
