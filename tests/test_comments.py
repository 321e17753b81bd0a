"""Comments in verify/ say what the code does and why; measurements (seconds,
speed-ups, dates, what was tried) belong in CHANGELOG.md and bench/verify/results/ with the command
that reproduces them.  This reads every comment and docstring of verify/
(sub-packages too) and fails on the marks of a measurement log."""
from __future__ import annotations

import ast
import io
import re
import tokenize

import pytest

from tests.conftest import ROOT

# each: (what it catches, pattern); precise enough that none matches the
# domain's own words ("dst as it was at the call", "the bound tried first")
LOG = [
    ("a time", re.compile(r"\b\d+(?:\.\d+)?(?:\s?-\s?\d+(?:\.\d+)?)?\s?(?:s|ms|min|seconds|minutes)\b(?!\w)")),
    ("a speed-up", re.compile(r"\b\d+(?:\.\d+)?\s?(?:x|%)\s+(?:slower|faster|quicker)\b")),
    ("a before -> after figure", re.compile(r"\b\d+(?:\.\d+)?\s?->\s?\d+(?:\.\d+)?\s?(?:s|ms|%)?\b(?=\W*$|[;,).])")),
    ("a date", re.compile(r"\b(?:19|20)\d\d-\d\d-\d\d\b")),
    ("a diary", re.compile(r"\b(?:as they were|we tried|I tried|was tried|were tried|"
                           r"this session|last session|previous session|used to be)\b", re.I)),
]


def _texts(path):
    """(line, text) of every comment and docstring of one file."""
    source = path.read_text()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield node.body[0].lineno, doc


def log_lines(folder):
    out = []
    for path in sorted(folder.rglob("*.py")):
        for line, text in _texts(path):
            for what, pattern in LOG:
                m = pattern.search(" ".join(text.split()))
                if m:
                    out.append(f"{path.relative_to(folder.parent)}:{line}: {what}: {m.group(0)!r}")
    return out


def test_verify_comments_describe_the_code_not_its_measurements():
    assert log_lines(ROOT / "verify") == []


@pytest.mark.parametrize("text, caught", [
    ("# c910fast 200 s as they were, 4 s so", True),
    ("# about 4x faster than a fresh solver", True),
    ("# 1-13 s per query", True),
    ("# Houdini 64 -> 53 s", True),
    ("# measured on 2026-12-03", True),
    ("# dst as it was at the call; the strongest bound is tried first", False),
    ("# a budget of RELAXED_MS milliseconds; 64 bytes reach the word loops", False),
    ("# B2s: no load outside [src, src+n)", False),
])
def test_the_check_tells_a_log_from_a_description(tmp_path, text, caught):
    (tmp_path / "verify").mkdir()
    (tmp_path / "verify" / "m.py").write_text(f'"""A module."""\n{text}\nX = 1\n')
    assert bool(log_lines(tmp_path / "verify")) == caught
