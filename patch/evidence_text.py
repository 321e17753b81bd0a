"""The evidence sections of a patch's commit message (patch.message): the
modelled and the measured speed, each a paragraph and a table of cycles
before and after per cost profile, routine, size and alignment class; the
proof summary of both versions per entry point; with --test kunit, one
line per KUnit suite before and after, and copygen's fault suite's first
failing call on the unpatched tree quoted as evidence.  Every line fits
checkpatch's 75 columns (WIDTH, `wrap`).

Role: text only.  May import patch.evidence, verify.contract.clauses, kernel.faultsuite (the
suite's name) and the standard library.
"""
from __future__ import annotations

import textwrap

from copygen.kernel.faultsuite import SUITE as FAULT_SUITE
from copygen.patch.evidence import Proof, Row
from copygen.verify.contract.clauses import CLAUSES, PROPERTIES


WIDTH = 72


def wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent) or [""]


def not_proved(proofs: dict[str, list[Proof]], kinds, only: tuple[str, ...] | None = None
            ) -> dict[str, list[Proof]]:
    """Clause -> the entry points where it is not proved (with `only`:
    where its status is one of those)."""
    out: dict[str, list[Proof]] = {}
    for k in kinds:
        for p in proofs.get(k, []):
            for c, st in p.status.items():
                if st != "proved" and c not in PROPERTIES and (only is None or st in only):
                    out.setdefault(c, []).append(p)
    return out


def mean_change(rows: list[Row]) -> float:
    """Mean relative change of modelled cycles (negative: faster)."""
    return sum((r.after - r.before) / r.before for r in rows) / len(rows) if rows else 0.0


def faster(rows: list[Row]) -> bool:
    """What a subject may call faster: fewer cycles on the mean, and no
    case more than 1 % slower."""
    return bool(rows) and mean_change(rows) < -0.005 and all(r.after <= r.before * 1.01 for r in rows)


def speed(rows: list[Row], calibration: dict[str, str]) -> list[str]:
    """How the modelled cycles move, best and worst case named, and how far
    the model is to be trusted."""
    def change(r: Row) -> float:
        return 100 * (r.after - r.before) / r.before

    def case(r: Row) -> str:
        return f"{r.routine}, {r.size} bytes, {r.align}"
    fewer = sum(r.after < r.before for r in rows)
    slower = sum(r.after > r.before for r in rows)
    best, worst = min(rows, key=change), max(rows, key=change)
    profiles = list(dict.fromkeys(r.profile for r in rows))
    where = "; ".join(f"{p}, {calibration.get(p) or 'of unknown error'}" for p in profiles)
    if not fewer and not slower:        # no best or worst case to name
        return wrap(f"Modelled by copygen's cost profile {where} (not measured): the same "
                     f"cycles in all {len(rows)} cases below.  Cycles before and after:")
    return wrap(f"Modelled by copygen's cost profile {where} (not measured): "
                 f"fewer cycles in {fewer} of the {len(rows)} "
                 f"cases below, more in {slower or 'none'}; mean {100 * mean_change(rows):+.1f}%, "
                 f"from {change(best):+.1f}% ({case(best)}) to {change(worst):+.1f}% "
                 f"({case(worst)}).  Cycles before and after:")


def board_speed(rows: tuple[Row, ...], where: str) -> list[str]:
    """How the measured cycles move, said apart from the model's."""
    fewer = sum(r.after < r.before for r in rows)
    slower = sum(r.after > r.before for r in rows)
    return wrap(f"{where[0].upper() + where[1:]}, the tree's routines and these alike "
                 f"(copygen hwbench): "
                 f"fewer cycles in {fewer} of the {len(rows)} cases measured, more in "
                 f"{slower or 'none'}; mean {100 * mean_change(list(rows)):+.1f}%.  "
                 f"Cycles before and after:")


def table(rows: list[Row], calibration: dict[str, str] | None = None) -> list[str]:
    """Cycles before and after per profile: one line per size, each
    routine's alignment classes side by side (four to a table)."""
    out: list[str] = []
    profiles = list(dict.fromkeys(r.profile for r in rows))
    for prof in profiles:
        mine = [r for r in rows if r.profile == prof]
        if len(profiles) > 1:
            out += [f"  {prof}:"]
        cells = list(dict.fromkeys((r.routine, r.align) for r in mine))
        for k in range(0, len(cells), 4):
            part = cells[k:k + 4]
            heads = list(dict.fromkeys(c[0] for c in part))
            line = "       "
            for h in heads:
                line += f"{h:<{15 * sum(c[0] == h for c in part)}}"
            out += [line.rstrip(), "   size  " + "".join(f"{c[1]:<15}" for c in part).rstrip()]
            for size in dict.fromkeys(r.size for r in mine):
                got = {(r.routine, r.align): r for r in mine if r.size == size}
                out.append(f"  {size:>5}" + "".join(
                    f"  {got[c].before:>6.0f} {got[c].after:>6.0f}" if c in got else " " * 15
                    for c in part).rstrip())
            out.append("")
    return out[:-1]


def proofs(before: dict[str, list[Proof]], after: dict[str, list[Proof]], kinds,
           skipped: tuple[str, ...] = ()) -> list[str]:
    """Verdicts before and after per entry point, the clauses proved, what is not."""
    out = ["Proofs (copygen verify: the linked machine code under Z3, every n):",
           f"    {'entry point':<34} {'before':<10} after"]
    for k in kinds:
        old = {p.symbol: p.verdict for p in before.get(k, [])}
        out += [f"    {p.symbol:<34} {old.get(p.symbol, '-'):<10} {p.verdict}"
                for p in after.get(k, [])]
    for c, ps in sorted(not_proved(after, kinds, ("violated", "unknown")).items()):
        out += textwrap.wrap(f"{c} {ps[0].status[c]} after at {', '.join(p.symbol for p in ps)}",
                             WIDTH, initial_indent="      ", subsequent_indent="        ")
    proved = sorted({c for k in kinds for p in after.get(k, []) for c, st in p.status.items()
                     if st == "proved" and c not in PROPERTIES}, key=list(CLAUSES).index)
    if skipped:
        out += [""] + wrap("Not proved here, although they reach the new code: "
                            + ", ".join(skipped) + ".", "  ")
    if skipped or not_proved(after, kinds):   # else the message's own sentence says it
        out += [""] + wrap("Proved after it: " + ", ".join(proved) + ".", "  ")
    return out


def kunit_lines(base: list, patched: list) -> tuple[str, ...]:
    """One line per KUnit suite: tests passed before and after, without and
    with the V extension (kernel.kunit.Run lists, in the same order); then,
    after a blank line, fault_evidence's paragraph when there is one
    (kunit_parts takes them apart)."""
    out = []
    names = [s.name for s in base[0].suites] if base else []
    for name in names:
        parts = []
        for b, a in zip(base, patched):
            sb = next((s for s in b.suites if s.name == name), None)
            sa = next((s for s in a.suites if s.name == name), None)
            if sb is None or sa is None:
                continue
            tag = "with V" if a.vector else "no V"
            parts.append(f"{tag} {sb.passed}/{sb.total} -> {sa.passed}/{sa.total}")
        out.append(f"  {name:<9} " + ", ".join(parts))
    limit = next((r.vector_threshold for r in patched if r.vector and r.vector_threshold), None)
    if limit:
        out.append(f"  (with V, user copies of {limit} bytes or more take the vector path)")
    evidence = fault_evidence(base, patched)
    return tuple(out + (["", *evidence] if evidence else []))


def kunit_parts(lines: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(the per-suite lines, the fault suite's evidence paragraph) of
    Change.kunit."""
    lines = list(lines)
    if "" in lines:
        at = lines.index("")
        return lines[:at], lines[at + 1:]
    return lines, []


def _suite(run, name: str):
    return next((s for s in run.suites if s.name == name), None)


def _per_boot(runs: list, text) -> str:
    """`text(run)` of each boot, said once when every boot gives the same."""
    said = [text(r) for r in runs]
    if len(set(said)) == 1:
        return said[0] + (" without and with V" if len(runs) > 1 else "")
    return ", ".join(f"{t} {'with' if r.vector else 'without'} V" for r, t in zip(runs, said))


def fault_evidence(base: list, patched: list) -> list[str]:
    """The fault suite's failure on the unpatched tree, quoted as evidence
    (kernel.kunit.Run lists): how many of its cases fail before, the
    first failing call as the suite names it, and what the same boots
    give after the patch.  Nothing when the suite passed before."""
    before = [r for r in base if _suite(r, FAULT_SUITE)]
    after = [r for r in patched if _suite(r, FAULT_SUITE)]
    failing = {t for r in before for t in _suite(r, FAULT_SUITE).failed}
    if not failing:
        return []
    first = next((case["first"] for r in before for name, case in r.fault.items()
                  if not case["ok"] and case.get("first")), "")
    fails = _per_boot(before, lambda r: f"{len(_suite(r, FAULT_SUITE).failed)} of its "
                                        f"{_suite(r, FAULT_SUITE).total} cases")
    quoted = f"; the first failing call: {first.rstrip('.')}" if first else ""
    still = failing & {t for r in after for t in _suite(r, FAULT_SUITE).failed}
    if after and still == failing:
        text = (f"Before and after this patch copygen's fault suite ({FAULT_SUITE}, KUnit in "
                f"QEMU) fails {fails}, the same cases{quoted}.  This patch does not fix them.")
    else:
        got = (_per_boot(after, lambda r: f"{_suite(r, FAULT_SUITE).passed}/"
                                          f"{_suite(r, FAULT_SUITE).total}")
               if after else "not booted")
        text = (f"Before this patch copygen's fault suite ({FAULT_SUITE}, KUnit in QEMU) fails "
                f"{fails}{quoted}.  With the patch: {got}"
                + (f" ({len(still)} of the {len(failing)} still fail)." if still else "."))
    return wrap(text)
