"""The `vector` phase of copy_user: parsed, validated with located errors,
and written back by gen.unparse."""
from __future__ import annotations

import re

import pytest

from copygen.gen.errors import CopygenError
from copygen.gen.parse import parse_text
from copygen.gen.unparse import file_text
from copygen.gen.validate import load_text

SLOW = "target x60 {\n    xlen 64\n    misaligned slow\n}\n"
FAST = SLOW.replace("slow", "fast")
SCALAR = "    small below 71\n    words unroll 8\n    tail bytes\n    fault exact\n"


def _copy(line: str, target: str = SLOW, kind: str = "copy_user") -> str:
    return f"{target}{kind} cu for x60 {{\n{SCALAR}    {line}\n}}\n"


def _error(text: str) -> CopygenError:
    with pytest.raises(CopygenError) as err:
        load_text(text, "v.copy")
    return err.value


@pytest.mark.parametrize("lmul", [1, 2, 4, 8])
@pytest.mark.parametrize("loads", ["plain", "ff"])
def test_every_lmul_and_load_kind_is_accepted(lmul, loads):
    st = load_text(_copy(f"vector e8 m{lmul} above 768 loads {loads} vlen 256..512"))
    v = st.copy_user.vector
    assert (v.sew, v.lmul, v.threshold, v.loads, v.vlens) == (8, lmul, 768, loads, (256, 512))
    assert v.vlmax(256) == lmul * 32
    assert "__asm_vector_usercopy" in st.routines()


def test_default_vlen_range_is_what_the_emulator_models():
    assert load_text(_copy("vector e8 m8 above 768 loads plain")).copy_user.vector.vlens == \
        (128, 256, 512, 1024)


BAD = [
    ("vector e16 m8 above 768 loads plain", SLOW, "misaligned slow", "e8"),
    ("vector e32 m4 above 768 loads plain", FAST, "not generated yet", "e8"),
    ("vector e8 m8 above 16 loads plain", SLOW, "below the scalar routine's 71", "above 768"),
    ("vector e8 m8 above 2000000 loads plain", SLOW, "larger than 1 MiB", "768"),
    ("vector e8 m8 above 768 loads plain vlen 96..256", SLOW, "not a power of two", "128"),
    ("vector e8 m8 above 768 loads plain vlen 512..256", SLOW, "is empty", "256..512"),
    ("vector e8 m8 above 768 loads plain vlen 128..4096", SLOW, "above 1024", "128..1024"),
]


@pytest.mark.parametrize("line,target,message,hint", BAD, ids=[b[2] for b in BAD])
def test_what_the_hardware_or_kernel_rules_out_is_refused_at_its_line(line, target, message,
                                                                      hint):
    err = _error(_copy(line, target))
    assert message in err.message and hint in (err.hint or "")
    assert (err.loc.file, err.loc.line, err.loc.col) == ("v.copy", 10, 5)


def test_vector_only_in_copy_user():
    err = _error(_copy("vector e8 m8 above 768 loads plain", kind="clear_user")
                 .replace("    fault exact\n", "    fault exact\n", 1))
    assert "applies to copy_user" in err.message and err.loc.line == 10


def test_syntax_errors_name_the_choices():
    err = _error(_copy("vector e8 m3 above 768 loads plain"))
    assert "m1 | m2 | m4 | m8" in (err.hint or "") and err.loc.line == 10


def test_a_sweep_point_below_the_vector_threshold_is_refused():
    text = _copy("vector e8 m8 above 100 loads plain") + \
        "sweep s for cu {\n    small below [200, 300]\n}\n"
    err = _error(text)
    assert "below the scalar routine's" in err.message


@pytest.mark.parametrize("line", ["vector e8 m8 above 768 loads plain",
                                  "vector e8 m2 above 1024 loads ff vlen 256..256"])
def test_unparse_round_trips(line):
    items = parse_text(_copy(line))
    again = parse_text(file_text(items))
    assert again[1].settings[-1].values == items[1].settings[-1].values
    a, b = load_text(file_text(items)).copy_user, load_text(_copy(line)).copy_user
    assert (a.vector, a.phases) == (b.vector, b.phases)
