"""The layers import downward only (DESIGN.md, README "Layout"): read from
the source of every module, so a docstring's "may import" stays true."""
from __future__ import annotations

import ast

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.gen import build, toolchain
from tests.conftest import ROOT

# layer -> the copygen layers it may import
ALLOWED = {
    "gen": {"gen"},
    "emu": {"emu"},
    "verify": {"verify", "emu", "gen"},
    "measure": {"measure", "emu"},
    "mutate": {"mutate", "gen"},
    "tune": {"tune", "gen", "emu", "measure", "verify"},
    "kernel": {"kernel", "gen"},
    "patch": {"patch", "gen", "emu", "measure", "verify", "kernel"},
}
COMMAND_LINE = {"cli", "output"} | {p.stem for p in (ROOT / "copygen").glob("commands_*.py")}


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "copygen" and len(parts) > 1:
                yield parts[1]
            elif parts[0] in ALLOWED:
                yield f"bare {parts[0]}"


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_what_it_may(layer):
    for path in sorted((ROOT / layer).glob("*.py")):
        used = set(_imports(path)) - {"__version__"}
        bare = {u for u in used if u.startswith("bare ")}
        assert not bare, f"{path.name} imports {bare} outside the copygen namespace"
        wrong = used - ALLOWED[layer]
        assert not wrong, f"{layer}/{path.name} imports {sorted(wrong)}"


def test_nothing_outside_the_command_line_imports_it():
    for layer in ALLOWED:
        for path in (ROOT / layer).glob("*.py"):
            assert not set(_imports(path)) & COMMAND_LINE, path


def test_bench_reuses_a_cached_build(tmp_path, monkeypatch):
    args = ["bench", str(ROOT / "examples" / "kernel2021.copy"), "--sizes", "64", "--align", "0:0",
            "--routine", "clear_user", "--build-cache", str(tmp_path), "--json"]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    calls = []
    monkeypatch.setattr(toolchain, "run", lambda *a, **k: calls.append(a))
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0 and calls == []
    assert len(list(tmp_path.iterdir())) == 1
    # a different strategy is a different entry
    monkeypatch.undo()
    other = CliRunner().invoke(main, args[:1] + [str(ROOT / "examples" / "pre2021.copy")] + args[2:])
    assert other.exit_code == 0 and len(list(tmp_path.iterdir())) == 2
    assert build.content_key is not None


def test_rank_warns_when_a_fast_misaligned_target_meets_a_trapping_core():
    r = CliRunner().invoke(main, ["rank", str(ROOT / "examples" / "c910fast.copy"),
                                                  "--profile", "u74", "--routine", "memcpy",
                                                  "--workload", "uniform:0-64"])
    assert r.exit_code == 0, r.output
    assert "misaligned fast" in r.stderr and "u74" in r.stderr
    quiet = CliRunner().invoke(main, ["rank", str(ROOT / "examples" / "c910fast.copy"),
                                                      "--profile", "c910", "--routine", "memcpy",
                                                      "--workload", "uniform:0-64"])
    assert quiet.exit_code == 0 and "misaligned" not in quiet.stderr
