"""The points of a sweep, each as a complete `.copy` file.

A sweep names one routine (a copy_user or clear_user routine, or memcpy or
memset of a string block) and axes of values; a point sets one value per
axis on that routine, and its variant is the base file with the routine's
settings replaced (every other block kept, sweeps dropped), written with
gen.front.unparse.  A point that is not a valid routine (valid values that do not
go together, e.g. unroll 16 with the pipelined schedule) is pruned, with the
validator's reason; a value no point can use is an error (gen.front.validate).

Role: sweep -> variants.  May import gen.front.parse, gen.front.unparse, gen.front.validate,
copygen.errors.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from copygen.errors import CopygenError
from copygen.gen.front.parse import Item, parse_text, read_source
from copygen.gen.front.unparse import file_text
from copygen.gen.front.validate import (SWEEP_AXES, axis_choices, build_strategy, describe_point,
                                  point_settings, settings_by_key, swept_routine, sweep_point_error)


@dataclass(frozen=True)
class Variant:
    point: tuple[tuple[str, tuple], ...]   # (phase, its values) per axis, in axis order
    text: str                              # a complete .copy file (the base file's blocks)
    alone: str                             # the targets and the swept routine only

    @property
    def label(self) -> str:
        return describe_point(dict(self.point))

    def as_dict(self) -> dict:
        return {name: list(values) for name, values in self.point}


@dataclass(frozen=True)
class Space:
    sweep: str
    routine: str           # the swept routine's name (`LIB.memcpy` for a string function)
    kind: str              # copy_user | clear_user | memcpy | memset
    variants: tuple[Variant, ...]
    pruned: tuple[tuple[str, str], ...] = ()    # (point label, the validator's reason)


def sweep_space(path: str, sweep: str | None = None, profiles=None) -> Space:
    """The variants of `sweep` in the file (the only sweep when None)."""
    text = read_source(path)
    items = parse_text(text, str(path))
    st = build_strategy(items, str(path), profiles)         # every point checked here
    names = [s.name for s in st.sweeps]
    if not names:
        raise CopygenError(f"{path} has no sweep block", hint="add `sweep NAME for ROUTINE { ... }`")
    if sweep is None:
        if len(names) > 1:
            raise CopygenError(f"{path} has {len(names)} sweeps: {', '.join(names)}",
                               hint="choose one with --sweep")
        sweep = names[0]
    if sweep not in names:
        raise CopygenError(f"no sweep `{sweep}` in {path}", hint=f"sweeps there: {', '.join(names)}")
    item = next(it for it in items if it.kind == "sweep" and it.name == sweep)
    routines = {it.name: it for it in items if it.kind not in ("target", "sweep")}
    base, top = swept_routine(item, routines)
    kept = [it for it in items if it.kind != "sweep"]
    base_settings = settings_by_key(base)
    axes = [(SWEEP_AXES[a.key], a) for a in settings_by_key(item).values()]
    choices = [axis_choices(a, base_settings) for _, a in axes]
    variants, pruned = [], []
    target = next(tg for tg in st.targets if tg.name == top.ref)
    locs = {name: a.loc for name, a in axes}
    for values in itertools.product(*choices):
        point = tuple((name, v) for (name, _), v in zip(axes, values))
        err = sweep_point_error(base, target, dict(point), locs)
        if err is not None:
            pruned.append((describe_point(dict(point)), err.message))
            continue
        settings = point_settings(base_settings, dict(point), locs)
        routine = replace(base, settings=tuple(settings.values()))
        block = routine if top is base else _with_function(top, routine)
        blocks = [block if it is top else it for it in kept]
        header = [f"{item.ref}: point of sweep `{sweep}` in {path}", describe_point(dict(point))]
        alone = [it for it in blocks if it.kind == "target" or it is block]
        variants.append(Variant(point, file_text(blocks, header), file_text(alone, header)))
    return Space(sweep, item.ref, base.kind, tuple(variants), tuple(pruned))


def _with_function(lib: Item, fn: Item) -> Item:
    """String block `lib` with its function of fn's kind replaced by `fn`."""
    return replace(lib, settings=tuple(fn if isinstance(f, Item) and f.kind == fn.kind else f
                                       for f in lib.settings))
