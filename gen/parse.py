"""Front end: `.copy` text -> raw items with locations (Lark, LALR).

Role: run the grammar in grammar/copy.lark, turn Lark's syntax errors into
CopygenError with file:line:col, a caret and what was expected, and turn the
tree into plain records (`Item`, `Setting`) that gen.validate checks.
May import lark, gen.errors.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from copygen.gen.errors import CopygenError, Loc
from copygen.gen.resources import grammar_file



@dataclass(frozen=True)
class Setting:
    """One `key value...` line inside a block, e.g. `words unroll 8 schedule x`."""

    key: str
    values: tuple
    loc: Loc


@dataclass(frozen=True)
class Item:
    """A top-level block or a string function: kind, names, settings."""

    kind: str              # target | copy_user | clear_user | string | sweep | memcpy ...
    name: str | None
    ref: str | None        # the `for NAME` part
    settings: tuple        # of Setting or nested Item
    loc: Loc
    ref_loc: Loc | None = None


@lru_cache(maxsize=1)
def parser() -> Lark:
    return Lark(grammar_file().read_text(), parser="lalr", propagate_positions=True,
                maybe_placeholders=False)


def _loc(file: str, tok) -> Loc:
    return Loc(file, getattr(tok, "line", 0) or 0, getattr(tok, "column", 0) or 0)


def _value(tok):
    if isinstance(tok, Token) and tok.type == "INT":
        return int(tok, 0)
    return str(tok)


class _ToItems(Transformer):
    """Tree -> Item/Setting.  Method names equal the grammar's rule names."""

    def __init__(self, file: str):
        super().__init__()
        self.file = file

    def _setting(self, key, meta, children):
        return Setting(key, tuple(_value(c) if isinstance(c, Token) else c for c in children),
                       Loc(self.file, meta.line, meta.column))

    def _block(self, kind, meta, children, named=True):
        toks = [c for c in children if isinstance(c, Token)]
        rest = tuple(c for c in children if not isinstance(c, Token))
        name = str(toks[0]) if named and toks else None
        ref = str(toks[1]) if named and len(toks) > 1 else None
        ref_loc = _loc(self.file, toks[1]) if named and len(toks) > 1 else None
        return Item(kind, name, ref, rest, Loc(self.file, meta.line, meta.column), ref_loc)

    @v_args(meta=True)
    def start(self, meta, children):
        return list(children)

    @v_args(meta=True)
    def int_list(self, meta, children):
        return tuple(int(c, 0) for c in children)

    @v_args(meta=True)
    def name_list(self, meta, children):
        return tuple(str(c) for c in children)


def _add_settings(*names):
    for key in names:
        def method(self, meta, children, _key=key):
            return self._setting(_key, meta, children)
        setattr(_ToItems, key, v_args(meta=True)(method))


def _add_blocks(*names, named=True):
    for key in names:
        def method(self, meta, children, _key=key, _named=named):
            return self._block(_key, meta, children, _named)
        setattr(_ToItems, key, v_args(meta=True)(method))


_add_settings("xlen", "misaligned", "profile", "small", "align", "words", "shift",
              "tail", "fault", "forward", "backward",
              "sweep_small", "sweep_words", "sweep_shift")
_add_blocks("target", "copy_user", "clear_user", "string_block", "sweep")
_add_blocks("memcpy", "memmove", "memset", named=False)


def _describe_expected(names) -> str:
    terms = {t.name: t for t in parser().terminals}
    shown = []
    for name in sorted(set(names)):
        term = terms.get(name)
        if term is None:
            continue
        pat = term.pattern
        if pat.type == "str":
            shown.append(f"'{pat.value}'")
        elif name == "NAME":
            shown.append("a name")
        elif name == "INT":
            shown.append("a number")
        elif "|" in pat.value and all(p.replace('"', "").isidentifier()
                                       for p in pat.value.replace("(?:", "").rstrip(")").split("|")):
            shown.append(" | ".join(pat.value.replace("(?:", "").rstrip(")").split("|")))
        else:
            shown.append(name.lower())
    if not shown:
        return ""
    if len(shown) > 8:
        shown = shown[:8] + ["..."]
    return "expected " + ", ".join(shown)


def syntax_error(file: str, text: str, err: UnexpectedInput) -> CopygenError:
    line, col = err.line, err.column
    lines = text.splitlines()
    at_end = isinstance(err, UnexpectedToken) and err.token.type == "$END"
    if isinstance(err, UnexpectedEOF) or at_end or line in (None, -1):
        line = max(len(lines), 1)
        col = len(lines[-1]) + 1 if lines else 1
        found = "end of file"
        expected = _describe_expected(err.expected)
    elif isinstance(err, UnexpectedToken):
        found = "end of file" if err.token.type == "$END" else f"'{err.token}'"
        expected = _describe_expected(err.expected)
    else:
        assert isinstance(err, UnexpectedCharacters)
        found = f"character {text[err.pos_in_stream]!r}"
        expected = _describe_expected(err.allowed or ())
    line_text = lines[line - 1] if 0 < line <= len(lines) else ""
    msg = f"syntax error: unexpected {found}"
    return CopygenError(msg, Loc(file, line, col), hint=expected or None, line_text=line_text)


def parse_text(text: str, file: str = "<string>") -> list[Item]:
    """Parse `.copy` source; raise CopygenError on a syntax error."""
    try:
        tree = parser().parse(text)
    except UnexpectedInput as err:
        raise syntax_error(file, text, err) from None
    return _ToItems(file).transform(tree)


def read_source(path: str | Path) -> str:
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CopygenError(f"no such file: {p}", Loc(str(p))) from None
    except IsADirectoryError:
        raise CopygenError(f"is a directory, not a .copy file: {p}", Loc(str(p))) from None
    except UnicodeDecodeError as err:
        raise CopygenError(f"not UTF-8 text (byte {err.start})", Loc(str(p))) from None
    except OSError as err:
        raise CopygenError(f"cannot read: {err.strerror}", Loc(str(p))) from None
