"""The one reader of assembly text (gen.emission.asmtext): the rules for labels,
comments, strings and preprocessor lines, and that mutate and patch both
read by them."""
from __future__ import annotations

from pathlib import Path

from copygen.gen.emission import asmtext
from copygen.mutate import insns
from tests.conftest import ROOT

SAMPLE = r'''#include <asm/asm.h>
#define TWO(x) \
	x; \
	x
	.macro fixup op reg addr lbl
100:
	\op \reg, \addr
	.endm
/*
	ld	a0, 0(a1)	looks like code, is a comment
 */
SYM_FUNC_START(copy)
.Lhead$1:	addi	a0, a0, 1	# bump .Lnot_a_ref
1:	ld	t0, 0(a1)	// the word
	bnez	t0, 1b		/* back */
	.asciz	"2f: /* no comment */ # none"
10:	fixup	sd, t0, 0(a0), 10f
	j	.Lhead$1
SYM_FUNC_END(copy)
'''


def _lines():
    return asmtext.code_lines(SAMPLE.splitlines())


def test_labels_named_numeric_and_with_dollar():
    labels = [(i, ln.label) for i, ln in enumerate(_lines()) if ln.label]
    assert labels == [(12, ".Lhead$1"), (13, "1"), (16, "10")]
    assert asmtext.named_labels(_lines()) == {".Lhead$1"}


def test_preprocessor_lines_and_their_continuations_hold_no_code():
    kinds = [ln.kind for ln in _lines()[:4]]
    assert kinds == ["preprocessor"] * 4
    assert all(ln.code == "" for ln in _lines()[:4])


def test_a_macro_body_is_no_code_of_the_file():
    body = _lines()[4:8]
    assert [ln.kind for ln in body] == ["macro"] * 4
    assert "100" not in asmtext.defined(_lines())


def test_comments_of_each_kind_are_removed_and_kept_as_written():
    lines = _lines()
    assert [ln.code for ln in lines[8:11]] == ["", "", ""]      # /* ... */ over three lines
    assert lines[12].code == "addi\ta0, a0, 1"
    assert lines[12].comment == "\t# bump .Lnot_a_ref"
    assert lines[13].comment == "\t// the word"
    assert lines[14].comment == "\t\t/* back */"


def test_a_comment_in_the_middle_of_a_line_leaves_the_code_around_it():
    line = asmtext.split_line("\tld /* first */ a0, 0(a1)")
    assert line.code.split() == ["ld", "a0,", "0(a1)"]
    assert line.comment == "/* first */"


def test_comment_markers_and_labels_inside_a_string_are_text():
    line = _lines()[15]
    assert line.code == '.asciz\t"2f: /* no comment */ # none"' and line.comment == ""
    assert asmtext.references(_lines(), 15, asmtext.defined(_lines())) == []


def test_numeric_references_resolve_as_the_assembler_does():
    lines = _lines()
    defs = asmtext.defined(lines)
    assert asmtext.references(lines, 14, defs) == [("1b", 13)]
    assert asmtext.references(lines, 16, defs) == [("10f", None)]   # no later 10:
    assert asmtext.references(lines, 17, defs) == [(".Lhead$1", 12)]
    assert asmtext.references(lines, 12, defs) == []                # the name is in a comment


def test_mutate_reads_instruction_lines_by_the_same_rules():
    found = [(i.no, i.op, i.args, i.fixup) for i in insns.insns(SAMPLE)]
    assert found == [(12, "addi", ("a0", "a0", "1"), False),
                     (13, "ld", ("t0", "0(a1)"), False),
                     (14, "bnez", ("t0", "1b"), False),
                     (16, "sd", ("t0", "0(a0)", "10f"), True),
                     (17, "j", (".Lhead$1",), False)]
    first = insns.insns(SAMPLE)[0]
    assert first.prefix == ".Lhead$1:\t" and first.comment == "\t# bump .Lnot_a_ref"
    assert first.render() == SAMPLE.splitlines()[12]


def test_one_module_reads_assembly_text():
    """mutate and patch import the reader; neither keeps its own."""
    assert not (ROOT / "mutate" / "asmtext.py").exists()
    assert not (ROOT / "patch" / "asmtext.py").exists()
    for user in ("mutate/insns.py", "mutate/edits.py", "patch/splice.py", "patch/kernelfile.py"):
        text = Path(ROOT / user).read_text()
        assert "copygen.gen.emission.asmtext import" in text or "copygen.gen.emission import asmtext" in text, user
