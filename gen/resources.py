"""Where copygen's package data is: the grammar, the templates, the shim.

Found through importlib.resources, so the same code runs from a source
checkout, an editable install and a wheel.  The installed files are plain
files on disk (the distribution is not zip-safe): the toolchain needs real
paths for the shim's include directory and linker script.
May import the standard library only.
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _dir(package: str) -> Path:
    return Path(str(files(package)))


def grammar_file() -> Path:
    """grammar/copy.lark: the language's authority."""
    return _dir("copygen.grammar") / "copy.lark"


def templates_dir() -> Path:
    """templates/: uaccess.S.j2, string.c.j2."""
    return _dir("copygen.templates")


def shim_dir() -> Path:
    """shim/: include/ (the kernel headers' stand-ins) and copygen.ld."""
    return _dir("copygen.shim")
