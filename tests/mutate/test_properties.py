"""Property tests: random valid strategies always build (and copy correctly
under the qemu oracle); random mutations of valid text give success or a
clean CopygenError, never a traceback."""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from copygen.gen.build import build_file
from copygen.gen.emission.emit import render_string, render_uaccess
from copygen.errors import CopygenError
from copygen.gen.front.validate import load_text
from copygen.gen.front.strategy import MAX_UNROLL
from tests.conftest import EXAMPLES
from copygen.mutate import oracle as qemu

SCHEDULES = ["loads_first", "interleave", "pipelined"]


@hs.composite
def strategies(draw):
    fast = draw(hs.booleans())
    words = draw(hs.integers(1, MAX_UNROLL))
    wsched = draw(hs.sampled_from(SCHEDULES))
    if wsched == "pipelined":
        words = min(words, 11)
    shift, k = "off", 0
    if not fast and draw(hs.booleans()):
        k = draw(hs.integers(1, MAX_UNROLL))
        ssched = draw(hs.sampled_from(SCHEDULES + ["paired"]))
        if ssched == "pipelined":
            k = min(k, 6)
        shift = f"unroll {k} schedule {ssched}"
    # size classes: a second, smaller loop per kind, every loop entry-tested
    classes = ""
    if words > 1 and draw(hs.booleans()):
        classes = (f"then words unroll {draw(hs.integers(1, min(words - 1, 11)))}"
                   f" schedule {draw(hs.sampled_from(SCHEDULES))}")
        if k > 1 and draw(hs.booleans()):
            classes += (f"; then shift unroll {draw(hs.integers(1, min(k - 1, 6)))}"
                        f" schedule {draw(hs.sampled_from(SCHEDULES + ['paired']))}")
    tails = ["bytes", "words"] + (["overlap"] if fast else [])
    tail = draw(hs.sampled_from(tails))
    align = draw(hs.sampled_from(["dst", "none"] if fast else ["dst"]))
    small = draw(hs.sampled_from(["auto", "0", "16", "71", "200"]))
    fault = draw(hs.sampled_from(["exact", "block"]))
    cwords = draw(hs.integers(1, 16))
    # the user routines' own tail and ends: `tail steps` and `ends pieces`
    # need size classes, pieces also aligned loads (misaligned slow)
    ctail = draw(hs.sampled_from(tails + ["steps"])) if classes else tail
    ends = draw(hs.sampled_from(["bytes", "pieces"])) \
        if classes and not fast and ctail in ("words", "steps") else "bytes"
    lclasses = bool(classes) and cwords > 1
    ltail = draw(hs.sampled_from(tails + ["steps"])) if lclasses else tail
    # a clear's overlapping ends need its head (align dst)
    lkinds = ["bytes"] + ([] if fast else ["pieces"]) + (["overlap"] if fault == "exact" or
                                                         align == "dst" else [])
    lends = draw(hs.sampled_from(lkinds)) if lclasses else "bytes"
    # which first loops lie in line (size classes only; `shift` needs a shift copy)
    inline = draw(hs.sampled_from(["none", "words"] + (["shift", "both"] if k else []))) \
        if classes else "none"
    linline = draw(hs.sampled_from(["none", "words"])) if lclasses else "none"
    # an exact clear_user needs its head: a misaligned word store across an
    # inaccessible page would fault before clearing the bytes in front of it
    calign = "dst" if fault == "exact" else align
    text = f"""
target t {{ xlen 64; misaligned {'fast' if fast else 'slow'} }}
copy_user cu for t {{
    small below {small}; align {align}
    words unroll {words} schedule {wsched}
    shift {shift}
    {classes}
    tail {ctail}; ends {ends}; inline {inline}; fault {fault}
}}
clear_user cl for t {{ small below {small}; align {calign}; words unroll {cwords}; tail {ltail}; fault {fault}
    {"then words unroll 1" if lclasses else ""}; ends {lends}; inline {linline} }}
string lib for t {{
    memcpy {{ small below {small}; align {align}; words unroll {words} schedule {wsched}; shift {shift}; tail {tail} }}
    memmove {{ forward {draw(hs.sampled_from(['memcpy', 'bytes']))}; backward {draw(hs.sampled_from(['bytes', 'words']))} }}
    memset {{ small below {small}; align {align}; words unroll {cwords}; tail {tail} }}
}}
"""
    return text, fault


@pytest.mark.slow           # over a minute: 25 strategies built and run
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies(), hs.integers(0, 2**30))
def test_random_strategies_build_and_copy_correctly(tmp_path_factory, spec, seed):
    text, fault = spec
    d = tmp_path_factory.mktemp("prop")
    src = d / "random.copy"
    src.write_text(text)
    res = build_file(src, d)
    assert res.elf.exists()
    exe = qemu.build_harness(res.objects, d / "harness")
    cases = []
    for i, fn in enumerate(["to", "from", "clear", "memcpy", "memmove", "memset"]):
        cases += qemu.random_cases(fn, 60, max_n=600, seed=seed + i)
    for case, r in zip(cases, qemu.run_cases(exe, cases)):
        assert not r.sum_at_exit, case
        assert 0 <= r.ret <= case.n, case
        assert r.prefix_ok, case                      # C3
        if fault == "exact" or case.fault_side == "none":
            assert r.rest_untouched, case             # C4 (block may break it)
        if case.fault_side == "none":
            assert r.ret == 0, case


SEED_TEXTS = [p.read_text() for p in EXAMPLES]
TOKENS = ["{", "}", ";", "[", "]", ",", "0", "1", "7", "16", "17", "64", "0x40", "auto",
          "off", "unroll", "schedule", "pipelined", "paired", "then", "words", "shift", "tail",
          "steps", "ends", "pieces", "inline", "both",
          "small",
          "below", "fault", "exact", "block", "align", "dst", "none", "src", "target",
          "copy_user", "clear_user", "string", "memcpy", "memmove", "memset", "sweep",
          "for", "xlen", "32", "misaligned", "fast", "slow", "#", "\n", "$", "é", "\x00"]


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(5)
        i = rng.randrange(len(text) + 1)
        if kind == 0:                    # delete a span
            text = text[:i] + text[i + rng.randint(1, 12):]
        elif kind == 1:                  # insert a token
            text = text[:i] + " " + rng.choice(TOKENS) + " " + text[i:]
        elif kind == 2:                  # replace a word
            words = text.split(" ")
            j = rng.randrange(len(words))
            words[j] = rng.choice(TOKENS)
            text = " ".join(words)
        elif kind == 3:                  # duplicate a line
            lines = text.splitlines(True)
            j = rng.randrange(len(lines))
            lines.insert(j, lines[j])
            text = "".join(lines)
        else:                            # swap two lines
            lines = text.splitlines(True)
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[a], lines[b] = lines[b], lines[a]
            text = "".join(lines)
    return text


@pytest.mark.slow
def test_two_thousand_mutations_never_crash():
    rng = random.Random(2026)
    outcomes = {"ok": 0, "error": 0}
    for n in range(2000):
        text = mutate(rng.choice(SEED_TEXTS), rng)
        try:
            st = load_text(text, "mutant.copy")
            render_uaccess(st, "mutant.copy")
            render_string(st, "mutant.copy")
            outcomes["ok"] += 1
        except CopygenError as err:
            assert err.loc is not None and err.loc.file == "mutant.copy", (n, text)
            assert err.render().startswith("mutant.copy"), (n, text)
            outcomes["error"] += 1
    # both outcomes must occur, or the mutator is not exercising anything
    assert outcomes["ok"] > 50 and outcomes["error"] > 500, outcomes
