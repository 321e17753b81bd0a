"""out/ holds exactly what the examples generate today (regenerate with
`copygen build examples/*.copy -o out`)."""
from __future__ import annotations

from pathlib import Path

import pytest

from copygen.gen.build import emit_sources
from copygen.gen.front.validate import load_file
from tests.conftest import EXAMPLES, ROOT


def _text_files(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): p.read_text() for p in sorted(d.rglob("*"))
            if p.is_file() and p.suffix not in (".o", ".elf")}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_out_is_fresh(path, tmp_path):
    st = load_file(path)
    fresh = tmp_path / st.stem
    emit_sources(st, fresh)
    committed = ROOT / "out" / st.stem
    assert committed.is_dir(), f"out/{st.stem} missing: run copygen build examples/*.copy"
    want, have = _text_files(fresh), _text_files(committed)
    assert sorted(have) == sorted(want), "out/ lists different files"
    for name in want:
        assert have[name] == want[name], (
            f"out/{st.stem}/{name} is stale: run `copygen build examples/*.copy -o out`")


def test_no_stray_output_directories():
    stems = {p.stem for p in EXAMPLES}
    dirs = {d.name for d in (ROOT / "out").iterdir() if d.is_dir()}
    assert dirs == stems
