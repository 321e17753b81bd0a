"""The layer checker tests/test_layout.py runs: every module's imports,
read from its source, against the layers of docs/architecture.md and against what the
module's own docstring says it may import; and the import graph, drawn.

A module's imports are every `import`, `from ... import` (absolute or
relative, at the top or inside a function) and `importlib.import_module`
with a constant name.  A docstring's claim is its sentence that begins
"May import" (or "Imports"): project names in it (`gen`, `verify.*`,
`emu.elf`, `gen (build, toolchain)`, `copygen.output`, `every layer`) are
what the module may import; other words (click, the standard library) are
third-party or prose and are not checked; what follows "never" is a
prohibition.  A name there that is no module of the tree is an error too.

Role: a test helper, not a test file.  May import the standard library.
"""
from __future__ import annotations

import ast
import functools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

NAMESPACE = "copygen"
# layer -> the copygen layers it may import (docs/architecture.md, "What each layer may import");
# `errors` (copygen/errors.py) is the one error type of decision 6: it
# belongs to no pillar, imports nothing of the tree, and every layer raises it
ALLOWED = {
    "errors": {"errors"},
    "gen": {"gen", "errors"},
    "emu": {"emu", "errors"},
    "verify": {"verify", "emu", "errors"},
    "measure": {"measure", "emu", "errors"},
    "mutate": {"mutate", "gen", "errors"},
    "tune": {"tune", "gen", "emu", "measure", "verify", "errors"},
    "kernel": {"kernel", "gen", "errors"},
    "patch": {"patch", "gen", "emu", "measure", "verify", "kernel", "errors"},
}
# modules a layer may not import although it may import their layer: the
# verifier observes runs through emu's hooks, never through its cost model
FORBIDDEN = {"verify": ("emu.timing",)}
# the package data folders: they hold no code
DATA = {"grammar", "templates", "shim"}
# height of each layer in the import graph: an edge never goes up
RANK = {"version": 0, "data": 0, "errors": 0, "gen": 1, "emu": 1, "verify": 2, "measure": 2, "mutate": 2,
        "kernel": 2, "tune": 3, "patch": 3, "cli": 4}


def package_dirs(root: Path) -> dict[str, Path]:
    """Installed package name -> its folder in the tree (pyproject.toml)."""
    conf = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {name: root / d for name, d in conf["package-dir"].items()}


def modules(dirs: dict[str, Path]) -> dict[str, Path]:
    """Dotted module name -> source file, sub-packages included."""
    out = {}
    for pkg, folder in dirs.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if "__pycache__" in rel.parts:
                continue
            out[".".join([pkg, *parts])] = path
    return out


def layer_of(module: str) -> str:
    """gen, emu, ... for the pillars; errors for copygen.errors; cli for
    the rest of the command line's folder; version for the namespace's own
    __init__ (it holds __version__ and nothing else)."""
    parts = module.split(".")
    if module == NAMESPACE:
        return "version"
    if parts[1] in ALLOWED:
        return parts[1]
    return "data" if parts[1] in DATA else "cli"


def _resolve(name: str, known: set[str]) -> str | None:
    """The longest known module that `name` (a module, or a name inside one)
    is, or is in."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


@dataclass
class Import:
    line: int
    target: str                 # dotted name as written (absolute)
    module: str | None          # the module of the tree it resolves to


def _relative_base(module: str, is_package: bool, level: int) -> str:
    package = module if is_package else module.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return package


def imports(module: str, path: Path, known: set[str]) -> list[Import]:
    """Every import `path` makes of a name in the namespace or of a bare
    layer name (`import gen`, which bypasses the namespace)."""
    return _scan(module, path.name == "__init__.py", path.read_text(), frozenset(known))[1]


def docstring(module: str, path: Path) -> str | None:
    return _scan(module, path.name == "__init__.py", path.read_text(), frozenset())[0]


@functools.lru_cache(maxsize=None)
def _scan(module: str, is_package: bool, text: str, known: frozenset[str]):
    """(docstring, imports) of one module's text: a copy of the tree with
    one file changed parses only that file again."""
    tree = ast.parse(text)
    if not known:
        return ast.get_docstring(tree), []
    out = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _relative_base(module, is_package, node.level) + (f".{base}" if base else "")
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        elif (isinstance(node, ast.Call) and _is_import_module(node.func) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names = [node.args[0].value]
        for name in dict.fromkeys(names):
            top = name.split(".")[0]
            if top == NAMESPACE or top in ALLOWED or top in DATA:
                out.append(Import(node.lineno, name, _resolve(name, known)))
    return ast.get_docstring(tree), out


def _is_import_module(func) -> bool:
    return (isinstance(func, ast.Name) and func.id == "import_module") or \
        (isinstance(func, ast.Attribute) and func.attr == "import_module")


# ------------------------------------------------------------- docstrings

CLAIM = re.compile(r"\b(?:May import|may import|Imports:?)\s")
PROJECT = re.compile(r"^`?((?:copygen\.)?(?:" + "|".join(sorted(set(ALLOWED) | DATA | {"cli", "output", "inputs"}))
                     + r"|commands_\w+)(?:\.[\w*]+)*)`?$")


@dataclass
class Claim:
    patterns: list[str] = field(default_factory=list)   # module names; `x.*`: x and below
    unknown: list[str] = field(default_factory=list)    # names of no module


def _sentence(doc: str) -> str | None:
    """The claim's text: from "May import" to the full stop that ends it
    (parenthesised asides kept whole)."""
    text = " ".join(doc.split())
    m = CLAIM.search(text)
    if not m:
        return None
    depth, out = 0, []
    for i, ch in enumerate(text[m.end():], m.end()):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and ch == "." and (i + 1 == len(text) or text[i + 1] == " "):
            break
        out.append(ch)
    return "".join(out)


def _items(sentence: str) -> list[tuple[str, str]]:
    """(name, parenthesised aside) per listed item, up to a "never"."""
    out, depth, word, aside = [], 0, "", ""
    for ch in sentence + ",":
        if depth:
            depth += (ch == "(") - (ch == ")")
            aside += ch if depth else ""
            continue
        if ch == "(":
            depth = 1
        elif ch in ",;:":
            out.append((word.strip(), aside))
            word, aside = "", ""
        else:
            word += ch
    items = []
    for name, aside in out:
        parts = [p.strip() for p in re.split(r"\band\b", name)]
        for k, part in enumerate(parts):
            if part.startswith("never"):
                return items
            items.append((part, aside if k == len(parts) - 1 else ""))
    return items


def claim_of(doc: str | None, known: set[str]) -> Claim | None:
    """What a docstring says its module may import; None: it says nothing."""
    sentence = _sentence(doc or "")
    if sentence is None:
        return None
    claim = Claim()
    for word, aside in _items(sentence):
        word = re.sub(r"^(only|nothing outside|outside)\s+", "", word).removesuffix(" only").strip()
        if word == "every layer":
            claim.patterns.append(f"{NAMESPACE}.*")
            continue
        m = PROJECT.match(word)
        if not m:
            continue
        name = m.group(1)
        if not name.startswith(NAMESPACE + "."):
            name = f"{NAMESPACE}.{name}"
        wild = name.endswith(".*")
        name = name.removesuffix(".*")
        if name not in known:
            claim.unknown.append(m.group(1))
            continue
        subs = [s.strip() for s in re.split(r"[:;]", aside)[0].split(",")]
        if subs and all(f"{name}.{s}" in known for s in subs):
            claim.patterns += [f"{name}.{s}.*" for s in subs]
        else:
            claim.patterns.append(f"{name}.*" if wild or _is_package(name, known) else name)
    return claim


def _is_package(name: str, known: set[str]) -> bool:
    return any(k.startswith(name + ".") for k in known)


def allows(claim: Claim, module: str) -> bool:
    for p in claim.patterns:
        if p.endswith(".*") and (module == p[:-2] or module.startswith(p[:-1])):
            return True
        if module == p:
            return True
    return False


# ------------------------------------------------------------- the checks

def problems(root: Path) -> list[str]:
    """Every import that breaks a layer rule or its module's own claim,
    every claim that names no module, every module that claims nothing."""
    mods = modules(package_dirs(root))
    known = set(mods)
    out = []
    for mod, path in mods.items():
        rel = path.relative_to(root)
        claim = claim_of(docstring(mod, path), known)
        if claim is None:
            out.append(f"{rel}: its docstring does not say what it may import")
        else:
            out += [f"{rel}: its docstring names `{u}`, which is no module" for u in claim.unknown]
        for imp in imports(mod, path, known):
            why = _wrong(mod, imp, claim)
            if why:
                out.append(f"{rel}:{imp.line}: imports {imp.target}: {why}")
    return out


def _wrong(mod: str, imp: Import, claim: Claim | None) -> str | None:
    if imp.target.split(".")[0] != NAMESPACE:
        return "outside the copygen namespace"
    if imp.module is None:
        return "no such module"
    src, dst = layer_of(mod), layer_of(imp.module)
    if dst == "version":
        return None
    if src in ALLOWED and dst not in ALLOWED[src]:
        return f"layer {src} may not import layer {dst}"
    short = imp.module.removeprefix(NAMESPACE + ".")
    if any(short == f or short.startswith(f + ".") for f in FORBIDDEN.get(src, ())):
        return f"layer {src} may not import {short}"
    if src != "cli" and dst == "cli":
        return "nothing imports the command line"
    if claim is not None and not allows(claim, imp.module) and imp.module != mod:
        return "not in its docstring's \"may import\""
    return None


def graph(dirs: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of the tree it imports (the package itself,
    __version__'s home, left out: it imports nothing)."""
    mods = modules(dirs)
    known = set(mods)
    return {m: {i.module for i in imports(m, p, known) if i.module and i.module != NAMESPACE}
            for m, p in mods.items()}


def upward_edges(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    return [(a, b) for a, bs in g.items() for b in sorted(bs)
            if RANK[layer_of(b)] > RANK[layer_of(a)]]


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan),
    and modules that import themselves."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in g.get(v, ()):
                out.append(sorted(comp))
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def dot(g: dict[str, set[str]]) -> str:
    """The graph in Graphviz's language: one cluster per layer, top down."""
    lines = ["digraph copygen {", "  rankdir=TB; node [shape=box, fontsize=10];"]
    by_layer: dict[str, list[str]] = {}
    for m in g:
        by_layer.setdefault(layer_of(m), []).append(m)
    for layer, mods in sorted(by_layer.items(), key=lambda kv: -RANK[kv[0]]):
        lines.append(f'  subgraph "cluster_{layer}" {{ label="{layer}";')
        lines += [f'    "{m}";' for m in sorted(mods)]
        lines.append("  }")
    lines += [f'  "{a}" -> "{b}";' for a in sorted(g) for b in sorted(g[a])]
    return "\n".join(lines + ["}"]) + "\n"
