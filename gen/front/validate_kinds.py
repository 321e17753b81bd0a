"""The routine kinds a phases block can be: a copy_user, clear_user, memcpy
(in C, or in assembly with `form asm`) or memset, which phases each kind
needs, and which settings apply to it at all.

gen.front.validate_phases checks a block with these first; the other phase
checks ask them what a kind is (a fill, a user access, lowered by
gen.lower.lower_uaccess) and how an error message names it.
May import copygen.errors, gen.front.parse.
"""
from __future__ import annotations

from copygen.errors import CopygenError
from copygen.gen.front.parse import Item


REQUIRED = {
    "copy_user": ("small", "words", "tail", "fault"),
    "clear_user": ("small", "words", "tail", "fault"),
    "memcpy": ("small", "words", "tail"),
    "memcpy_asm": ("small", "words", "tail"),
    "memset": ("small", "words", "tail"),
}
USER_ROUTINES = ("copy_user", "clear_user")
# routines lowered by gen.lower.lower_uaccess: size classes, ends and inline apply
# (`memcpy_asm` is a memcpy with `form asm`)
UACCESS_LOWERED = USER_ROUTINES + ("memcpy_asm",)
FILLS = ("clear_user", "memset")
SHOWN = {"memcpy_asm": "memcpy in assembly (`form asm`)"}


def shown(kind: str) -> str:
    """The routine kind as an error message names it."""
    return SHOWN.get(kind, kind)


def form_kind(s: dict, kind: str) -> str:
    """The kind to validate as: a memcpy with `form asm` is lowered as a
    copy_user is; `form` itself applies to memcpy only."""
    if "form" not in s:
        return kind
    if kind != "memcpy":
        hint = ("`tail jump` makes memset an assembly function" if kind == "memset"
                else "remove the line")
        raise CopygenError(f"`form` applies to memcpy, not {kind}", s["form"].loc, hint=hint)
    return "memcpy_asm" if s["form"].values[0] == "asm" else kind


def check_required(item: Item, s: dict, kind: str) -> None:
    """Every phase the routine needs is there, and `fault` only where memory can fault."""
    for key in REQUIRED[kind]:
        if key not in s:
            what = f"{kind} `{item.name}`" if item.name else shown(kind)
            raise CopygenError(f"{what} has no `{key}` phase", item.loc,
                               hint=f"every {shown(kind)} needs: " + ", ".join(REQUIRED[kind]))
    if "vector" in s and kind not in ("copy_user", "clear_user"):
        raise CopygenError(f"`vector` applies to copy_user and clear_user, not {shown(kind)}",
                           s["vector"].loc,
                           hint="the kernel runs vector code for user accesses only; "
                                "remove the line")
    if "fault" in s and kind not in USER_ROUTINES:
        raise CopygenError(f"`fault` does not apply to {shown(kind)}: kernel memory never faults",
                           s["fault"].loc, hint="remove the `fault` line")
