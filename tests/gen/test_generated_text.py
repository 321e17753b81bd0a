"""What a reviewer reads in out/ says what the code does: no "word(s)", a
clear or fill never says it copies, and every fault exit's name says
where the first byte not stored is, which its code computes.

An exit is named by that byte: `.Lclear_fault_a0_plus_8` leaves a0 + 8
for `return end - a0`, `.Lclear_fault_a2_minus_16` a2 - 16, and a retry
exit `.Lcopy_retry_a0_a1_minus_8` resumes the byte loop at a0 - 8 and
its source byte a1 - 8.  Exits form ladders (each rung adds its share
and falls into the next), so the name is checked against the code run
from the label to where a0 is used, not against the rung's own add."""
from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

OUT = ROOT / "out"
SOURCES = sorted(p for p in OUT.glob("*/*") if p.suffix in (".S", ".c"))
ASSEMBLY = [p for p in SOURCES if p.suffix == ".S"]
FILLS = ("__clear_user", "__asm_vector_clear_user", "memset", "__memset")
LABEL = re.compile(r"^(\.L\w+):")
INSN = re.compile(r"^\t([a-z.]+)\t([^/]*?)\s*(?:/\*.*\*/)?$")
EXIT = re.compile(r"_(?:fault|retry)(?:_shift)?")
CLAIM = re.compile(r"_((?:a\d_)*a\d)_(plus|minus)_(\d+)")


def _id(p):
    return str(p.relative_to(OUT))


def _comments(text: str) -> list[str]:
    return re.findall(r"/\*.*?\*/|//[^\n]*", text, re.S)


def test_out_holds_what_these_tests_read():
    assert len(ASSEMBLY) >= 10 and any(p.suffix == ".c" for p in SOURCES)
    ladders = [p for p in ASSEMBLY if re.search(r"^\.Lclear_fault_a0_minus_\d+:", p.read_text(), re.M)]
    assert ladders, "no clear with a ladder of fault exits to read"


@pytest.mark.parametrize("path", SOURCES, ids=_id)
def test_no_comment_says_word_s(path):
    said = [c for c in _comments(path.read_text()) if re.search(r"\w\(s\)|\b1 [a-z]+s\b", c)]
    assert not said, said[:3]


def _functions(text: str):
    """(symbol, its header comment and body) of each function of a .S."""
    for m in re.finditer(r"^SYM_FUNC_START\((\w+)\)", text, re.M):
        end = text.index(f"SYM_FUNC_END({m[1]})", m.end())
        yield m[1], text[text.rfind("\n/*", 0, m.start()) + 1:end]


@pytest.mark.parametrize("path", ASSEMBLY, ids=_id)
def test_a_clear_or_fill_never_says_it_copies(path):
    for symbol, code in _functions(path.read_text()):
        if symbol in FILLS:
            said = [c for c in _comments(code) if re.search(r"\bcop(y|ies|ied|ying)\b", c, re.I)]
            assert not said, (symbol, said[:3])


def _claims(label: str) -> dict[str, tuple[str, int]]:
    """Where an exit's name says a0 (the first byte not stored) and a1
    (its source byte) end up: register and offset."""
    tail = EXIT.split(label, 1)[1]
    want = {"a0": ("a0", 0), "a1": ("a1", 0)}
    for regs, sign, k in CLAIM.findall(tail):
        c = int(k) if sign == "plus" else -int(k)
        if "_fault" in label:
            want["a0"] = (regs, c)              # a fault exit: a0 from that register
        else:
            want.update({r: (r, c) for r in regs.split("_")})
    assert CLAIM.sub("", tail) == "", f"{label}: a name that says no offset it computes"
    return want


def _computes(lines: list[str], labels: dict[str, int], start: int) -> dict[str, tuple[str, int]]:
    """a0 and a1 (register, offset) as the code from line `start` leaves
    them where it uses them: it follows the fall-through and jumps to other
    exits, adds addi's constants, and stops at another write of a0 or a1,
    a jump elsewhere or a return."""
    at = {"a0": ("a0", 0), "a1": ("a1", 0)}
    i = start + 1
    for _ in range(1000):
        m = INSN.match(lines[i]) if i < len(lines) else None
        i += 1
        if m is None:
            continue                            # a label: fall into it
        op, args = m[1], [a.strip() for a in m[2].split(",")]
        if op == "j" and EXIT.search(args[0]):
            i = labels[args[0]] + 1
            continue
        if op in ("j", "ret"):
            return at
        if op == "addi" and args[0] in at and re.fullmatch(r"-?\d+", args[2]):
            base, off = at[args[1]] if args[1] == args[0] else (args[1], 0)
            at[args[0]] = (base, off + int(args[2]))
        elif args and args[0] in at:
            return at                           # a0 or a1 used for the result
    raise AssertionError(f"no end after line {start}")


@pytest.mark.parametrize("path", ASSEMBLY, ids=_id)
def test_every_fault_exit_is_named_by_what_it_computes(path):
    lines = path.read_text().splitlines()
    labels = {m[1]: i for i, line in enumerate(lines) if (m := LABEL.match(line))}
    exits = [name for name in labels if EXIT.search(name)]
    for name in exits:
        assert _computes(lines, labels, labels[name]) == _claims(name), name
