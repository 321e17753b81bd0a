"""`copygen patch --routine vector_usercopy`: a strategy's vector phase into
a kernel tree's arch/riscv/lib/uaccess_vector.S, and its threshold into
arch/riscv/Kconfig.

Layouts of uaccess_vector.S, each recognised by its functions:
  6.8       __asm_vector_usercopy holds the loop and its own SUM handling
            (Linux 6.8 to about 6.15, e.g. the 6.12 LTS)
  mainline  __asm_vector_usercopy calls __asm_vector_usercopy_sum_enabled,
            which holds the loop and runs with SUM held (2025 and later)
A file that matches neither is refused at the line that does not fit.
Only the loop's body is replaced (with SUM handling in the 6.8 layout,
without in mainline's); every other line is kept byte for byte.  The
registers the mainline wrapper keeps live across its call (ra in a7 or
t6) must not be ones the body writes, or the patch is refused.

The Kconfig symbol RISCV_ISA_V_UCOPY_THRESHOLD's `default` becomes the
strategy's `above N`; nothing else in Kconfig changes.

The message carries the proofs before and after at every VLEN and the
table of modelled cycles of copy_to_user before and after under each
vector profile (patch.evidence.measure_vector: the tree's scalar copy
below the threshold, the loop and a clean kernel vector section from it
on), as a scalar patch's table.

Role: find the places, make the new texts and the message; change nothing
in the tree.  May import gen (lowering, emission, strategy), patch.kernelfile,
patch.message, patch.evidence (its records), copygen.errors and the standard library.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from copygen.errors import CopygenError, Loc
from copygen.gen.emission import asmtext
from copygen.gen.emission.emit import render_body, vector_setting
from copygen.gen.lower.lower_vector import vector_function
from copygen.gen.front.strategy import Strategy
from copygen.patch import kernelfile, message
from copygen.patch.evidence import VectorBench

VECTOR = "arch/riscv/lib/uaccess_vector.S"
KCONFIG = "arch/riscv/Kconfig"
THRESHOLD = "RISCV_ISA_V_UCOPY_THRESHOLD"
WRAPPER = "__asm_vector_usercopy"
LOOP = "__asm_vector_usercopy_sum_enabled"
LAYOUTS = {"6.8": f"{WRAPPER} holds the loop and sets SUM itself (Linux 6.8-6.15)",
           "mainline": f"{WRAPPER} calls {LOOP}, which holds the loop (2025 and later)"}
KIND = "vector_usercopy"
WIDTH = 72
CONFIG = re.compile(r"^config\s+(\w+)\s*$")
DEFAULT = re.compile(r"^(\s+default\s+)(\d+)(\s*)$")


@dataclass(frozen=True)
class Plan:
    layout: str
    symbol: str          # the function whose body is replaced
    text: str            # the new uaccess_vector.S
    kconfig: str         # the new arch/riscv/Kconfig
    old_threshold: int
    threshold: int


def _refuse(path: str, line: int, what: str) -> CopygenError:
    return CopygenError(what, Loc(path, line, 1),
                        hint="copygen patch knows the layouts: " + "; ".join(LAYOUTS.values()))


def layout(lines: list[str], path: str) -> tuple[str, kernelfile.Function]:
    """(layout, the function whose body the loop replaces)."""
    fns = kernelfile.functions(lines, path)
    if WRAPPER not in fns:
        first = next((f.start for f in fns.values()), 0)
        raise _refuse(path, first + 1, f"{path} has no {WRAPPER}")
    extra = [f for n, f in fns.items() if n not in (WRAPPER, LOOP)]
    if extra:
        raise _refuse(path, extra[0].start + 1, f"{path}: {extra[0].name} is in no known layout")
    if not any(kernelfile.FIXUP_MACRO.match(line) for line in lines):
        raise CopygenError(f"{path} defines no `fixup op reg addr lbl` macro", Loc(path, 1, 1),
                           hint="the generated loop marks its user accesses with the tree's own "
                                "fixup macro, as uaccess_vector.S has since 6.8")
    w = fns[WRAPPER]
    calls = [i for i in range(w.body_start, w.body_end)
             if (m := kernelfile.CALL.match(lines[i])) and m.group(1) == LOOP]
    if LOOP in fns and calls:
        return "mainline", fns[LOOP]
    if LOOP in fns:
        raise _refuse(path, w.start + 1, f"{path}: {LOOP} is there, but {WRAPPER} does not call it")
    if calls:
        raise _refuse(path, calls[0] + 1, f"{path}: {WRAPPER} calls {LOOP}, which is not there")
    return "6.8", w


def _body_registers(text: str) -> set[str]:
    regs: set[str] = set()
    for ln in asmtext.code_lines(text.splitlines()):
        regs |= set(kernelfile.REG.findall(ln.code))
    return regs


def new_kconfig(text: str, threshold: int, path: str = KCONFIG) -> tuple[str, int]:
    """(Kconfig with THRESHOLD's default set to `threshold`, the old default)."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, ln in enumerate(lines) if (m := CONFIG.match(ln)) and m.group(1) == THRESHOLD),
              None)
    if at is None:
        raise CopygenError(f"{path} has no `config {THRESHOLD}`", Loc(path, 1, 1),
                           hint="the vector user copy's threshold is a Kconfig default since 6.8")
    for i in range(at + 1, len(lines)):
        if CONFIG.match(lines[i]) or re.match(r"^(menu|endmenu|choice|if|endif|source)\b", lines[i]):
            break
        m = DEFAULT.match(lines[i].rstrip("\n"))
        if m:
            end = "\n" if lines[i].endswith("\n") else ""
            lines[i] = f"{m.group(1)}{threshold}{m.group(3)}{end}"
            return "".join(lines), int(m.group(2))
    raise CopygenError(f"`config {THRESHOLD}` has no numeric default", Loc(path, at + 1, 1),
                       hint="expected a line `default N` in its block")


def plan(st: Strategy, text: str, kconfig: str, path: str = VECTOR) -> Plan:
    """The new texts of both files, or a located CopygenError."""
    cu = st.copy_user
    if cu is None or cu.vector is None:
        raise CopygenError(f"{st.file} has no vector phase", hint="add a `vector` line to its "
                           "copy_user block (docs/vector.md)")
    lines = text.splitlines(keepends=True)
    lay, fn = layout(lines, path)
    held = lay == "mainline"
    body = render_body(vector_function(cu.vector, sum_held=held),
                       [f"copy_user {cu.name} for {cu.target.name}", vector_setting(cu.vector)])
    if held:
        keep = set(kernelfile.kept_live(lines, kernelfile.functions(lines, path), LOOP))
        clash = sorted(keep & _body_registers(body))
        if clash:
            raise CopygenError(f"{WRAPPER} keeps {', '.join(clash)} live across its call, and the "
                               "generated loop writes it", Loc(path, fn.start + 1, 1),
                               hint="the generated loop uses a0-a2, t0, t1")
    new = "".join(lines[:fn.body_start]) + body + "".join(lines[fn.body_end:])
    kc, old = new_kconfig(kconfig, cu.vector.threshold)
    return Plan(lay, fn.name, new, kc, old, cu.vector.threshold)


def subject(p: Plan) -> str:
    return f"riscv: lib: uaccess_vector: generated copy loop, threshold {p.threshold}"


def bench_lines(change: message.Change, bench: VectorBench) -> list[str]:
    """What the table times, the speed paragraph and the table."""
    old, new = bench.thresholds
    at = (f"{THRESHOLD} {old} before and {new} after" if old != new else f"{THRESHOLD} {new}")
    each = lambda d, unit="": ", ".join(f"{v}{unit} on {k}" for k, v in d.items())  # noqa: E731
    what = textwrap.wrap(
        f"The table times copy_to_user as a kernel with V runs it ({at}): below the threshold "
        f"the tree's scalar copy, which this patch does not change; from it on "
        f"{WRAPPER} inside a clean kernel vector section ({each(bench.section, ' cycles')}, "
        f"copygen's shim/vector_section.S), at each profile's VLEN ({each(bench.vlen)}).", WIDTH)
    return [*what, "", *message.speed(change.rows, change.calibration), "",
            *message.table(change.rows)]


def commit_message(p: Plan, st: Strategy, change: message.Change, version: str, command: str,
                   signoff: str, bench: VectorBench | None = None) -> str:
    """The commit message: what changed, why, the modelled cycles before
    and after (with `bench`), the proofs before and after."""
    v = st.copy_user.vector
    old = {q.symbol: q for q in change.before[KIND]}
    new = {q.symbol: q for q in change.after[KIND]}
    body = [("[DRAFT: NOT PROVED] " if change.draft else "") + subject(p), "",
            *textwrap.wrap(f"Replace the body of {p.symbol} ({p.layout} layout) by the loop "
                           f"copygen {version} generates from {st.file} "
                           f"(`{vector_setting(v)}`). " + (
                               f"Set the default of {THRESHOLD} from {p.old_threshold} to "
                               f"{p.threshold}, the strategy's threshold."
                               if p.threshold != p.old_threshold else
                               f"The default of {THRESHOLD} stays {p.threshold}, the "
                               "strategy's threshold."), WIDTH)]
    for sym, q in old.items():
        if q.status.get("V0") == "violated" and new.get(sym) and new[sym].status.get("V0") == "proved":
            body += ["", *textwrap.wrap(
                f"{sym}: the old fault exits leave vstart at the faulting element (clause V0 "
                f"violated): {q.detail.get('V0', '').split('; VLEN ')[0]}.  The new ones set it back to 0.", WIDTH)]
            break
    suites, evidence = message.kunit_parts(change.kunit)
    if evidence:
        body += ["", *evidence]
    if change.rows and bench is not None:
        body += ["", *bench_lines(change, bench)]
    body += ["", *message.proofs(change.before, change.after, (KIND,)),
             "    (each entry point at VLEN 128, 256, 512 and 1024)", ""]
    if change.kunit:
        body += ["KUnit (Kbuild, qemu-system-riscv64), tests passed before -> after:",
                 *suites, ""]
    if not change.rows:
        body += [*textwrap.wrap("Not benched here: the tree has no arch/riscv/lib/uaccess.S, "
                                "whose scalar copy runs below the threshold.", WIDTH), ""]
    body += ["Reproduce:", command, "", f"Signed-off-by: {signoff}"]
    return "\n".join(line.rstrip() for line in body) + "\n"
