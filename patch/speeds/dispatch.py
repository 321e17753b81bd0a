"""Two scalar user copies in one uaccess.S, picked at boot by the kernel's
probe of misaligned access speed (docs/speeds.md).

`copygen patch SLOW.copy --fast-body FAST.copy`: SLOW's copy_user (a
`misaligned slow` target: no misaligned access) stays where the tree
keeps its scalar copy (6.8 layout: fallback_scalar_usercopy; mainline:
fallback_scalar_usercopy_sum_enabled), and FAST's (`misaligned fast`)
goes into a local function beside it, `<that name>_fast`.  The first
instruction of the scalar copy is a static branch on the probe's key
(`fast_unaligned_access_speed_key`, unaligned_access_speed.c): a nop the
jump-label code turns into a jump to the fast copy once the probe has
found every online hart fast, and back when a slow one comes online.
Every way into the scalar copy starts there: __asm_copy_{to,from}_user,
the vector glue's fallback, mainline's _sum_enabled entries.  An
assembler macro in the file writes the site and its `__jump_table`
entry; it emits the same jump unconditionally on a kernel built for fast
misaligned access (CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS), and nothing
(the slow copy alone, the fast one not assembled) without the probe or
without jump labels, as has_fast_unaligned_accesses() decides.

Refused, each with a located error before anything is written: a slot
whose strategy claims the other speed, two strategies for the fast slot,
a tree without the probe's key (or with it true by default), a layout
without the nested scalar copy (2021).

Role: the new text of uaccess.S and the checks; change nothing in the
tree.  May import gen (strategy, lowering, emission), gen.emission.asmtext,
patch.kernelfile, patch.bodies, patch.splice, copygen.errors and the
standard library.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Callable

from copygen.errors import CopygenError, Loc
from copygen.gen.emission import asmtext
from copygen.gen.emission.emit import render_body
from copygen.gen.front.strategy import Strategy
from copygen.gen.lower.lower_uaccess import copy_user_function
from copygen.patch import bodies, kernelfile
from copygen.patch.splice import Spliced, splice

KEY = "fast_unaligned_access_speed_key"
PROBE = "arch/riscv/kernel/unaligned_access_speed.c"
KEY_DEFINED = re.compile(r"^\s*DEFINE_STATIC_KEY_(FALSE|TRUE)\(\s*" + KEY + r"\s*\)", re.M)
MACRO = "branch_if_misaligned_fast"
GUARD = "HAVE_FAST_MISALIGNED_USERCOPY"
SUFFIX = "_fast"
PREFIXES = ("fast", "fastcopy", "copygen_fast")
LAYOUTS = ("6.8", "mainline")
TRAILER = re.compile(r"^\s*(SYM_FUNC_END|SYM_FUNC_ALIAS\w*|EXPORT_SYMBOL\w*)\(")

GUARD_TEXT = f"""
/*
 * A second scalar copy, for harts whose misaligned accesses are fast, is
 * built when the kernel can tell which harts those are, as
 * has_fast_unaligned_accesses() does: from the boot probe's static key
 * {KEY} (a jump label switches to it), or
 * because the kernel is built for fast misaligned access.
 */
#if defined(CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS) || \\
	(defined(CONFIG_RISCV_PROBE_UNALIGNED_ACCESS) && defined(CONFIG_JUMP_LABEL))
#define {GUARD}
#endif
"""


def macro(guard: str) -> str:
    """The assembler macro that writes the static branch, assembled only
    where `guard` is defined (nothing elsewhere)."""
    return f"""
/*
 * Jump to \\fast when misaligned accesses are fast on every online hart,
 * else fall through.  With the probe it is a nop that the jump-label code
 * turns into the jump once the probe has found every online hart fast, and
 * back when a slow hart comes online: the __jump_table entry is the one
 * static_branch_unlikely(&{KEY}) makes.
 * Built for fast misaligned access it is the same 4-byte jump, always
 * there.  Without either, it is nothing.
 */
	.macro {MACRO} fast
#ifdef {guard}
	.balign	4
	.option	push
	.option	norelax
	.option	norvc
#ifdef CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS
	j	\\fast
#else
0:	nop
	.pushsection __jump_table, "aw"
	.balign	RISCV_SZPTR
	.long	0b - ., \\fast - .
	RISCV_PTR {KEY} - .
	.popsection
#endif
	.option	pop
#endif
	.endm
"""


DEFINITIONS = GUARD_TEXT + macro(GUARD)


@dataclass(frozen=True)
class Plan:
    layout: str
    text: str             # the new uaccess.S
    dispatcher: str       # the scalar copy whose first instruction is the static branch
    fast: str             # the fast copy's (local) symbol
    spliced: Spliced


def _speed_error(st: Strategy, slot: str, want: str, hint: str) -> CopygenError:
    t = st.copy_user.target
    return CopygenError(f"{st.file}: copy_user {st.copy_user.name} is for {t.name}, a `misaligned "
                        f"{t.misaligned}` target, and cannot go into the {slot} slot, which needs "
                        f"`misaligned {want}`", t.loc, hint=hint)


def slots(slow: Strategy, fast: list[Strategy]) -> Strategy:
    """The fast slot's strategy, once both slots are checked: FILE's copy
    for misaligned slow harts, exactly one --fast-body for fast ones."""
    if len(fast) > 1:
        names = ", ".join(s.file for s in fast)
        raise CopygenError(f"two copies for harts with fast misaligned access: {names}",
                           hint="a kernel has one slot per speed: give --fast-body once")
    for st, role in ((slow, "FILE"), (fast[0], "--fast-body")):
        if st.copy_user is None:
            raise CopygenError(f"{st.file} has no copy_user block, which {role} must have",
                               hint="--fast-body puts a second user copy into the tree")
    if slow.copy_user.target.fast_misaligned:
        raise _speed_error(slow, "slow (FILE)", "slow",
                           "FILE runs on every hart the probe does not find fast, and before it "
                           "runs: give a misaligned slow strategy as FILE and this one as --fast-body")
    if not fast[0].copy_user.target.fast_misaligned:
        raise _speed_error(fast[0], "fast (--fast-body)", "fast",
                           "--fast-body runs only where misaligned accesses are fast: give a "
                           "misaligned fast strategy (examples/c910fast.copy)")
    return fast[0]


def probe(show: Callable[[str], str | None]) -> int:
    """The line of PROBE that defines the key: refused when the tree has no
    probe, or a key that is true before the probe has run."""
    text = show(PROBE)
    m = KEY_DEFINED.search(text or "")
    if m is None:
        raise CopygenError(f"the tree has no boot probe of misaligned access speed: no "
                           f"DEFINE_STATIC_KEY_FALSE({KEY}) in {PROBE}", Loc(PROBE),
                           hint="the two copies are picked by that key (Linux 6.10 and later); "
                                "patch an older tree without --fast-body")
    line = text.count("\n", 0, m.start()) + 1
    if m.group(1) != "FALSE":
        raise CopygenError(f"{KEY} is true by default here: the fast copy would run before the "
                           "probe has found any hart fast", Loc(PROBE, line, 1),
                           hint="the dispatch is written for the kernel's false-by-default key")
    return line


def _insert(text: str, at: int, block: str) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[:at]) + block + "".join(lines[at:])


def _after_macro(lines: list[str]) -> int:
    """The line after the `.endm` that closes the fixup macro."""
    start = next(i for i, ln in enumerate(lines) if kernelfile.FIXUP_MACRO.match(ln))
    return next(i for i in range(start, len(lines)) if lines[i].strip() == ".endm") + 1


def _after_function(lines: list[str], fn: kernelfile.Function) -> int:
    """The line after the copy's end marker and the markers, aliases and
    exports that follow it."""
    i = fn.body_end
    while i < len(lines) and TRAILER.match(lines[i]):
        i += 1
    return i


def _fast_function(st: Strategy, place: kernelfile.Place, name: str, taken: set[str]) -> str:
    for prefix in PREFIXES:
        fn = copy_user_function(st.copy_user, sum_held=place.sum_held, prefix=prefix, keep=place.keep)
        body = render_body(dataclasses.replace(fn, symbol=name), bodies.strategy_lines(st, "copy_user"))
        if not asmtext.named_labels(asmtext.code_lines(body.splitlines())) & taken:
            break
    else:
        raise CopygenError("every label prefix copygen tries for the fast copy is taken in the file",
                           hint=f"labels .L{PREFIXES[-1]}_* are already defined")
    held = " (sstatus.SUM held by its caller)" if place.sum_held else ""
    return (f"\n#ifdef {GUARD}\n/*\n"
            f" * {place.function.name}'s copy for harts with fast misaligned\n"
            f" * access{held}, entered only from {MACRO}\n"
            f" * at its top.\n */\n"
            f"SYM_FUNC_START_LOCAL({name})\n{body}SYM_FUNC_END({name})\n#endif\n")


def _dispatch(fast: str) -> str:
    return ("\t/*\n\t * Harts with fast misaligned access copy in\n"
            f"\t * {fast} instead.\n\t */\n\t{MACRO} {fast}\n\n")


def plan(slow: Strategy, fast: Strategy, text: str, path: str, kinds: tuple[str, ...]) -> Plan:
    """The new uaccess.S: the macro after the fixup macro, the fast copy
    after the scalar copy, the static branch and SLOW's body in the scalar
    copy, FAST's in its own function (and SLOW's clear_user, if asked)."""
    lines = text.splitlines(keepends=True)
    lay, places = kernelfile.places(lines, path, kinds)
    if lay not in LAYOUTS:
        raise CopygenError(f"{path} has the {lay} layout: the scalar copy is __asm_copy_to_user "
                           "itself, with no fallback_scalar_usercopy for the static branch to head",
                           Loc(path), hint="--fast-body patches the layouts of Linux 6.8 and later")
    copy = next(p for p in places if p.kind == "copy_user")
    name = copy.function.name + SUFFIX
    fns = kernelfile.functions(lines, path)
    if name in fns or MACRO in text:
        raise CopygenError(f"{path} has a {name} or a {MACRO} already",
                           Loc(path, fns[name].start + 1 if name in fns else 1, 1),
                           hint="it looks patched with --fast-body before: patch the stock file")
    code = asmtext.code_lines(lines)
    replaced = {i for p in places for i in range(p.function.body_start, p.function.body_end)}
    taken = asmtext.named_labels(code, lambda i: i not in replaced)
    # the fast copy goes in first, so that the slow body's labels avoid its own
    with_fast = _insert(text, _after_function(lines, copy.function), _fast_function(fast, copy, name, taken))
    with_fast = _insert(with_fast, _after_macro(lines), DEFINITIONS)
    lines = with_fast.splitlines(keepends=True)
    _, places = kernelfile.places(lines, path, kinds)
    made = [(p, (_dispatch(name) + t) if p.kind == "copy_user" else t)
            for p, t in bodies.bodies(slow, lines, places)]
    sp = splice(with_fast, made, path)
    return Plan(lay, sp.text, copy.function.name, name, sp)
