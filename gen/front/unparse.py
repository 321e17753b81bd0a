"""Items back to `.copy` text: the inverse of gen.front.parse for everything but
comments and layout.  A tuned variant and a winner are written with it, so
`copygen build` accepts them as any hand-written file.

Role: text out of gen.front.parse.Item/Setting.  May import gen.front.parse.
"""
from __future__ import annotations

from copygen.gen.front.parse import Item, Setting

BLOCK_WORDS = {"copy_user": "copy_user", "clear_user": "clear_user", "string_block": "string",
               "sweep": "sweep"}
SWEEP_WORDS = {"sweep_small": "small below", "sweep_words": "words unroll",
               "sweep_shift": "shift unroll", "sweep_then_words": "then words unroll",
               "sweep_then_shift": "then shift unroll", "sweep_vector_above": "vector above"}
SWEEP_NAMES = {"sweep_align": "align", "sweep_tail": "tail", "sweep_fault": "fault",
               "sweep_ends": "ends", "sweep_inline": "inline", "sweep_expect": "expect",
               "sweep_vector_lmul": "vector lmul", "sweep_vector_loads": "vector loads",
               "sweep_vector_sew": "vector sew"}


def _list(values) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def setting_text(s: Setting) -> str:
    """One phase or target setting, as it is written in a block."""
    v = s.values
    if s.key in SWEEP_NAMES:
        return f"{SWEEP_NAMES[s.key]} {_list(v)}"
    if s.key in SWEEP_WORDS:
        return f"{SWEEP_WORDS[s.key]} {_list(v[0])}" + (f" schedule {_list(v[1])}" if len(v) > 1 else "")
    if s.key == "small":
        return f"small below {v[0]}"
    if s.key == "reserve":
        return f"reserve {', '.join(v)}"
    if s.key == "bytes":
        return f"bytes below {v[0]} unroll {v[1]}"
    if s.key == "vector":
        text = f"vector {v[0]} {v[1]} above {v[2]}" + ("" if v[3] is None else f" loads {v[3]}")
        return text + (f" vlen {v[4][0]}..{v[4][1]}" if len(v) > 4 else "")
    if s.key in ("words", "shift", "then_words", "then_shift"):
        word = s.key.replace("_", " ")
        if v[0] == "off":
            return f"{word} off"
        return f"{word} unroll {v[0]}" + (f" schedule {v[1]}" if len(v) > 1 else "")
    return f"{s.key} {' '.join(map(str, v))}"


def item_text(it: Item, indent: str = "") -> str:
    """A top-level block (target, routine, string block) with its settings."""
    inner = indent + "    "
    if it.kind == "target":
        head = f"target {it.name}"
    elif it.kind in BLOCK_WORDS:
        head = f"{BLOCK_WORDS[it.kind]} {it.name} for {it.ref}"
    else:                                   # a string function: memcpy { ... }
        head = it.kind
    lines = [f"{indent}{head} {{"]
    for s in it.settings:
        lines.append(item_text(s, inner) if isinstance(s, Item) else inner + setting_text(s))
    lines.append(f"{indent}}}")
    return "\n".join(lines)


def file_text(items: list[Item], header: list[str] = ()) -> str:
    """A whole file: `#` header lines, then the blocks, a blank line apart."""
    head = "".join(f"# {h}\n" if h else "#\n" for h in header)
    return head + ("\n" if head else "") + "\n\n".join(item_text(it) for it in items) + "\n"
