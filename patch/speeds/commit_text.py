"""The commit message of a two-body patch (`copygen patch --fast-body`).

It says which body runs on which harts and why (the boot probe, and what
the probe finds on each cost profile, modelled), how the configurations
differ, what the static branch costs the slow body, each core's table of
modelled cycles before and after under its own profile (the body its
probe picks; under a fast core, then the fast copy against the slow one
that core would run without it), the proofs of the old code and of the
new one in both key states with the composed verdict, and how to
reproduce from both strategies.  Every line fits 72 columns.

Role: text only.  May import patch.message, patch.evidence,
patch.speeds.dispatch, verify.contract.clauses and the standard library.
"""
from __future__ import annotations

import textwrap

from copygen.patch import message
from copygen.patch.evidence import Proof
from copygen.patch.speeds.dispatch import KEY, PROBE
from copygen.verify.contract.clauses import CLAUSES, PROPERTIES

WIDTH = 72
SUBJECT = "riscv: lib: uaccess: pick the user copy by misaligned access speed"


def _wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent)


def subject(ch: message.Change) -> str:
    return SUBJECT.replace("uaccess: ", "uaccess: unproven draft: ") if ch.draft else SUBJECT


def changed(ch: message.Change, sp, names: tuple[str, str]) -> list[str]:
    entries = ("__asm_copy_{to,from}_user_sum_enabled, fallback_scalar_usercopy and the vector "
               "glue's fallback to it (enter_vector_usercopy)" if ch.layout == "mainline" else
               "__asm_copy_{to,from}_user and the vector glue's fallback to the scalar copy "
               "(enter_vector_usercopy)")
    held = ("  Both run with SUM held by their callers, as the scalar copy did."
            if ch.layout == "mainline" else "  Each sets and clears SUM itself.")
    text = (f"Put two scalar user copies into uaccess.S and let the boot probe of misaligned "
            f"access speed pick one.  {sp.dispatcher} keeps the copy for harts whose "
            f"misaligned accesses are slow ({names[0]}, which makes none), and the new local "
            f"function {sp.fast} holds one for harts where they are fast ({names[1]}, whose "
            f"word loop takes a misaligned source as it is).{held}  The first instruction of "
            f"{sp.dispatcher} is a static branch on {KEY}, which "
            f"{PROBE.rsplit('/', 1)[-1]} enables once its probe has found every online hart "
            f"fast, and disables when a slow hart comes online (csum.c reads the same key "
            f"through has_fast_unaligned_accesses()): a nop falling into the slow copy, "
            f"written into a jump to the fast one.  Every way into the scalar copy meets it "
            f"first: {entries}.")
    if "clear_user" in ch.kinds:
        text += f"  __clear_user's body is replaced by {names[0]}'s too."
    return _wrap(text + "  The rest of the file is unchanged.")


def configs() -> list[str]:
    return _wrap("With CONFIG_RISCV_PROBE_UNALIGNED_ACCESS and jump labels the branch is "
                 "as above; until the probe has run (an arch_initcall) the key is off and the "
                 "slow copy runs.  Built for fast misaligned access "
                 "(CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS) it is the same 4-byte jump, "
                 "always there.  Otherwise (no probe, or no jump labels) it is nothing and "
                 "the fast copy is not built: the slow copy alone, as before this patch.")


def cores(sp) -> list[str]:
    out = _wrap("The probe times a copy of misaligned doublewords against a copy of bytes "
                "(8064 bytes, warm) on each hart.  Run on copygen's cost profiles (modelled, "
                "not measured), it picks for each core:")
    out += [f"    {'core':<10} {'words':>9} {'bytes':>7}  {'probe':<5}  runs"]
    for p in sp.probes:
        out.append(f"    {p.profile:<10} {p.words:>9} {p.bytes:>7}  {p.verdict():<5}  "
                   f"the {p.verdict()} copy")
    return out


def cost(sp) -> list[str]:
    if not sp.cost:
        return []
    lines = []
    for prof in dict.fromkeys(r.profile for r in sp.cost):
        mine = [r for r in sp.cost if r.profile == prof]
        for align in ("aligned", "misaligned"):
            d = [r.after - r.before for r in mine if r.align == align]
            if d:
                lines.append(f"{prof} {align} {min(d):+.0f} to {max(d):+.0f}")
    sizes = sorted({r.size for r in sp.cost})
    return _wrap(f"The branch costs the slow copy one nop: modelled cycles per call with it, "
                 f"against the same file built without the probe ({sizes[0]} to {sizes[-1]} "
                 f"bytes): " + "; ".join(lines) + ".")


def tables(ch: message.Change, sp) -> list[str]:
    out: list[str] = []
    for p in sp.probes:
        rows = [r for r in ch.rows if r.profile == p.profile]
        if not rows:
            continue
        body = sp.fast if p.fast else sp.dispatcher
        out += ["", *_wrap(f"On {p.profile}, misaligned access {p.verdict()}: {body}."),
                *message.speed(rows, ch.calibration), "", *message.table(rows)]
        out += versus([r for r in sp.versus if r.profile == p.profile], p.profile, sp)
    return out


def versus(rows, profile: str, sp) -> list[str]:
    """What a core that runs the fast copy gains or loses against the slow
    one it would run without it: the probe's key is one for every fast
    core, so a case where the fast copy is slower is said, not hidden."""
    if not rows:
        return []

    def change(r) -> float:
        return 100 * (r.after - r.before) / r.before
    fewer = sum(r.after < r.before for r in rows)
    more = [r for r in rows if r.after > r.before]
    text = (f"Against the slow copy, {sp.dispatcher}, which {profile} would run without "
            f"the fast one: fewer cycles in {fewer} of the {len(rows)} cases, more in "
            f"{len(more) or 'none'}")
    if more:
        worst = max(more, key=change)
        text += (f" (at worst {change(worst):+.1f}%, {worst.routine}, {worst.size} bytes, "
                 f"{worst.align})")
    best = min(rows, key=change)
    return [""] + _wrap(text + f"; at best {change(best):+.1f}% ({best.size} bytes, {best.align}).")


def _verdicts(ps: list[Proof]) -> dict[str, str]:
    return {p.symbol: p.verdict for p in ps}


def proofs(ch: message.Change, on: list[Proof], sp) -> list[str]:
    before = _verdicts([p for k in ch.kinds for p in ch.before.get(k, [])])
    on_v, comp = _verdicts(on), {r.symbol.removesuffix("+speeds"): r for r in sp.composed}
    out = ["Proofs (copygen verify: the linked machine code under Z3, every n):",
           f"    {'entry point':<34} {'before':<9} {'key off':<8} {'key on':<8} both"]
    for k in ch.kinds:
        for p in ch.after.get(k, []):
            c = comp.get(p.symbol)
            both = "-" if c is None else ("proved" if all(
                st == "proved" for cl, st in c.status.items() if cl not in PROPERTIES) else "not")
            out.append(f"    {p.symbol:<34} {before.get(p.symbol, '-'):<9} {p.verdict:<8} "
                       f"{on_v.get(p.symbol, '-'):<8} {both}")
    s = sp.site
    out += [""] + _wrap(
        f"The static branch, read from the linked code: the one __jump_table entry for {KEY} "
        f"is the first instruction of {sp.dispatcher}, a nop as linked; with the key on it "
        f"is written as `j {sp.fast}` ({s.target - s.code:+#x}).  Each key state is proved "
        f"whole, every entry point that reaches the new code with the branch in it, and the "
        f"key's choice by a lemma: a call meets the branch once, at entry, so its return and "
        f"its stores are those of one state, and C1-C6 and B1 of both give them of the whole "
        f"(Z3).", "  ")
    return out + not_whole(sp)


def not_whole(sp) -> list[str]:
    """The clauses the composition leaves unproved, if any (its last paragraph)."""
    bad = sorted({c for r in sp.composed for c, st in r.status.items()
                  if st != "proved" and c not in PROPERTIES}, key=list(CLAUSES).index)
    return [""] + _wrap("Not proved of the whole: " + ", ".join(bad) + ".", "  ") if bad else []


def why(ch: message.Change) -> list[str]:
    broken: dict[str, set] = {}
    for k in ch.kinds:
        for p in ch.before.get(k, []):
            for c, st in p.status.items():
                if st == "violated" and c not in PROPERTIES:
                    broken.setdefault(c, set()).add(p.symbol)
    if not broken:
        return []
    order = sorted(broken, key=list(CLAUSES).index)
    return _wrap("Before this patch the old code has " + "; ".join(
        f"{c} violated ({CLAUSES[c]}) at {', '.join(sorted(broken[c]))}" for c in order)
        + "." + ("" if ch.draft else "  Both new copies prove every clause.")) + [""]


def commit_message(ch: message.Change, on: list[Proof], sp, version: str, command: str,
                   sources: list[tuple[str, str]], signoff: str) -> str:
    names = (sources[0][1], sources[1][1])
    body = [subject(ch), "", *changed(ch, sp, names), "", *configs(), "", *why(ch), *cores(sp)]
    body += ["", *cost(sp)] if sp.cost else []
    body += tables(ch, sp)
    body += ["", *ch.rules] if ch.rules else []
    body += ["", *proofs(ch, on, sp)]
    if ch.kunit:
        body += ["", "KUnit (Kbuild, qemu-system-riscv64), tests passed before -> after:", *ch.kunit]
    slow = message.reproduce(version, command, sources[0][0], names[0], ch.kinds)
    fast = message.reproduce(version, command, sources[1][0], names[1], ("copy_user",))
    body += ["", *slow, "", f"{names[1]}:", *fast[fast.index("") + 1:], "",
             f"Signed-off-by: {signoff}"]
    return "\n".join(line.rstrip() for line in body) + "\n"
