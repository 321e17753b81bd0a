"""Semantic checks: raw items from gen.front.parse -> a validated, frozen Strategy.

Every rejected input raises CopygenError at the offending setting with a
reason and a hint; adjustments that keep the code correct (a threshold raised
so the first block cannot overrun the buffers: the 2021 bug of docs/contract.md, B1) become
warnings.  A target's `profile` is checked against the cost profiles the
caller names (gen cannot ask emu; the command line passes them).  Every point
of a sweep's parameter space goes through the same checks as a routine
(a routine's phases: gen.front.validate_phases).
May import copygen.errors, gen.front.parse, gen.front.registers, gen.front.strategy,
gen.front.validate_kinds, gen.front.validate_phases, gen.front.validate_sizes,
gen.front.validate_vector.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Collection
from pathlib import Path

from copygen.errors import CopygenError, Loc, Warning_
from copygen.gen.front.parse import Item, Setting, parse_text, read_source
from copygen.gen.front.registers import jump_setting, reserve_setting
from copygen.gen.front.strategy import (ClearUser, CopyUser, MemmoveSpec, Strategy, StringLib, Sweep,
                                  Target)
from copygen.gen.front.validate_kinds import FILLS
from copygen.gen.front.validate_phases import routine_phases, settings_by_key
from copygen.gen.front.validate_sizes import check_unroll
from copygen.gen.front.validate_vector import vector_phase

def _check_profile(name: str, loc: Loc, profiles: Collection[str] | None) -> None:
    """An unknown profile is an error here, at its line, not later in bench.
    A path to an existing .toml is accepted, as emu.timing.profile.load_profile does."""
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
    reserve = reserve_setting(s["reserve"]) if "reserve" in s else ()
    jump = jump_setting(s["jump"], reserve) if "jump" in s else None
    return Target(item.name, xlen, s["misaligned"].values[0], profile, item.loc, reserve, jump)


def _memmove(item: Item, memcpy_asm: bool) -> MemmoveSpec:
    s = settings_by_key(item)
    forward = s["forward"].values[0] if "forward" in s else "memcpy"
    form = s["form"].values[0] if "form" in s else "c"
    if form == "asm" and not (memcpy_asm and forward == "memcpy"):
        raise CopygenError("memmove's `form asm` puts memmove in memcpy.S, which branches into "
                           "memcpy: it needs `forward memcpy` and memcpy with `form asm`",
                           s["form"].loc, hint="add `form asm` to memcpy and `forward memcpy` "
                                               "here, or remove the line")
    return MemmoveSpec(forward, s["backward"].values[0] if "backward" in s else "words", form)


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
    memcpy = routine_phases(fns["memcpy"], "memcpy", target, warnings)
    move = _memmove(fns["memmove"], memcpy.form == "asm") if "memmove" in fns else MemmoveSpec()
    return StringLib(item.name, target, memcpy, move,
                     routine_phases(fns["memset"], "memset", target, warnings), item.loc)


SWEEP_AXES = {"sweep_small": "small", "sweep_words": "words", "sweep_shift": "shift",
              "sweep_align": "align", "sweep_tail": "tail", "sweep_fault": "fault",
              "sweep_then_words": "then_words", "sweep_then_shift": "then_shift",
              "sweep_ends": "ends", "sweep_inline": "inline", "sweep_expect": "expect",
              "sweep_vector_above": "vector_above", "sweep_vector_lmul": "vector_lmul",
              "sweep_vector_loads": "vector_loads", "sweep_vector_sew": "vector_sew"}
# axes whose values are the phase setting's one value each
SINGLE_VALUED = ("align", "tail", "fault", "ends", "inline", "expect", "vector_lmul", "vector_loads",
                 "vector_sew")
# vector axes: the position of their knob in the routine's `vector` setting
# (e8, m8, above N, loads plain[, vlen range])
VECTOR_SLOTS = {"vector_sew": 0, "vector_lmul": 1, "vector_above": 2, "vector_loads": 3}
SWEEP_KINDS = ("copy_user", "clear_user")
# the functions of a string block a sweep may tune (memmove reuses memcpy's phases)
STRING_FNS = ("memcpy", "memset")
# The tuner benches every point, seconds each: a bigger space is a mistake,
# and checking each of its points would hold `check` up without bound.
MAX_SWEEP_POINTS = 100_000


def axis_choices(axis: Setting, base: dict[str, Setting]) -> list[tuple]:
    """The distinct values one axis gives its phase, as that phase setting's
    values.  An axis without schedules keeps the routine's own schedule."""
    name = SWEEP_AXES[axis.key]
    if name in SINGLE_VALUED:
        return list(dict.fromkeys((v,) for v in axis.values))
    if name in ("small", "vector_above"):
        return list(dict.fromkeys((v,) for v in axis.values[0]))
    if len(axis.values) > 1:
        schedules = [(sch,) for sch in axis.values[1]]
    elif name in base and base[name].values[0] != "off":
        schedules = [base[name].values[1:2]]
    else:
        schedules = [()]
    return list(dict.fromkeys((u,) if u == "off" else (u, *sch)
                              for u in axis.values[0] for sch in schedules))


def describe_point(point: dict[str, tuple]) -> str:
    words = {"small": "small below", "words": "words unroll", "shift": "shift unroll",
             "align": "align", "tail": "tail", "fault": "fault",
             "then_words": "then words unroll", "then_shift": "then shift unroll",
             "ends": "ends", "inline": "inline", "expect": "expect",
             "vector_above": "vector above", "vector_lmul": "vector lmul", "vector_loads": "vector loads",
             "vector_sew": "vector sew"}
    parts = []
    for name, values in point.items():
        word = words[name].replace(" unroll", "") if values[0] == "off" else words[name]
        text = f"{word} {values[0]}"
        parts.append(text + (f" schedule {values[1]}" if len(values) > 1 else ""))
    return ", ".join(parts)


def sweep_point_error(base: Item, target: Target, point: dict[str, tuple],
                      locs: dict[str, Loc]) -> CopygenError | None:
    """Why the routine `base` with the point's settings is not valid (None:
    it is)."""
    settings = point_settings(settings_by_key(base), point, locs)
    routine = Item(base.kind, base.name, base.ref, tuple(settings.values()), base.loc)
    try:
        phases = routine_phases(routine, base.kind, target, [])
        if "vector" in settings:
            vector_phase(settings["vector"], base.kind, target, phases)
    except CopygenError as err:
        return err
    return None


def point_settings(base: dict[str, Setting], point: dict[str, tuple],
                   locs: dict[str, Loc]) -> dict[str, Setting]:
    """The routine's settings with a point's values: a phase axis replaces
    its phase setting; a vector axis replaces one knob of the `vector`
    setting, which then carries the location of the last such axis."""
    settings = dict(base)
    for name, values in point.items():
        if name in VECTOR_SLOTS:
            vec = list(settings["vector"].values)
            vec[VECTOR_SLOTS[name]] = values[0]
            settings["vector"] = Setting("vector", tuple(vec), locs[name])
        else:
            settings[name] = Setting(name, values, locs[name])
    return settings


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


def swept_routine(item: Item, routines: dict[str, Item]) -> tuple[Item, Item]:
    """(the routine sweep `item` tunes, the top-level block that holds it):
    a copy_user or clear_user routine is its own block; `LIB.memcpy` and
    `LIB.memset` are functions of string block LIB."""
    lib, _, fn = item.ref.partition(".")
    if lib not in routines:
        known = ", ".join(sorted(routines)) or "none"
        raise CopygenError(f"sweep `{item.name}` is for unknown routine `{lib}`",
                           item.ref_loc, hint=f"routines in this file: {known}")
    top = routines[lib]
    if not fn:
        if top.kind not in SWEEP_KINDS:
            raise CopygenError(f"sweep `{item.name}` is for `{lib}`, a string block",
                               item.ref_loc, hint=f"name the function it tunes: "
                                                  f"`{lib}.memcpy` or `{lib}.memset`")
        return top, top
    if top.kind != "string_block":
        raise CopygenError(f"sweep `{item.name}` is for `{item.ref}`, but `{lib}` is a "
                           f"{top.kind} routine, which has no functions", item.ref_loc,
                           hint=f"write `sweep {item.name} for {lib}`")
    if fn not in STRING_FNS:
        why = (": memmove has no phases of its own (it reuses memcpy's)"
               if fn == "memmove" else "")
        raise CopygenError(f"sweep `{item.name}` is for `{item.ref}`, not a function a sweep "
                           f"can tune{why}", item.ref_loc,
                           hint=f"sweep `{lib}.memcpy` or `{lib}.memset`")
    sub = next((f for f in top.settings if isinstance(f, Item) and f.kind == fn), None)
    if sub is None:
        raise CopygenError(f"sweep `{item.name}` is for `{item.ref}`, but string `{lib}` has "
                           f"no {fn} block", item.ref_loc, hint=f"add a {fn} block to `{lib}`")
    return sub, top


def _sweep(item: Item, routines: dict[str, Item], targets: dict[str, Target],
           warnings: list) -> Sweep:
    base, top = swept_routine(item, routines)
    axes = []
    for s in settings_by_key(item).values():
        name = SWEEP_AXES[s.key]
        if name == "shift" and base.kind in FILLS:
            raise CopygenError(f"a `shift` axis for {base.kind} `{item.ref}`: it has no "
                               "source, so shift copy does not apply", s.loc,
                               hint="remove the `shift` axis")
        if name == "then_shift" and base.kind in FILLS:
            raise CopygenError(f"a `then shift` axis for {base.kind} `{item.ref}`: it has no "
                               "source, so shift copy does not apply", s.loc,
                               hint="remove the axis")
        if name in VECTOR_SLOTS and "vector" not in settings_by_key(base):
            raise CopygenError(f"a `{name.replace('_', ' ')}` axis for `{item.ref}`, which has "
                               "no `vector` line", s.loc,
                               hint="add `vector e8 m8 above 768 loads plain` to the routine: "
                                    "the axis varies one knob of it")
        if name in ("words", "shift", "then_words", "then_shift"):
            for u in s.values[0]:
                if u != "off":
                    check_unroll(u, s.loc, name.replace("_", " "))
        axes.append((name, tuple(s.values)))
    if not axes:
        raise CopygenError(f"sweep `{item.name}` has no axis", item.loc,
                           hint="e.g. `words unroll [1, 2, 4, 8]`")
    _sweep_points(item, base, targets[top.ref], warnings)
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


def _user_routine(it: Item, tgt: Target, warnings: list) -> CopyUser | ClearUser:
    """A copy_user or clear_user routine, with its vector path if it has one."""
    phases = routine_phases(it, it.kind, tgt, warnings)
    vec = settings_by_key(it).get("vector")
    make = CopyUser if it.kind == "copy_user" else ClearUser
    return make(it.name, tgt, phases, it.loc,
                vector_phase(vec, it.kind, tgt, phases) if vec else None)


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
        if it.kind in ("copy_user", "clear_user"):
            made[it.kind] = _user_routine(it, tgt, warnings)
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
