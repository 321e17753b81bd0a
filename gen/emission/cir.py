"""C IR: string.c as functions made of phases made of C lines (declared as data).

Legend
  CUnit      the whole of string.c below its banner: word typedefs, functions
  CTypedef   one word type the functions use: its name, why it exists, its spec
  CHelper    static inline helpers the functions call (the unaligned-word
             accessors of a fast-misaligned core): a comment and C lines
  CFunction  one exported C function (plus its weak alias): the comment above
             it, its return type, name and parameters, and its phases
  CPhase     a named step of the routine (docs/strategies.md, "The phases": entry, head, words,
             shift copy, tail, bytes, ...); `title` names it for readers of
             the IR and for tests, the C text is all in `body`
  Stmt       one line of C, `depth` tabs deep; text "" is a blank line and a
             label (`copy_bytes:`) sits at depth 0
  Comment    a comment `depth` tabs deep: one line is written `/* ... */`,
             more lines as a block; an empty line is a bare ` *`

Lowering (gen.lower.lower_string) makes every decision; the template
(templates/string.c.j2) indents each item's text_lines() by its depth and
lays them out, nothing more.
Role: the contract between gen.lower.lower_string and gen.emission.emit.  May import only
the standard library.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stmt:
    depth: int
    text: str

    def __post_init__(self) -> None:
        assert self.text or not self.depth, f"blank line indented {self.depth} deep"

    def text_lines(self) -> tuple[str, ...]:
        return (self.text,)


@dataclass(frozen=True)
class Comment:
    depth: int
    lines: tuple[str, ...]

    def text_lines(self) -> tuple[str, ...]:
        if len(self.lines) == 1:
            return (f"/* {self.lines[0]} */",)
        return ("/*", *(f" * {w}" if w else " *" for w in self.lines), " */")


BLANK = Stmt(0, "")


@dataclass(frozen=True)
class CPhase:
    title: str
    body: tuple[Stmt | Comment, ...]

    @property
    def why(self) -> tuple[str, ...]:
        """Every comment line of the phase, in order."""
        return tuple(w for item in self.body if isinstance(item, Comment) for w in item.lines)

    @property
    def stmts(self) -> tuple[str, ...]:
        """The phase's C lines without blanks, labels' colons kept."""
        return tuple(i.text for i in self.body if isinstance(i, Stmt) and i.text)


@dataclass(frozen=True)
class CFunction:
    symbol: str                  # __memcpy
    alias: str | None            # memcpy: a weak alias, exported like the symbol
    ret: str                     # "void *": written straight before the name
    params: str
    doc: Comment
    phases: tuple[CPhase, ...]
    def phase(self, title: str) -> CPhase | None:
        return next((p for p in self.phases if p.title == title), None)


@dataclass(frozen=True)
class CTypedef:
    name: str
    why: str
    spec: str


@dataclass(frozen=True)
class CHelper:
    """Static inline helpers the functions call: their names, the comment
    above them, and their C lines (a line starting with tabs is indented
    by them; "" is a blank line)."""
    names: str
    why: tuple[str, ...]
    lines: tuple[str, ...]

    def text_lines(self) -> tuple[str, ...]:
        return (*Comment(0, self.why).text_lines(), *self.lines)


@dataclass(frozen=True)
class CUnit:
    types: tuple[CTypedef, ...]
    functions: tuple[CFunction, ...]
    helpers: tuple[CHelper, ...] = ()

    def function(self, symbol: str) -> CFunction:
        return next(f for f in self.functions if symbol in (f.symbol, f.alias))
