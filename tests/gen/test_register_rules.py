"""Register rules in the language and the generator (issue 63): a target's
`reserve` and `jump` settings parse (ABI names or x0-x31), are refused at
their line when they cannot hold, are written back by gen.front.unparse;
the generated assembly of every routine names no reserved register, in the
emitted text and in the linked ELF as objdump shows it, and memset's
computed jump goes through the allowed register.  A strategy that cannot
be lowered within what is left is refused with the phase named, exit 2."""
from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.errors import CopygenError
from copygen.gen import toolchain
from copygen.gen.build import build_file
from copygen.gen.emission import asmtext
from copygen.gen.emission.emit import render_memset, render_uaccess
from copygen.gen.front.parse import parse_text
from copygen.gen.front.unparse import file_text
from copygen.gen.front.validate import load_text
from tests.conftest import ROOT
from tests.patch.test_patch import SMALL

U74 = (ROOT / "examples" / "u74tuned.copy").read_text()
def with_rules(text: str, *lines: str) -> str:
    """`text` with `lines` added to its (first) target block."""
    return text.replace("    misaligned slow\n", "    misaligned slow\n"
                        + "".join(f"    {ln}\n" for ln in lines), 1)


def code_registers(text: str) -> set[str]:
    """The registers the code lines of an assembly text name (comments out)."""
    words = re.compile(r"(?<![\w.$])([ast]\d{1,2}|ra|sp|gp|tp|zero)(?![\w.$])")
    return {w for ln in asmtext.code_lines(text.splitlines()) for w in words.findall(ln.code)}


# --- the language -------------------------------------------------------------

def test_reserve_and_jump_go_into_the_target_as_abi_names():
    st = load_text(with_rules(SMALL, "reserve t6, x30", "jump x7"))
    t = st.copy_user.target
    assert (t.reserve, t.jump) == (("t6", "t5"), "t2")
    assert st.clear_user.target == t
    assert load_text(with_rules(SMALL, "")).copy_user.target.reserve == ()


def test_unparse_writes_the_rules_back():
    items = parse_text(with_rules(SMALL, "reserve t6, a7; jump t2"))
    text = file_text(items)
    assert "reserve t6, a7" in text and "jump t2" in text
    again = load_text(text).copy_user.target
    assert (again.reserve, again.jump) == (("t6", "a7"), "t2")


@pytest.mark.parametrize("lines, words", [
    (("reserve t9",), r"`t9` is not a register"),
    (("reserve t6, x32",), r"`x32` is not a register"),
    (("reserve a0",), r"a0 cannot be reserved"),
    (("reserve t6, ra",), r"ra cannot be reserved"),
    (("reserve sp",), r"sp cannot be reserved"),
    (("reserve zero",), r"zero cannot be reserved"),
    (("reserve a2",), r"a2 cannot be reserved"),
    (("reserve t6, x31",), r"names t6 twice"),
    (("reserve t6", "reserve t5"), r"`reserve` given twice"),
    (("jump a1",), r"cannot go through a1"),
    (("jump s2",), r"cannot go through s2"),
    (("reserve t2", "jump t2"), r"t2 is reserved"),
])
def test_bad_rules_are_refused_at_their_line(lines, words):
    text = with_rules(SMALL, *lines)
    with pytest.raises(CopygenError) as e:
        load_text(text, "rules.copy")
    assert re.search(words, e.value.message), e.value.message
    bad = lines[-1].split()[0]
    line = next(i for i, ln in enumerate(text.splitlines(), 1)
                if ln.strip().startswith(bad) and ln.strip() == lines[-1])
    assert e.value.loc.line == line and e.value.exit_code == 2


def test_a_bad_rule_is_one_line_and_exit_2_on_the_command_line(tmp_path):
    src = tmp_path / "bad.copy"
    src.write_text(with_rules(SMALL, "reserve a1"))
    r = CliRunner().invoke(main, ["build", str(src), "-o", str(tmp_path / "out"), "--json"])
    assert r.exit_code == 2, r.output
    err = json.loads(r.stdout)["error"]
    assert "a1 cannot be reserved" in err["message"] and not (tmp_path / "out" / "bad").exists()


# --- the generator --------------------------------------------------------------

def test_a_rule_for_a_register_no_code_names_changes_no_instruction():
    """s5 is never named: the bodies are the same, only the banner says more."""
    plain, ruled = load_text(U74), load_text(with_rules(U74, "reserve s5"))
    code = [[ln.code for ln in asmtext.code_lines(render_uaccess(st, "u.copy").splitlines())]
            for st in (plain, ruled)]
    assert code[0] == code[1]
    assert "reserve s5" in render_uaccess(ruled, "u.copy")


@pytest.fixture(scope="module")
def ruled_u74(tmp_path_factory):
    """u74tuned (copy, clear, memcpy/memmove and memset in assembly) with
    mainline's rules: t6 reserved, computed jumps through t2."""
    out = tmp_path_factory.mktemp("rules")
    src = out / "u74rules.copy"
    src.write_text(with_rules(U74, "reserve t6", "jump t2"))
    return build_file(src, out)


def test_no_emitted_instruction_names_a_reserved_register(ruled_u74):
    names = {f.name for f in ruled_u74.files}
    assert {"uaccess.S", "memcpy.S", "memset.S"} <= names
    plain = load_text(U74)
    assert "t6" in code_registers(render_uaccess(plain, "u.copy")), "the rule has work to do"
    for f in ruled_u74.files:
        if f.suffix == ".S":
            assert "t6" not in code_registers(f.read_text()), f.name


def test_the_linked_code_names_no_reserved_register(ruled_u74):
    dis = toolchain.disassemble(ruled_u74.elf)
    for fn in ("<__asm_copy_from_user>:", "<__clear_user>:", "<__memcpy>:", "<__memmove>:",
               "<__memset>:"):
        assert fn in dis
    assert not re.search(r"\bt6\b", dis)


def test_sum_moves_to_t5_as_mainline_has_it(ruled_u74):
    text = (ruled_u74.outdir / "uaccess.S").read_text()
    clear = text[text.index("SYM_FUNC_START(__clear_user)"):]
    assert re.search(r"li\tt5, SR_SUM", clear) and re.search(r"csrs\tCSR_STATUS, t5", clear)


def test_memset_jumps_through_the_allowed_register(ruled_u74):
    jumps = [ln.code.split() for ln in
             asmtext.code_lines((ruled_u74.outdir / "memset.S").read_text().splitlines())
             if ln.code.split()[:1] in (["jr"], ["jalr"])]
    assert jumps == [["jr", "t2"]]
    plain = render_memset(load_text(U74), "u.copy")
    assert re.search(r"\bjr\ta5\b", plain), "without the rule memset jumps through a5"


def test_a_strategy_with_no_register_left_names_the_phase(tmp_path):
    """The word copy's pool is empty once these are reserved."""
    src = tmp_path / "tight.copy"
    src.write_text(with_rules(SMALL, "reserve t1, t2, t3, t4, t5, t6, a4, a5, a6, a7"))
    r = CliRunner().invoke(main, ["build", str(src), "-o", str(tmp_path / "out"), "--json"])
    assert r.exit_code == 2, r.output
    assert re.search(r"word copy's blocks need 2 free registers", json.loads(r.stdout)["error"]["message"])


def test_a_fixed_role_with_no_temporary_left_names_its_phases():
    """__clear_user's t0 and t1 cannot both move: a4 is the one temporary
    left that it does not use already."""
    clear = SMALL[:SMALL.index("copy_user")] + SMALL[SMALL.index("clear_user"):]
    st = load_text(with_rules(clear, "reserve t0, t1, t2, t3, t4, t5, t6, a5, a6, a7"))
    with pytest.raises(CopygenError) as e:
        render_uaccess(st, "tight.copy")
    m = re.fullmatch(r"__clear_user: (t[01]) is reserved, .* in use \((.+) name \1\)",
                     e.value.message)
    assert m and "head" in m.group(2).lower(), e.value.message
    assert e.value.exit_code == 2


def test_string_c_is_compiled_without_the_reserved_registers(tmp_path):
    text = """target u74 { xlen 64; misaligned slow; reserve t6, t5, t4, t3 }
string clib for u74 {
    memcpy { small below 8; align dst; words unroll 8; tail bytes }
    memset { small below 15; align dst; words unroll 8; tail bytes }
}
"""
    src = tmp_path / "clib.copy"
    src.write_text(text)
    res = build_file(src, tmp_path)
    assert [f.name for f in res.files] == ["string.c"]
    assert not re.search(r"\bt[3-6]\b", toolchain.disassemble(res.elf))
