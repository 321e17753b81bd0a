"""Front end: `.copy` text -> raw items with locations (Lark, LALR).

Role: read a source file (only a regular file of at most MAX_SOURCE_BYTES;
a leading UTF-8 byte-order mark is dropped), run the grammar in
grammar/copy.lark, turn Lark's syntax errors into CopygenError with
file:line:col, a caret and what was expected, and turn the tree into plain
records (`Item`, `Setting`) that gen.front.validate checks.
May import lark, copygen.errors, gen.resources.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import (UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken,
                             VisitError)

from copygen.errors import CopygenError, Loc, clip
from copygen.gen.resources import grammar_file

# A strategy is a few dozen lines; a bigger source is a mistake (a wrong path,
# a device), refused before it is read into memory.
MAX_SOURCE_BYTES = 1 << 20
# The language takes no number above 1 MiB; a longer literal is refused
# before int() sees it (past 4300 digits int() raises ValueError).
MAX_INT_DIGITS = 20
BOM = "\ufeff"


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


def _value(tok, file: str):
    if isinstance(tok, Token) and tok.type == "INT":
        if len(tok) > MAX_INT_DIGITS:
            raise CopygenError(f"number {clip(tok, 24)} is too large", _loc(file, tok),
                               hint=f"numbers here have at most {MAX_INT_DIGITS} digits")
        return int(tok, 0)
    return str(tok)


class _ToItems(Transformer):
    """Tree -> Item/Setting.  Method names equal the grammar's rule names."""

    def __init__(self, file: str):
        super().__init__()
        self.file = file

    def _setting(self, key, meta, children):
        return Setting(key, tuple(_value(c, self.file) if isinstance(c, Token) else c
                                  for c in children),
                       Loc(self.file, meta.line, meta.column))

    def _block(self, kind, meta, children, named=True):
        toks = [c for c in children if isinstance(c, Token)]
        rest = tuple(c for c in children if not isinstance(c, Token))
        name = str(toks[0]) if named and toks else None
        ref = str(toks[1]) if named and len(toks) > 1 else None
        ref_loc = _loc(self.file, toks[1]) if named and len(toks) > 1 else None
        return Item(kind, name, ref, rest, Loc(self.file, meta.line, meta.column), ref_loc)

    @v_args(meta=True)
    def sweep(self, meta, children):
        """`sweep NAME for LIB.FN`: the ref is `LIB.FN`, located at LIB."""
        item = self._block("sweep", meta, children)
        toks = [c for c in children if isinstance(c, Token)]
        if len(toks) > 2:
            item = replace(item, ref=f"{toks[1]}.{toks[2]}")
        return item

    @v_args(meta=True)
    def start(self, meta, children):
        return list(children)

    @v_args(meta=True)
    def int_list(self, meta, children):
        return tuple(_value(c, self.file) for c in children)

    @v_args(meta=True)
    def unroll_list(self, meta, children):
        return tuple(_value(c, self.file) for c in children)

    @v_args(meta=True)
    def vector(self, meta, children):
        """(SEW, LMUL, above, loads or None, [vlen range]): each knob keeps its
        position whether or not `loads` is written (a clear names none)."""
        s = self._setting("vector", meta, children)
        loads = [c for c in children if isinstance(c, Token) and c.type == "VLOADS"]
        if loads:
            return s
        return replace(s, values=(*s.values[:3], None, *s.values[3:]))

    @v_args(meta=True)
    def vlen_range(self, meta, children):
        return tuple(_value(c, self.file) for c in children)

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


_add_settings("xlen", "misaligned", "profile", "small", "bytes", "align", "words", "shift",
              "tail", "fault", "forward", "backward",
              "sweep_small", "sweep_words", "sweep_shift")
_add_settings("sweep_align", "sweep_tail", "sweep_fault", "then_words", "then_shift",
              "sweep_then_words", "sweep_then_shift", "ends", "sweep_ends",
              "inline", "sweep_inline", "expect", "sweep_expect")
_add_settings("sweep_vector_above", "sweep_vector_lmul", "sweep_vector_loads", "sweep_vector_sew",
              "form", "reserve", "jump")
_add_blocks("target", "copy_user", "clear_user", "string_block")
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
        found = "end of file" if err.token.type == "$END" else f"'{clip(err.token, 40)}'"
        expected = _describe_expected(err.expected)
    else:
        assert isinstance(err, UnexpectedCharacters)
        found = f"character {text[err.pos_in_stream]!r}"
        expected = _describe_expected(err.allowed or ())
    line_text = lines[line - 1] if 0 < line <= len(lines) else ""
    msg = f"syntax error: unexpected {found}"
    return CopygenError(msg, Loc(file, line, col), hint=expected or None, line_text=line_text)


def parse_text(text: str, file: str = "<string>") -> list[Item]:
    """Parse `.copy` source; raise CopygenError on a syntax error.

    A leading byte-order mark is dropped: editors hide it, so columns on the
    first line count from the first visible character, as they show it."""
    text = text.removeprefix(BOM)
    try:
        tree = parser().parse(text)
    except UnexpectedInput as err:
        raise syntax_error(file, text, err) from None
    try:
        return _ToItems(file).transform(tree)
    except VisitError as err:
        if isinstance(err.orig_exc, CopygenError):
            raise err.orig_exc from None
        raise


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"))


def _refuse_unless_regular(p: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        what = next((name for test, name in _KINDS if test(mode)), "a special file")
        raise CopygenError(f"{p} is {what}, not a regular file", Loc(str(p)),
                           hint="give the path of a file")


def require_regular_file(path: str | Path) -> os.stat_result:
    """Refuse a path that is missing or not a regular file (a device, a FIFO,
    a directory) without opening it: reading /dev/zero never ends, and
    opening a FIFO waits for a writer.  Returns the file's stat."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise CopygenError(f"no such file: {p}", Loc(str(p))) from None
    except OSError as err:
        raise CopygenError(f"cannot read: {err.strerror}", Loc(str(p))) from None
    _refuse_unless_regular(p, st.st_mode)
    return st


def _too_big(p: Path) -> CopygenError:
    return CopygenError(f"{p} is larger than {MAX_SOURCE_BYTES // 1024} KiB, the limit for a "
                        ".copy source", Loc(str(p)),
                        hint="a strategy is a few dozen lines: is this the right file?")


def read_source(path: str | Path) -> str:
    """The text of a .copy file: a regular file of at most MAX_SOURCE_BYTES
    of UTF-8, newlines as Python's text mode reads them.  Its kind and size
    are checked before anything is read."""
    p = Path(path)
    if require_regular_file(p).st_size > MAX_SOURCE_BYTES:
        raise _too_big(p)
    try:
        # O_NONBLOCK: should the path have become a FIFO since the stat, the
        # open does not wait for a writer, and fstat refuses it.
        with os.fdopen(os.open(p, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
            _refuse_unless_regular(p, os.fstat(f.fileno()).st_mode)
            data = f.read(MAX_SOURCE_BYTES + 1)
    except FileNotFoundError:
        raise CopygenError(f"no such file: {p}", Loc(str(p))) from None
    except OSError as err:
        raise CopygenError(f"cannot read: {err.strerror}", Loc(str(p))) from None
    if len(data) > MAX_SOURCE_BYTES:
        raise _too_big(p)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CopygenError(f"not UTF-8 text (byte {err.start})", Loc(str(p))) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")
