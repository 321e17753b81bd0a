"""Two memcpy/memmove bodies in one memcpy.S, picked at boot by the kernel's
probe of misaligned access speed (docs/speeds.md, "The string functions").

`copygen patch SLOW.copy --fast-body FAST.copy --routine string`: the
string patch of SLOW (patch.stringfile), with memcpy.S holding, beside
SLOW's __memcpy and __memmove, FAST's as the local functions
__memcpy_fast and __memmove_fast.  The first instruction of __memcpy and
of __memmove is a static branch on the probe's key, written by the same
assembler macro as the user copy's (patch.dispatch.macro): a nop the
jump-label code turns into a jump to the fast body.  FAST's memmove hands
disjoint buffers to __memcpy_fast, so a call reads the key once, at its
entry.

Both string blocks must have memcpy and memmove in assembly (`form asm`
for both: memmove then lives in memcpy.S): a static branch is an
instruction at the head of an assembly function.  The dispatch is built
only into the kernel's own memcpy.o: arch/riscv/lib/Makefile assembles it
with -D{FLAG}; kexec's purgatory, which assembles memcpy.S again into a
standalone image without the key, gets SLOW's copy alone.

Role: the new file texts and the checks; change nothing in the tree.
commit_message() writes the change's message: which body runs where (the
modelled probe per profile), the configurations, each profile's table
for the body its probe picks against the tree's, the proofs in both key
states and of their composition, how to reproduce from both strategies.

May import gen (emit, strategy), gen.emission.asmtext, patch.speeds
(dispatch, commit_text), patch.stringfile, patch.message, patch.evidence,
verify.contract.clauses, copygen.errors and the standard library.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from copygen.errors import CopygenError, Loc
from copygen.gen.emission import asmtext
from copygen.gen.emission.emit import render_memcpy
from copygen.gen.front.strategy import Strategy
from copygen.patch import message, stringfile
from copygen.patch.speeds import commit_text, dispatch
from copygen.verify.contract.clauses import PROPERTIES

FLAG = "RISCV_MEMCPY_BY_SPEED"
GUARD = "HAVE_FAST_MISALIGNED_MEMCPY"
FUNCTIONS = ("__memcpy", "__memmove")
SUFFIX = "_fast"
LABEL = re.compile(r"\.L(\w+)")
MAKEFILE_FLAGS = f"""
# memcpy.o holds a second memcpy and memmove for harts whose misaligned
# accesses are fast, picked by the boot probe; kexec's purgatory, which
# assembles memcpy.S again without the probe's key, keeps the first alone.
AFLAGS_memcpy.o			+= -D{FLAG}
"""

GUARD_TEXT = f"""
/*
 * A second memcpy and memmove, for harts whose misaligned accesses are
 * fast, are built into the kernel's memcpy.o (not kexec's purgatory) when
 * the kernel can tell which harts those are, as
 * has_fast_unaligned_accesses() does: from the boot probe's static key
 * {dispatch.KEY} (a jump label switches to them), or
 * because the kernel is built for fast misaligned access.
 */
#if defined({FLAG}) && (defined(CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS) || \\
	(defined(CONFIG_RISCV_PROBE_UNALIGNED_ACCESS) && defined(CONFIG_JUMP_LABEL)))
#define {GUARD}
#endif
"""


@dataclass(frozen=True)
class Plan:
    string: stringfile.Plan           # SLOW's string patch, memcpy.S and the Makefile replaced
    sites: tuple[tuple[str, str], ...]  # (function headed by the static branch, its fast body)


def _error(st: Strategy, why: str, hint: str) -> CopygenError:
    loc = st.string.loc if st.string is not None else Loc(st.file)
    return CopygenError(f"{st.file}: {why}", loc, hint=hint)


def slots(slow: Strategy, fast: Strategy) -> None:
    """Both string blocks present, memcpy and memmove in assembly, and each
    strategy's misaligned speed that of its slot."""
    for st, role in ((slow, "FILE"), (fast, "--fast-body")):
        if st.string is None:
            raise CopygenError(f"{st.file} has no string block, which {role} must have with "
                               "--routine string", Loc(st.file),
                               hint="--fast-body --routine string puts a second memcpy and "
                                    "memmove into memcpy.S")
        lib = st.string
        if not (lib.memcpy_asm and lib.memmove_asm):
            raise _error(st, f"string {lib.name}'s memcpy and memmove must both be in assembly "
                         "(`form asm`) for a second body beside them",
                         "the static branch is the first instruction of __memcpy and __memmove "
                         "in memcpy.S; write `form asm` in both blocks")
    if slow.string.target.fast_misaligned:
        raise _error(slow, f"string {slow.string.name} is for a `misaligned fast` target and "
                     "cannot go into the slow (FILE) slot, which needs `misaligned slow`",
                     "FILE runs on every hart the probe does not find fast: give a misaligned "
                     "slow strategy as FILE")
    if not fast.string.target.fast_misaligned:
        raise _error(fast, f"string {fast.string.name} is for a `misaligned slow` target and "
                     "cannot go into the fast (--fast-body) slot, which needs `misaligned fast`",
                     "--fast-body runs only where misaligned accesses are fast: give a "
                     "misaligned fast strategy (examples/c910tuned.copy)")


def _function(text: str, name: str) -> str:
    """The lines from SYM_FUNC_START(name) to SYM_FUNC_END(name), inclusive."""
    start = text.index(f"SYM_FUNC_START({name})\n")
    end = text.index(f"SYM_FUNC_END({name})\n", start) + len(f"SYM_FUNC_END({name})\n")
    return text[start:end]


def fast_functions(fast: Strategy, source: str) -> str:
    """FAST's __memcpy and __memmove as local functions with the suffix,
    their labels and memmove's branch into memcpy renamed to match."""
    text = render_memcpy(fast, source, False, ())
    out = []
    for name in FUNCTIONS:
        body = _function(text, name)
        body = LABEL.sub(lambda m: f".L{m.group(1)}{SUFFIX}", body)
        for other in FUNCTIONS:
            body = re.sub(rf"(?<![\w.]){other}(?!\w)", other + SUFFIX, body)
        body = body.replace("SYM_FUNC_START(", "SYM_FUNC_START_LOCAL(")
        out.append(f"/*\n * {name}'s copy for harts with fast misaligned access ({source}),\n"
                   f" * entered only from {dispatch.MACRO} at the top of {name}.\n */\n{body}")
    return f"\n#ifdef {GUARD}\n" + "\n".join(out) + "#endif\n"


def _dispatch(fast: str) -> str:
    return (f"\t/*\n\t * Harts with fast misaligned access copy in\n\t * {fast} instead.\n"
            f"\t */\n\t{dispatch.MACRO} {fast}\n\n")


def memcpy_text(slow_text: str, fast: Strategy, fast_source: str) -> str:
    """SLOW's memcpy.S with the macro after its includes, the static branch
    at the top of __memcpy and __memmove, and FAST's bodies at the end."""
    if dispatch.MACRO in slow_text:
        raise CopygenError(f"the generated memcpy.S has a {dispatch.MACRO} already")
    fast_text = fast_functions(fast, fast_source)
    code = lambda t: asmtext.named_labels(asmtext.code_lines(t.splitlines()))  # noqa: E731
    clash = code(slow_text) & code(fast_text)
    if clash:
        raise CopygenError(f"the fast bodies' labels {', '.join(sorted(clash))} are taken in "
                           "memcpy.S")
    head = "#include <asm/asm.h>\n"
    at = slow_text.index(head) + len(head)
    text = slow_text[:at] + GUARD_TEXT + dispatch.macro(GUARD) + slow_text[at:]
    for name in FUNCTIONS:
        start = f"SYM_FUNC_START({name})\n"
        text = text.replace(start, start + _dispatch(name + SUFFIX), 1)
    return text.rstrip("\n") + "\n" + fast_text


def makefile(text: str) -> str:
    """The string patch's Makefile with memcpy.o assembled with -DFLAG."""
    if not re.search(r"^lib-y\s*\+=\s*memcpy\.o\s*$", text, re.M):
        raise CopygenError(f"{stringfile.MAKEFILE} no longer builds memcpy.o",
                           Loc(stringfile.MAKEFILE))
    return text.rstrip("\n") + "\n" + MAKEFILE_FLAGS


def plan(slow: Strategy, fast: Strategy, source: str, fast_source: str, show,
         users=lambda path: []) -> Plan:
    """SLOW's string patch (patch.stringfile.plan) with the two-body
    memcpy.S and the Makefile's flag for it."""
    slots(slow, fast)
    base = stringfile.plan(slow, source, show, users)
    files = dict(base.files)
    files[stringfile.MEMCPY_S] = memcpy_text(files[stringfile.MEMCPY_S], fast, fast_source)
    files[stringfile.MAKEFILE] = makefile(files[stringfile.MAKEFILE])
    return Plan(stringfile.Plan(files, base.objects_before, base.objects_after, base.exports),
                tuple((f, f + SUFFIX) for f in FUNCTIONS))


SUBJECT = "riscv: lib: pick memcpy and memmove by misaligned access speed"


def _wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, commit_text.WIDTH, initial_indent=indent, subsequent_indent=indent)


def _changed(names: tuple[str, str]) -> list[str]:
    return _wrap(
        f"Put a second memcpy and memmove into memcpy.S and let the boot probe of misaligned "
        f"access speed pick them.  __memcpy and __memmove keep the copies for harts whose "
        f"misaligned accesses are slow ({names[0]}, which makes none), and the new local "
        f"functions __memcpy{SUFFIX} and __memmove{SUFFIX} hold copies for harts where they "
        f"are fast ({names[1]}, whose word loop takes a misaligned source as it is; its "
        f"memmove hands disjoint buffers to __memcpy{SUFFIX}).  The first instruction of "
        f"__memcpy and of __memmove is a static branch on {dispatch.KEY}, which "
        f"{dispatch.PROBE.rsplit('/', 1)[-1]} enables once its probe has found every online "
        f"hart fast, and disables when a slow hart comes online: a nop falling into the slow "
        f"copy, written into a jump to the fast one.  memcpy, the __pi_ aliases and the "
        f"callers of memmove all enter there.  Only the kernel's own memcpy.o is built so "
        f"(-D{FLAG} in the Makefile): kexec's purgatory, which assembles memcpy.S again "
        f"without the key, keeps the slow copy alone.")


def _configs() -> list[str]:
    return _wrap("With CONFIG_RISCV_PROBE_UNALIGNED_ACCESS and jump labels the branch is as "
                 "above; until the probe has run (an arch_initcall) the key is off and the slow "
                 "copies run.  Built for fast misaligned access "
                 "(CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS) it is the same 4-byte jump, always "
                 "there.  Otherwise it is nothing and the fast copies are not built.  A static "
                 "key and not an alternative: alternatives are applied from ISA extensions and "
                 "errata before the probe runs.")


def _tables(ch: message.Change, probes) -> list[str]:
    out: list[str] = []
    for p in probes:
        rows = [r for r in ch.rows if r.profile == p.profile]
        if rows:
            out += ["", *_wrap(f"On {p.profile}, misaligned access {p.verdict()}: the "
                               f"{p.verdict()} memcpy and memmove, against the tree's."),
                    *message.speed(rows, ch.calibration), "", *message.table(rows)]
    return out


def _proofs(ch: message.Change, sp) -> list[str]:
    before = {p.symbol: p.verdict for p in ch.before.get("string", [])}
    on = {p.symbol: p.verdict for p in sp.on_proofs}
    comp = {r.symbol.removesuffix("+speeds"): r for r in sp.composed}
    out = ["Proofs (copygen verify: the linked machine code under Z3, every n):",
           f"    {'entry point':<20} {'before':<9} {'key off':<8} {'key on':<8} both"]
    for p in ch.after.get("string", []):
        c = comp.get(p.symbol)
        both = "-" if c is None else ("proved" if all(
            st == "proved" for cl, st in c.status.items() if cl not in PROPERTIES) else "not")
        out.append(f"    {p.symbol:<20} {before.get(p.symbol, '-'):<9} {p.verdict:<8} "
                   f"{on.get(p.symbol, '-'):<8} {both}")
    out += [""] + _wrap(
        f"The static branches, read from the linked code: the two __jump_table entries for "
        f"{dispatch.KEY} are the first instructions of __memcpy and __memmove, nops as linked, "
        f"written as jumps to __memcpy{SUFFIX} and __memmove{SUFFIX} with the key on.  Each "
        f"key state is proved whole, and the key's choice by a lemma: a call meets one branch "
        f"once, at entry, so its return and its stores are those of one state (Z3).", "  ")
    return out + commit_text.not_whole(sp)


def commit_message(ch: message.Change, sp, version: str, command: str,
                   sources: list[tuple[str, str]], signoff: str) -> str:
    names = (sources[0][1], sources[1][1])
    subject = SUBJECT.replace("lib: ", "lib: unproven draft: ") if ch.draft else SUBJECT
    body = [subject, "", *_changed(names), "", *_configs(), "", *commit_text.cores(sp),
            *_tables(ch, sp.probes)]
    body += ["", *ch.rules] if ch.rules else []
    body += ["", *_proofs(ch, sp)]
    if ch.kunit:
        body += ["", "KUnit (Kbuild, qemu-system-riscv64), tests passed before -> after:", *ch.kunit]
    # the parser names a string block's item `string_block`
    slow = message.reproduce(version, command, sources[0][0], names[0], ("string_block",))
    fast = message.reproduce(version, command, sources[1][0], names[1], ("string_block",))
    body += ["", *slow, "", f"{names[1]}:", *fast[fast.index("") + 1:], "",
             f"Signed-off-by: {signoff}"]
    return "\n".join(line.rstrip() for line in body) + "\n"
