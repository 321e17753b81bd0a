"""Every file the documentation and the package's comments cite is in the
repository, nothing cites the private notes the design was once kept in,
and the guides explain rather than keep a diary.

Scanned for references: docs/*.md, README.md, CHANGELOG.md, and the
comments and docstrings of the installed package's modules (the folders
pyproject.toml maps).  A reference is

* a path whose first part is a top-level folder of the repository
  (`docs/x.md`, `bench/verify/verify_speed.py`, `tests/gen/test_x.py`,
  `examples/x.copy`, `emu/profiles/*.toml`, `tests/kernel_style/{a,b}.S`):
  it must exist from the repository's root (a glob must match something,
  braces expand);
* in a page, a Markdown link target that is not a URL: it must exist from
  the page's folder;
* a bare `name.md`: it must exist at the root or beside the referring file
  (the names of files a command writes, GENERATED, excepted).

Paths under other first parts (a kernel tree's `arch/riscv/lib/uaccess.S`,
`include/linux/uaccess.h`, a placeholder `OUT/<name>/`) are not the
repository's and are not checked.  A guide (docs/*.md) has no line with a
date, a commit hash, the word "session" or an issue number: the record of
runs is CHANGELOG.md and bench/<subject>/results/."""
from __future__ import annotations

import ast
import functools
import io
import itertools
import re
import tokenize
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

EXTENSIONS = "md|py|copy|toml|S|c|h|j2|lark|json|csv|ld|png|txt|sh"
PART = r"(?:[\w*-]|\{[\w.,-]+\}|\.(?!\.))+"
PATH = re.compile(rf"(?<![\w./~$<{{:@-])((?:{PART}/)+{PART}\.(?:{EXTENSIONS}))(?![\w/-])")
BARE_MD = re.compile(r"(?<![\w./-])([\w-]+\.md)\b(?!/)")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
# the names of files commands write, cited by name only
GENERATED = {"report.md"}
# folders of a checkout that are scratch, not the repository
SCRATCH = {"build", "dist", "__pycache__"}
# written so that this file does not name them itself
PRIVATE = re.compile(r"\b(?:DESIGN|DOMAIN|STYLE)\.md\b|\.\./share[d]/")
DIARY = [
    ("a date", re.compile(r"\b20\d\d-\d\d-\d\d\b")),
    ("a commit hash", re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")),
    # the word, not the module tune.session (a name in backticks or dotted)
    ("a session", re.compile(r"(?<![\w.`])sessions?(?![\w.`])", re.I)),
    ("an issue number", re.compile(r"\bissues?\s*#?\d+", re.I)),
]
URL = re.compile(r"<?[a-z]+://[^\s>)]+>?")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".j2", ".copy", ".lark", ".S", ".c", ".h", ".sh", ".json", ".csv"}


@functools.lru_cache(maxsize=None)
def top_level(root: Path) -> set[str]:
    return {p.name for p in root.iterdir()
            if p.is_dir() and not p.name.startswith(".") and p.name not in SCRATCH
            and not p.name.endswith(".egg-info")}


def package_files(root: Path) -> list[Path]:
    """The installed package's modules: every .py under the folders
    pyproject.toml maps to the `copygen` namespace."""
    conf = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = sorted({root / d for d in conf["package-dir"].values()})
    return sorted(p for d in folders for p in d.rglob("*.py") if "__pycache__" not in p.parts)


def page_files(root: Path) -> list[Path]:
    return sorted((root / "docs").glob("*.md")) + [p for p in (root / "README.md", root / "CHANGELOG.md")
                                                   if p.is_file()]


def comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    source = path.read_text()
    out = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
           if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                first = node.body[0].lineno
                out += [(first + i, line) for i, line in enumerate(doc.splitlines())]
    return sorted(out)


def _expand(path: str) -> list[str]:
    """`a/{b,c}.S` -> `a/b.S`, `a/c.S`."""
    parts = re.split(r"(\{[^}]*\})", path)
    choices = [p[1:-1].split(",") if p.startswith("{") else [p] for p in parts]
    return ["".join(c) for c in itertools.product(*choices)]


def _exists(base: Path, path: str) -> bool:
    for one in _expand(path):
        hits = list(base.glob(one)) if "*" in one else [base / one] if (base / one).exists() else []
        if not hits:
            return False
    return True


def broken(root: Path, referrer: Path, text: str, markdown: bool) -> list[str]:
    """The references in `text` (one line) that name no file of the repository,
    each once."""
    tops, out = frozenset(top_level(root)), []
    for m in PATH.finditer(text):
        path = m.group(1)
        if path.split("/", 1)[0] in tops and not _exists(root, path):
            out.append(path)
    for m in BARE_MD.finditer(text):
        name = m.group(1)
        if name not in GENERATED and not (root / name).exists() and not (referrer.parent / name).exists():
            out.append(name)
    if markdown:
        for m in LINK.finditer(text):
            target = m.group(1)
            if not re.match(r"[a-z]+:", target) and not _exists(referrer.parent, target):
                out.append(target)
    return list(dict.fromkeys(out))


def problems(root: Path) -> list[str]:
    """file:line: what is wrong, for every reference to a missing file."""
    out = []
    for page in page_files(root):
        for n, line in enumerate(page.read_text().splitlines(), 1):
            out += [f"{page.relative_to(root)}:{n}: {ref}" for ref in broken(root, page, line, True)]
    for module in package_files(root):
        for n, line in comments_and_docstrings(module):
            out += [f"{module.relative_to(root)}:{n}: {ref}" for ref in broken(root, module, line, False)]
    return out


def private_notes(root: Path) -> list[str]:
    """file:line of every mention of the private design notes, in any text
    file of the repository."""
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if (path.suffix not in TEXT_SUFFIXES or not path.is_file() or rel.parts[0] in SCRATCH
                or any(p.startswith(".") or p.endswith(".egg-info") or p == "__pycache__"
                       for p in rel.parts)):
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if PRIVATE.search(line):
                out.append(f"{rel}:{n}: {line.strip()}")
    return out


def diary_lines(root: Path) -> list[str]:
    """file:line: what, for every line of a guide that reads like a log (a
    URL is a citation of someone else's source, left out)."""
    out = []
    for guide in sorted((root / "docs").glob("*.md")):
        for n, line in enumerate(guide.read_text().splitlines(), 1):
            line = URL.sub("", line)
            for what, pattern in DIARY:
                m = pattern.search(line)
                if m:
                    out.append(f"{guide.relative_to(root)}:{n}: {what}: {m.group(0)!r}")
    return out


# ------------------------------------------------------------- the repository

def test_every_cited_file_is_in_the_repository():
    assert problems(ROOT) == []


def test_nothing_cites_the_private_design_notes():
    assert private_notes(ROOT) == []


def test_the_guides_hold_no_dates_hashes_sessions_or_issue_numbers():
    assert diary_lines(ROOT) == []


# ------------------------------------------------------------- the checks themselves

@pytest.fixture
def repo(tmp_path):
    """A small repository: a package folder, docs, examples, a results file."""
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools.package-dir]\n"copygen.pkg" = "pkg"\n')
    for rel in ("pkg/__init__.py", "examples/a.copy", "bench/x/results/r.json", "docs/guide.md",
                "tests/kernel_style/one.S", "tests/kernel_style/two.S", "README.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "pkg/__init__.py").write_text('"""The package (docs/guide.md)."""\n')
    (tmp_path / "docs/guide.md").write_text(
        "# A guide\n\nBuild `examples/a.copy`; figures in bench/x/results/r.json and "
        "bench/x/results/*.json; fixtures `tests/kernel_style/{one,two}.S`; the kernel's "
        "arch/riscv/lib/uaccess.S and include/linux/uaccess.h; see [the README](../README.md) "
        "and README.md; the tuner writes report.md.\n")
    return tmp_path


def test_a_repository_with_good_references_has_no_problem(repo):
    assert problems(repo) == []


@pytest.mark.parametrize("line, bad", [
    ("See docs/missing.md.", "docs/missing.md"),
    ("Figures: bench/x/results/gone.json", "bench/x/results/gone.json"),
    ("the fixtures tests/kernel_style/{one,three}.S", "tests/kernel_style/{one,three}.S"),
    ("every bench/x/results/*.csv", "bench/x/results/*.csv"),
    ("a [link](other.md) to nowhere", "other.md"),
    ("read verifier.md first", "verifier.md"),
])
def test_one_broken_reference_in_a_page_is_found(repo, line, bad):
    (repo / "docs" / "planted.md").write_text(f"# Planted\n\n{line}\n")
    assert problems(repo) == [f"docs/planted.md:3: {bad}"]


def test_a_broken_reference_in_a_docstring_or_comment_is_found(repo):
    (repo / "pkg" / "mod.py").write_text('"""Role: see docs/nowhere.md."""\n# and examples/b.copy\nX = 1\n')
    assert problems(repo) == ["pkg/mod.py:1: docs/nowhere.md", "pkg/mod.py:2: examples/b.copy"]


def test_code_strings_and_kernel_paths_are_not_references(repo):
    (repo / "pkg" / "mod.py").write_text('"""Reads arch/riscv/lib/memcpy.S of a tree."""\n'
                                         'PATH = "docs/not_a_reference.md"\n')
    assert problems(repo) == []


def test_the_private_notes_are_found_anywhere(repo):
    assert private_notes(repo) == []
    notes, shared = "DOM" + "AIN.md", "../sha" + "red/docs"
    (repo / "examples" / "a.copy").write_text(f"# the phases of {notes} section 2\n")
    (repo / "pkg" / "mod.py").write_text(f"# see {shared}/notes\n")
    assert private_notes(repo) == [f"examples/a.copy:1: # the phases of {notes} section 2",
                                   f"pkg/mod.py:1: # see {shared}/notes"]


@pytest.mark.parametrize("line, what", [
    ("Measured on 2026-12-04, idle.", "a date"),
    ("since f8aedf7 the proof is faster", "a commit hash"),
    ("in the next session", "a session"),
    ("Issue 34 makes vectors a strategy.", "an issue number"),
])
def test_a_diary_line_in_a_guide_is_found(repo, line, what):
    assert diary_lines(repo) == []
    (repo / "docs" / "guide.md").write_text(f"# A guide\n\n{line}\n")
    (found,) = diary_lines(repo)
    assert found.startswith(f"docs/guide.md:3: {what}:")


def test_figures_addresses_and_cited_urls_are_not_hashes(repo):
    (repo / "docs" / "guide.md").write_text(
        "2138176 runs; .text at 0x80200000; returns 0x4e3d401000; the module `tune.session`;\n"
        "<https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/commit/?id=cc4c07c89aad>\n")
    assert diary_lines(repo) == []
