"""Semantic checks: raw items from gen.parse -> a validated, frozen Strategy.

Every rejected input raises CopygenError at the offending setting with a
reason and a hint; adjustments that keep the code correct (a threshold raised
so the first block cannot overrun the buffers, DOMAIN.md §4, 2021) become
warnings.  A target's `profile` is checked against the cost profiles the
caller names (gen cannot ask emu; the command line passes them).  Every point
of a sweep's parameter space goes through the same checks as a routine.
May import gen.errors, gen.parse, gen.strategy, gen.schedule.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Collection
from pathlib import Path

from copygen.gen.errors import CopygenError, Loc, Warning_
from copygen.gen.parse import Item, Setting, parse_text, read_source
from copygen.gen.schedule import pipelined_limits
from copygen.gen.strategy import (MAX_UNROLL, SZREG, ClearUser, CopyUser, MemmoveSpec, Phases,
                          Strategy, StringLib, Sweep, Target)

REQUIRED = {
    "copy_user": ("small", "words", "tail", "fault"),
    "clear_user": ("small", "words", "tail", "fault"),
    "memcpy": ("small", "words", "tail"),
    "memset": ("small", "words", "tail"),
}
USER_ROUTINES = ("copy_user", "clear_user")
FILLS = ("clear_user", "memset")


def settings_by_key(item: Item) -> dict[str, Setting]:
    seen: dict[str, Setting] = {}
    for s in item.settings:
        if not isinstance(s, Setting):
            continue
        if s.key in seen:
            first = seen[s.key].loc
            raise CopygenError(f"`{s.key}` given twice in this block", s.loc,
                               hint=f"the first one is at line {first.line}; keep one")
        seen[s.key] = s
    return seen


def _check_profile(name: str, loc: Loc, profiles: Collection[str] | None) -> None:
    """An unknown profile is an error here, at its line, not later in bench.
    A path to an existing .toml is accepted, as emu.profile.load_profile does."""
    if profiles is None or name in profiles:
        return
    if name.endswith(".toml") and Path(name).is_file():
        return
    raise CopygenError(f"unknown cost profile `{name}`", loc,
                       hint=f"profiles: {', '.join(sorted(profiles)) or 'none'}")


def _target(item: Item, profiles: Collection[str] | None) -> Target:
    s = settings_by_key(item)
    for key in ("xlen", "misaligned"):
        if key not in s:
            raise CopygenError(f"target `{item.name}` does not say `{key}`", item.loc,
                               hint="a target needs `xlen 64` and `misaligned slow|fast`")
    xlen = s["xlen"].values[0]
    if xlen != 64:
        raise CopygenError(f"xlen {xlen} is not supported", s["xlen"].loc,
                           hint="copygen emits RV64 code only: write `xlen 64`")
    profile = item.name
    if "profile" in s:
        profile = s["profile"].values[0]
        _check_profile(profile, s["profile"].loc, profiles)
    return Target(item.name, xlen, s["misaligned"].values[0], profile, item.loc)


def _check_unroll(value: int, loc: Loc, what: str) -> None:
    if not 1 <= value <= MAX_UNROLL:
        raise CopygenError(f"{what} unroll {value} is outside 1..{MAX_UNROLL}", loc,
                           hint="unroll counts whole registers per block")


def _min_threshold(kind: str, align: str, block: int, fast: bool, tail: str) -> int:
    """Smallest size for which head + one whole block fit (no loop-entry check)."""
    head = SZREG - 1 if align != "none" else 0
    if kind in ("memcpy", "memset"):
        # C loops test their bound first: the head alone must fit, and tiny
        # sizes always have the byte path.
        return max(SZREG, head + (SZREG if tail == "overlap" else 0))
    return head + block


def _phases(item: Item, kind: str, target: Target, warnings: list) -> Phases:
    s = settings_by_key(item)
    for key in REQUIRED[kind]:
        if key not in s:
            what = f"{kind} `{item.name}`" if item.name else kind
            raise CopygenError(f"{what} has no `{key}` phase", item.loc,
                               hint=f"every {kind} needs: " + ", ".join(REQUIRED[kind]))
    if "fault" in s and kind not in USER_ROUTINES:
        raise CopygenError(f"`fault` does not apply to {kind}: kernel memory never faults",
                           s["fault"].loc, hint="remove the `fault` line")
    fast = target.fast_misaligned
    align = s["align"].values[0] if "align" in s else "dst"
    wv = s["words"].values
    word_unroll = wv[0]
    _check_unroll(word_unroll, s["words"].loc, "words")
    word_schedule = wv[1] if len(wv) > 1 else "loads_first"
    shift_unroll, shift_schedule = 0, "loads_first"
    if "shift" in s:
        sv = s["shift"].values
        if kind in FILLS and sv[0] != "off":
            raise CopygenError(f"{kind} has no source: shift copy does not apply",
                               s["shift"].loc, hint="remove the `shift` line")
        if sv[0] != "off":
            shift_unroll = sv[0]
            _check_unroll(shift_unroll, s["shift"].loc, "shift")
            shift_schedule = sv[1] if len(sv) > 1 else "loads_first"
            if fast:
                warnings.append(Warning_(
                    "shift copy on a target with fast misaligned access is pointless; "
                    "the word loop already takes misaligned sources", s["shift"].loc,
                    hint="write `shift off`"))
    if align == "src" and not fast:
        raise CopygenError("`align src` leaves the destination misaligned, and this target "
                           "traps misaligned stores", s["align"].loc,
                           hint="use `align dst` (shift copy handles the source)")
    if align == "none" and not fast:
        raise CopygenError("without an alignment head the word loop makes misaligned "
                           "accesses, which this target traps (misaligned slow)", s["align"].loc,
                           hint="use `align dst`")
    tail = s["tail"].values[0]
    if tail == "overlap" and not fast:
        raise CopygenError("an overlapping word tail is a misaligned access; this target "
                           "traps them (misaligned slow)", s["tail"].loc,
                           hint="use `tail bytes` or `tail words`")
    limits = pipelined_limits()
    if "words" in s and word_schedule == "paired":
        raise CopygenError("schedule paired interleaves a shift copy's shifts with its loads "
                           "and stores; a word loop has no shifts", s["words"].loc,
                           hint="use loads_first, interleave or pipelined for `words`")
    if kind not in FILLS:
        if word_schedule == "pipelined" and word_unroll > limits["words"]:
            raise CopygenError(f"words unroll {word_unroll} schedule pipelined keeps "
                               f"{word_unroll} words live, but only {limits['words']} "
                               "caller-saved registers are free", s["words"].loc,
                               hint=f"unroll at most {limits['words']}, or use loads_first")
        if shift_unroll and shift_schedule == "pipelined" and shift_unroll > limits["shift"]:
            raise CopygenError(f"shift unroll {shift_unroll} schedule pipelined needs "
                               f"{shift_unroll} words live besides prev and two temporaries;"
                               f" only {limits['shift']} fit", s["shift"].loc,
                               hint=f"unroll at most {limits['shift']}")
    then = _then_classes(s, kind, word_unroll, shift_unroll, limits)
    threshold = _threshold(s, kind, align, word_unroll, shift_unroll, fast, tail, warnings,
                           tested=then[0] > 0)
    return Phases(threshold, align, word_unroll, word_schedule, shift_unroll,
                  shift_schedule, tail, s["fault"].values[0] if "fault" in s else "exact",
                  *then)


def _then_class(s: dict[str, Setting], key: str, first: int, what: str,
                limit: int) -> tuple[int, str]:
    """(unroll, schedule) of one `then` class; (0, loads_first) when absent."""
    if key not in s:
        return 0, "loads_first"
    v, loc = s[key].values, s[key].loc
    _check_unroll(v[0], loc, f"then {what}")
    if v[0] >= first:
        raise CopygenError(f"then {what} unroll {v[0]} is not smaller than the first "
                           f"{what} loop's unroll {first}", loc,
                           hint="the second class takes what the first leaves: "
                                "give it a smaller block")
    schedule = v[1] if len(v) > 1 else "loads_first"
    if schedule == "paired" and what == "words":
        raise CopygenError("schedule paired is for shift copies; a word loop has no shifts",
                           loc, hint="use loads_first, interleave or pipelined")
    if schedule == "pipelined" and v[0] > limit:
        raise CopygenError(f"then {what} unroll {v[0]} schedule pipelined keeps too many "
                           f"words live; only {limit} fit", loc,
                           hint=f"unroll at most {limit}, or use loads_first")
    return v[0], schedule


def _then_classes(s: dict[str, Setting], kind: str, word_unroll: int, shift_unroll: int,
                  limits: dict[str, int]) -> tuple[int, str, int, str]:
    """The second size class of the word and shift loops (`then words`, `then shift`)."""
    for key in ("then_words", "then_shift"):
        if key in s and kind not in USER_ROUTINES:
            raise CopygenError(f"`{key.replace('_', ' ')}` applies to copy_user and "
                               f"clear_user, not {kind}", s[key].loc,
                               hint="string routines test their loops in C already")
    if "then_shift" in s:
        if kind in FILLS:
            raise CopygenError(f"{kind} has no source: shift copy does not apply",
                               s["then_shift"].loc, hint="remove the `then shift` line")
        if not shift_unroll:
            raise CopygenError("`then shift` without a shift copy", s["then_shift"].loc,
                               hint="add `shift unroll N`, or remove this line")
        if "then_words" not in s:
            raise CopygenError("`then shift` needs size classes: a `then words` line",
                               s["then_shift"].loc,
                               hint="add e.g. `then words unroll 1` (loops then test their entry)")
    words = _then_class(s, "then_words", word_unroll, "words",
                        limits["words"] if kind not in FILLS else MAX_UNROLL)
    shift = _then_class(s, "then_shift", shift_unroll, "shift", limits["shift"])
    return (*words, *shift)


def _threshold(s, kind, align, word_unroll, shift_unroll, fast, tail, warnings,
               tested: bool = False) -> int:
    block = max(word_unroll, shift_unroll) * SZREG
    need = _min_threshold(kind, align, block, fast, tail)
    if tested:
        # loops test their entry: only the bottom-tested head must fit, and
        # the shift copy's first aligned load needs one byte after it
        need, block = (SZREG if align != "none" else 1), 0
    value = s["small"].values[0]
    if value == "auto":
        return need
    if value > 1 << 20:
        raise CopygenError(f"threshold {value} is larger than 1 MiB: every copy would take "
                           "the byte loop", s["small"].loc, hint="thresholds are bytes")
    if value < need:
        why = (f"the first {block}-byte block after a head of up to {SZREG - 1} bytes could "
               "run past both buffers (the 2021 uaccess.S bug, DOMAIN.md §4)" if block else
               f"the alignment head of up to {SZREG - 1} bytes could run past the end")
        warnings.append(Warning_(
            f"threshold raised from {value} to {need}: below it {why}", s["small"].loc,
            hint=f"write `small below {need}` (or `auto`) to silence this"))
        return need
    return value


def _memmove(item: Item) -> MemmoveSpec:
    s = settings_by_key(item)
    return MemmoveSpec(s["forward"].values[0] if "forward" in s else "memcpy",
                       s["backward"].values[0] if "backward" in s else "words")


def _string(item: Item, target: Target, warnings: list) -> StringLib:
    fns: dict[str, Item] = {}
    for fn in item.settings:
        if fn.kind in fns:
            raise CopygenError(f"`{fn.kind}` given twice in string `{item.name}`", fn.loc,
                               hint="keep one")
        fns[fn.kind] = fn
    for need in ("memcpy", "memset"):
        if need not in fns:
            raise CopygenError(f"string `{item.name}` has no `{need}` block", item.loc,
                               hint="a string block needs memcpy and memset; memmove is optional")
    move = _memmove(fns["memmove"]) if "memmove" in fns else MemmoveSpec()
    return StringLib(item.name, target, _phases(fns["memcpy"], "memcpy", target, warnings),
                     move, _phases(fns["memset"], "memset", target, warnings), item.loc)


SWEEP_AXES = {"sweep_small": "small", "sweep_words": "words", "sweep_shift": "shift",
              "sweep_align": "align", "sweep_tail": "tail", "sweep_fault": "fault",
              "sweep_then_words": "then_words", "sweep_then_shift": "then_shift"}
# axes whose values are the phase setting's one value each
SINGLE_VALUED = ("align", "tail", "fault")
SWEEP_KINDS = ("copy_user", "clear_user")
# The tuner benches every point, seconds each: a bigger space is a mistake,
# and checking each of its points would hold `check` up without bound.
MAX_SWEEP_POINTS = 100_000


def axis_choices(axis: Setting, base: dict[str, Setting]) -> list[tuple]:
    """The distinct values one axis gives its phase, as that phase setting's
    values.  An axis without schedules keeps the routine's own schedule."""
    name = SWEEP_AXES[axis.key]
    if name in SINGLE_VALUED:
        return list(dict.fromkeys((v,) for v in axis.values))
    if name == "small":
        return list(dict.fromkeys((v,) for v in axis.values[0]))
    if len(axis.values) > 1:
        schedules = [(sch,) for sch in axis.values[1]]
    elif name in base and base[name].values[0] != "off":
        schedules = [base[name].values[1:2]]
    else:
        schedules = [()]
    return list(dict.fromkeys((u, *sch) for u in axis.values[0] for sch in schedules))


def describe_point(point: dict[str, tuple]) -> str:
    words = {"small": "small below", "words": "words unroll", "shift": "shift unroll",
             "align": "align", "tail": "tail", "fault": "fault",
             "then_words": "then words unroll", "then_shift": "then shift unroll"}
    parts = []
    for name, values in point.items():
        text = f"{words[name]} {values[0]}"
        parts.append(text + (f" schedule {values[1]}" if len(values) > 1 else ""))
    return ", ".join(parts)


def sweep_point_error(base: Item, target: Target, point: dict[str, tuple],
                      locs: dict[str, Loc]) -> CopygenError | None:
    """Why the routine `base` with the point's settings is not valid (None:
    it is)."""
    settings = {**settings_by_key(base), **{n: Setting(n, v, locs[n]) for n, v in point.items()}}
    routine = Item(base.kind, base.name, base.ref, tuple(settings.values()), base.loc)
    try:
        _phases(routine, base.kind, target, [])
    except CopygenError as err:
        return err
    return None


def _components(point: dict[str, tuple]) -> list[tuple]:
    """The single values a point is made of: (axis, position, value)."""
    return [(name, i, v) for name, values in point.items() for i, v in enumerate(values)]


def _sweep_points(item: Item, base: Item, target: Target, warnings: list) -> None:
    """Validate every point of the sweep as the routine it would make.  A
    value no point can use (every point holding it is invalid) is an error,
    located at the sweep; points invalid only in combination (unroll 16 with
    the pipelined schedule) are pruned by the tuner, and a warning says so."""
    base_settings = settings_by_key(base)
    axes = [(SWEEP_AXES[a.key], a) for a in settings_by_key(item).values()]
    choices = [axis_choices(a, base_settings) for _, a in axes]
    count = math.prod(len(c) for c in choices)
    if count > MAX_SWEEP_POINTS:
        raise CopygenError(f"sweep `{item.name}` has {count} points; at most "
                           f"{MAX_SWEEP_POINTS} are allowed", item.loc,
                           hint="narrow the axes")
    names, locs = [name for name, _ in axes], {name: a.loc for name, a in axes}
    valid_with: dict[tuple, bool] = {}
    bad: list[tuple[dict, CopygenError]] = []
    for values in itertools.product(*choices):
        point = dict(zip(names, values))
        err = sweep_point_error(base, target, point, locs)
        for c in _components(point):
            valid_with[c] = valid_with.get(c, False) or err is None
        if err is not None:
            bad.append((point, err))
    for point, err in bad:
        if any(not valid_with[c] for c in _components(point)):
            raise CopygenError(f"sweep `{item.name}`: the point {describe_point(point)} "
                               f"is not a valid {base.kind}: {err.message}", item.loc,
                               hint=err.hint)
    if bad:
        point, err = bad[0]
        warnings.append(Warning_(
            f"sweep `{item.name}`: {len(bad)} of {count} points are not valid {base.kind}s and "
            f"are pruned (the first, {describe_point(point)}: {err.message})", item.loc,
            hint="copygen tune lists each pruned point with its reason"))


def _sweep(item: Item, routines: dict[str, Item], targets: dict[str, Target],
           warnings: list) -> Sweep:
    if item.ref not in routines:
        known = ", ".join(sorted(routines)) or "none"
        raise CopygenError(f"sweep `{item.name}` is for unknown routine `{item.ref}`",
                           item.ref_loc, hint=f"routines in this file: {known}")
    base = routines[item.ref]
    if base.kind not in SWEEP_KINDS:
        raise CopygenError(f"sweep `{item.name}` is for `{item.ref}`, a string block",
                           item.ref_loc, hint="a sweep tunes one copy_user or clear_user routine")
    axes = []
    for s in settings_by_key(item).values():
        name = SWEEP_AXES[s.key]
        if name == "shift" and base.kind in FILLS:
            raise CopygenError(f"a `shift` axis for {base.kind} `{base.name}`: it has no "
                               "source, so shift copy does not apply", s.loc,
                               hint="remove the `shift` axis")
        if name == "then_shift" and base.kind in FILLS:
            raise CopygenError(f"a `then shift` axis for {base.kind} `{base.name}`: it has no "
                               "source, so shift copy does not apply", s.loc,
                               hint="remove the axis")
        if name in ("words", "shift", "then_words", "then_shift"):
            for u in s.values[0]:
                _check_unroll(u, s.loc, name.replace("_", " "))
        axes.append((name, tuple(s.values)))
    if not axes:
        raise CopygenError(f"sweep `{item.name}` has no axis", item.loc,
                           hint="e.g. `words unroll [1, 2, 4, 8]`")
    _sweep_points(item, base, targets[base.ref], warnings)
    return Sweep(item.name, item.ref, tuple(axes), item.loc)


def _sweeps(items: list[Item], routines: dict[str, Item],
            targets: dict[str, Target], warnings: list) -> tuple[Sweep, ...]:
    seen: dict[str, Sweep] = {}
    for it in items:
        if it.kind != "sweep":
            continue
        if it.name in seen:
            raise CopygenError(f"sweep name `{it.name}` used twice", it.loc,
                               hint=f"the first is at line {seen[it.name].loc.line}")
        seen[it.name] = _sweep(it, routines, targets, warnings)
    return tuple(seen.values())


def build_strategy(items: list[Item], file: str,
                   profiles: Collection[str] | None = None) -> Strategy:
    """The validated Strategy of a file's items.  `profiles`: the cost
    profile names a target may name (None: not checked)."""
    warnings: list[Warning_] = []
    targets: dict[str, Target] = {}
    for it in items:
        if it.kind == "target":
            if it.name in targets:
                raise CopygenError(f"target `{it.name}` defined twice", it.loc,
                                   hint=f"the first is at line {targets[it.name].loc.line}")
            targets[it.name] = _target(it, profiles)
    made: dict[str, object] = {}
    names: dict[str, Item] = {}
    for it in items:
        if it.kind in ("target", "sweep"):
            continue
        if it.name in names:
            raise CopygenError(f"routine name `{it.name}` used twice", it.loc,
                               hint=f"the first is at line {names[it.name].loc.line}")
        if it.kind in made:
            raise CopygenError(f"a second `{it.kind.replace('_block', '')}` routine: a file is "
                               "one kernel library variant and defines each symbol once",
                               it.loc, hint="put the variant in its own .copy file")
        if it.ref not in targets:
            known = ", ".join(sorted(targets)) or "none defined"
            raise CopygenError(f"unknown target `{it.ref}`", it.ref_loc,
                               hint=f"targets in this file: {known}")
        names[it.name] = it
        tgt = targets[it.ref]
        if it.kind == "copy_user":
            made[it.kind] = CopyUser(it.name, tgt, _phases(it, it.kind, tgt, warnings), it.loc)
        elif it.kind == "clear_user":
            made[it.kind] = ClearUser(it.name, tgt, _phases(it, it.kind, tgt, warnings), it.loc)
        else:
            made[it.kind] = _string(it, tgt, warnings)
    if not made:
        raise CopygenError("nothing to generate: no copy_user, clear_user or string block",
                           Loc(file, 1, 1), hint="see examples/*.copy")
    sweeps = _sweeps(items, names, targets, warnings)
    if "copy_user" in made and "clear_user" not in made:
        warnings.append(Warning_("no clear_user routine: uaccess.S will not define "
                                 "__clear_user, which the kernel also needs", Loc(file)))
    return Strategy(file, tuple(targets.values()), made.get("copy_user"),
                    made.get("clear_user"), made.get("string_block"), sweeps,
                    tuple(warnings))


def load_text(text: str, file: str = "<string>",
              profiles: Collection[str] | None = None) -> Strategy:
    return build_strategy(parse_text(text, file), file, profiles)


def load_file(path, profiles: Collection[str] | None = None) -> Strategy:
    """Read, parse and validate a .copy file; see build_strategy for `profiles`."""
    return load_text(read_source(path), str(path), profiles)
