"""Semantic checks of a copy_user or clear_user routine's `vector` line ->
strategy.Vector.

What is refused, and why (each at the line, with a hint):
* in a copy_user, a line without `loads plain|ff` (a copy must say how it
  loads); in a clear_user, a line with `loads` (a clear only stores);
* a VLEN that is not a power of two, below 128 (the V extension's minimum,
  Zvl128b) or above 65536 (the spec's maximum); one above 1024, which the
  emulator and the prover do not model;
* on a target with slow misaligned access, elements wider than a byte: the
  source and destination of a user copy have any alignment, and an element
  access that is not aligned to its width may trap on such a core (RVV 1.0
  leaves misaligned element accesses to the implementation);
* a threshold below the scalar routine's own (`small below`): the vector
  path opens a kernel vector section (saving 32 registers of VLEN bits) for
  every call it takes, which never pays for calls the scalar byte loop
  handles; and a threshold of more than 1 MiB, as for `small below`.
Every integer LMUL (m1..m8) with every SEW up to ELEN = 64 is a legal vtype
on a V core, and v0's group of up to eight registers is free inside the
kernel's vector section, so no LMUL/SEW pair is refused as such.
May import copygen.errors, gen.front.parse, gen.front.strategy.
"""
from __future__ import annotations

from copygen.errors import CopygenError
from copygen.gen.front.parse import Setting
from copygen.gen.front.strategy import Phases, Target, Vector

VLEN_SPEC = (128, 65536)     # RVV 1.0: VLEN >= 128 for V (Zvl128b), <= 2**16
VLEN_MODELLED = (128, 1024)  # what emu.hart.vector and the prover take
MAX_THRESHOLD = 1 << 20
USER_KINDS = ("copy_user", "clear_user")


def _power_of_two(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def _vlen_range(s: Setting) -> tuple[int, int]:
    if len(s.values) < 5:
        return VLEN_MODELLED
    lo, hi = s.values[4]
    for v in (lo, hi):
        if not _power_of_two(v) or not VLEN_SPEC[0] <= v <= VLEN_SPEC[1]:
            raise CopygenError(f"VLEN {v} is not a power of two from {VLEN_SPEC[0]} to "
                               f"{VLEN_SPEC[1]}", s.loc,
                               hint="RVV 1.0 VLENs: 128, 256, 512, ...")
    if lo > hi:
        raise CopygenError(f"VLEN range {lo}..{hi} is empty", s.loc,
                           hint=f"write `vlen {hi}..{lo}`")
    if hi > VLEN_MODELLED[1]:
        raise CopygenError(f"VLEN {hi} is above {VLEN_MODELLED[1]}, the largest the emulator "
                           "and the prover model", s.loc,
                           hint=f"write `vlen {lo}..{VLEN_MODELLED[1]}`" if lo <= 1024 else
                           "write `vlen 128..1024`")
    return lo, hi


def _element_width(s: Setting, sew: int, target: Target) -> None:
    if sew == 8:
        return
    if not target.fast_misaligned:
        raise CopygenError(f"e{sew} elements of a misaligned source or destination may trap "
                           f"on target `{target.name}` (misaligned slow), and a user copy's "
                           "buffers have any alignment", s.loc,
                           hint="use `vector e8 ...`: byte elements are always aligned")


def _threshold(s: Setting, value: int, phases: Phases) -> int:
    if value > MAX_THRESHOLD:
        raise CopygenError(f"vector threshold {value} is larger than 1 MiB", s.loc,
                           hint="thresholds are bytes; the kernel's default is 768")
    if value < phases.threshold:
        raise CopygenError(f"vector threshold {value} is below the scalar routine's "
                           f"{phases.threshold} (`small below`): the vector path opens a "
                           "kernel vector section for each call it takes, which never pays "
                           "for copies the byte loop handles", s.loc,
                           hint=f"write `above {max(phases.threshold, 768)}` or more")
    return value


def _loads(s: Setting, kind: str, loads: str | None) -> str | None:
    if kind == "clear_user" and loads is not None:
        raise CopygenError(f"`loads {loads}` does not apply to clear_user: a clear stores "
                           "zeros and loads nothing", s.loc,
                           hint=f"write `vector {s.values[0]} {s.values[1]} above {s.values[2]}`")
    if kind == "copy_user" and loads is None:
        raise CopygenError("a copy_user's vector line must say how it loads", s.loc,
                           hint=f"write `vector {s.values[0]} {s.values[1]} above {s.values[2]} "
                                "loads plain` (or `loads ff`)")
    return loads


def vector_phase(s: Setting, kind: str, target: Target, phases: Phases) -> Vector:
    """The validated vector path of a routine whose scalar phases are `phases`."""
    if kind not in USER_KINDS:
        raise CopygenError(f"`vector` applies to copy_user and clear_user, not {kind}", s.loc,
                           hint="the kernel runs vector code for user accesses only; "
                                "remove the line")
    sew_text, lmul_text, value, loads = s.values[:4]
    loads = _loads(s, kind, loads)
    sew, lmul = int(sew_text[1:]), int(lmul_text[1:])
    lo, hi = _vlen_range(s)
    _element_width(s, sew, target)
    return Vector(sew, lmul, _threshold(s, value, phases), loads, lo, hi, s.loc)
