"""The one error type that reaches the user, and warnings (docs/architecture.md, "Errors").

Role: carry a message, a source location (file:line:col) and a hint, and
render them the way compilers do.  It belongs to no layer: gen, verify,
tune, patch ... raise it and the command line prints it, so it sits at the
namespace's root, where every layer may import it.  May import only the
standard library.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# An excerpt shows at most this many characters each side of the column, so
# an error on a 400 KB line prints one screen line, not the whole line.
EXCERPT_SIDE = 100


def clip(text: str, width: int) -> str:
    """`text`, cut to `width` characters with "..." when longer."""
    text = str(text)
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


@dataclass(frozen=True)
class Loc:
    """A position in a source file; line and column count from 1."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.col}"
        return self.file

    def source_line(self) -> str | None:
        """The text of the line this location points into, if readable."""
        if not self.line:
            return None
        path = Path(self.file)
        if not path.is_file():          # never open a FIFO or a device
            return None
        try:
            # utf-8-sig: the parser drops a leading byte-order mark, so must this
            lines = path.read_text(encoding="utf-8-sig", errors="replace").splitlines()
        except OSError:
            return None
        return lines[self.line - 1] if 0 < self.line <= len(lines) else None


def _excerpt(loc: Loc | None, text: str | None = None) -> list[str]:
    """The offending line and a caret under the column; of a long line, only
    EXCERPT_SIDE characters each side of the column, "..." marking a cut."""
    if loc is None or not loc.line:
        return []
    line = text if text is not None else loc.source_line()
    if line is None:
        return []
    at = max(loc.col - 1, 0)
    start, end = max(at - EXCERPT_SIDE, 0), at + EXCERPT_SIDE + 1
    head = "..." if start > 0 else ""
    tail = "..." if end < len(line) else ""
    # Keep tabs so the caret lines up under tab-indented source.
    pad = " " * len(head) + "".join(c if c == "\t" else " " for c in line[start:at])
    return [f"    {head}{line[start:end]}{tail}", f"    {pad}^"]


class CopygenError(Exception):
    """Bad input or a failing external tool; exit status says which.

    exit_code 2: bad input (syntax, semantics, unreadable file).
    exit_code 1: an external tool failed (its stderr is in `detail`).
    """

    def __init__(self, message: str, loc: Loc | None = None, hint: str | None = None,
                 exit_code: int = 2, detail: str | None = None,
                 line_text: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.hint = hint
        self.exit_code = exit_code
        self.detail = detail
        self.line_text = line_text

    def render(self) -> str:
        where = f"{self.loc}: " if self.loc else ""
        out = [f"{where}error: {self.message}"]
        out += _excerpt(self.loc, self.line_text)
        if self.hint:
            out.append(f"  hint: {self.hint}")
        if self.detail:
            out.append(self.detail.rstrip())
        return "\n".join(out)

    def as_dict(self) -> dict:
        return {
            "severity": "error",
            "message": self.message,
            "file": self.loc.file if self.loc else None,
            "line": self.loc.line if self.loc else None,
            "col": self.loc.col if self.loc else None,
            "hint": self.hint,
        }


class ToolError(CopygenError):
    """An external program (assembler, compiler, linker) failed or is missing."""

    def __init__(self, message: str, detail: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint, exit_code=1, detail=detail)


@dataclass(frozen=True)
class Warning_:
    """A diagnostic that does not stop the build (e.g. a raised threshold)."""

    message: str
    loc: Loc | None = None
    hint: str | None = None

    def render(self) -> str:
        where = f"{self.loc}: " if self.loc else ""
        out = [f"{where}warning: {self.message}"]
        if self.hint:
            out.append(f"  hint: {self.hint}")
        return "\n".join(out)

    def as_dict(self) -> dict:
        return {
            "severity": "warning",
            "message": self.message,
            "file": self.loc.file if self.loc else None,
            "line": self.loc.line if self.loc else None,
            "col": self.loc.col if self.loc else None,
            "hint": self.hint,
        }
