"""Sweep axes over a copy_user routine's `vector` line (threshold, LMUL,
plain or ff loads): they parse, expand into variants that build as written,
round-trip through gen.front.unparse, and bad values are refused at their line."""
from __future__ import annotations

import pytest

from copygen.errors import CopygenError
from copygen.gen.front.parse import parse_text
from copygen.gen.front.unparse import file_text
from copygen.gen.front.validate import load_text
from copygen.gen.front.variants import sweep_space

HEAD = ("target x60 {\n    xlen 64\n    misaligned slow\n}\n"
        "copy_user cu for x60 {\n    small below 71\n    words unroll 8\n    tail bytes\n"
        "    fault exact\n    vector e8 m8 above 768 loads plain\n}\n")
AXES = ("sweep v for cu {\n    vector above [256, 768, 4096]\n    vector lmul [m2, m8]\n"
        "    vector loads [plain, ff]\n}\n")


def _write(tmp_path, text: str):
    path = tmp_path / "v.copy"
    path.write_text(text)
    return path


def test_vector_axes_expand_into_variants(tmp_path):
    space = sweep_space(str(_write(tmp_path, HEAD + AXES)))
    assert len(space.variants) == 3 * 2 * 2 and not space.pruned
    seen = set()
    for var in space.variants:
        v = load_text(var.text).copy_user.vector
        assert (v.sew, v.vlen_min, v.vlen_max) == (8, 128, 1024)   # knobs not swept stay
        seen.add((v.threshold, v.lmul, v.loads))
        assert var.label.startswith(f"vector above {v.threshold}, vector lmul m{v.lmul}")
    assert seen == {(t, m, ld) for t in (256, 768, 4096) for m in (2, 8) for ld in ("plain", "ff")}


def test_vector_axes_round_trip_through_unparse():
    items = parse_text(HEAD + AXES)
    again = parse_text(file_text(items))
    assert [s.values for s in again[2].settings] == [s.values for s in items[2].settings]


def test_a_threshold_no_point_can_use_is_an_error_at_the_sweep():
    text = HEAD + "sweep v for cu {\n    vector above [16, 768]\n}\n"
    with pytest.raises(CopygenError) as err:
        load_text(text, "v.copy")
    assert "vector above 16" in err.value.message and "below the scalar routine's" in err.value.message
    assert err.value.loc.line == 12


def test_points_invalid_only_together_are_pruned(tmp_path):
    """`small below 512` with `vector above 256` is refused, the other three
    combinations are tuned."""
    text = HEAD + "sweep v for cu {\n    small below [71, 512]\n    vector above [256, 768]\n}\n"
    space = sweep_space(str(_write(tmp_path, text)))
    assert len(space.variants) == 3
    assert [label for label, _ in space.pruned] == ["small below 512, vector above 256"]


def test_a_vector_axis_needs_the_routines_vector_line():
    text = HEAD.replace("    vector e8 m8 above 768 loads plain\n", "") + \
        "sweep v for cu {\n    small below [71]\n    vector lmul [m1, m4]\n}\n"
    with pytest.raises(CopygenError) as err:
        load_text(text, "v.copy")
    assert "no `vector` line" in err.value.message and (err.value.loc.line, err.value.loc.col) == (13, 5)


def test_syntax_of_a_vector_axis_names_the_choices():
    with pytest.raises(CopygenError) as err:
        load_text(HEAD + "sweep v for cu {\n    vector lmul [m3]\n}\n", "v.copy")
    assert "m1 | m2 | m4 | m8" in (err.value.hint or "")
