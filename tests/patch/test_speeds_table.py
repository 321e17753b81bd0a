"""The tables of a two-body patch's message (`copygen patch --fast-body`,
docs/speeds.md): one per core, each under its own profile, comparing the
tree's copy with the body that core's probe picks.  The slow body's side
is --profile's list (default: FILE's target profile); the fast copy's
cores (the fast strategy's target profile, x60 and c920) always have
theirs.  Fast: stand-ins for the probe and the bench, no proofs."""
from __future__ import annotations

import re

import pytest

from copygen.emu.timing.profile import load_profile
from copygen.patch import evidence, message
from copygen.patch.speeds import commit_text, dispatch, probe
from copygen.patch.speeds import run as speeds_run
from copygen.patch.evidence import Proof, Row
from copygen.patch.steps import Stages
from copygen.verify.compose import jumplabel
from copygen.verify.compose import speeds as compose

SLOW, FAST = "fallback_scalar_usercopy", "fallback_scalar_usercopy_fast"
VERDICT = {"u74": False, "u74_spec": False, "p550": False, "x60": True, "c920": True, "c910": True}


@pytest.mark.parametrize("slow, fast, given, want", [
    ("u74", "x60", (), ["u74", "x60", "c920"]),
    ("u74", "c910", (), ["u74", "c910", "x60", "c920"]),
    ("u74", "x60", ("u74", "x60", "c920"), ["u74", "x60", "c920"]),
    ("u74", "x60", ("u74_spec",), ["u74_spec", "x60", "c920"]),
    ("u74", "c920", ("p550", "u74"), ["p550", "u74", "c920", "x60"]),
])
def test_the_tables_are_the_slow_side_then_the_fast_cores(slow, fast, given, want):
    assert speeds_run.table_profiles(slow, fast, given) == want
    assert set(speeds_run.FAST_CORES) <= set(speeds_run.table_profiles(slow, fast, given))


def _probe(profile) -> probe.Probe:
    name = getattr(profile, "name", profile)
    fast = VERDICT[name]
    return probe.Probe(name, 3000 if fast else 700000, 10000, fast)


def test_each_profile_benches_the_body_its_probe_picks(monkeypatch):
    """The slow copy (key off) under a slow core, the fast copy (key on)
    under a fast one, the clear under every core, the branch's cost
    (without the probe against key off) on the slow ones, and on the fast
    ones the slow copy against the fast one (key off against key on)."""
    benched = []

    def measure(before, after, kinds, profiles, tell=None):
        benched.append((profiles[0].name, before, after, kinds))
        return [Row(profiles[0].name, kinds[0], 8, "aligned", 1.0, 1.0)]

    monkeypatch.setattr(speeds_run.probe, "run", _probe)
    monkeypatch.setattr(speeds_run.evidence, "measure", measure)
    states = {"plain": "plain", "off": "off", "on": "on"}
    profiles = [load_profile(p) for p in speeds_run.table_profiles("u74", "x60")]
    rows, probes, cost, versus = speeds_run._bench(states, "before", ("copy_user", "clear_user"),
                                                  profiles, lambda msg: None, Stages())
    assert [(p.profile, p.fast) for p in probes] == [("u74", False), ("x60", True), ("c920", True)]
    assert benched == [
        ("u74", "before", "off", ("copy_user",)), ("u74", "before", "off", ("clear_user",)),
        ("u74", "plain", "off", ("copy_user",)),
        ("x60", "before", "on", ("copy_user",)), ("x60", "before", "off", ("clear_user",)),
        ("x60", "off", "on", ("copy_user",)),
        ("c920", "before", "on", ("copy_user",)), ("c920", "before", "off", ("clear_user",)),
        ("c920", "off", "on", ("copy_user",))]
    assert {r.profile for r in rows} == {"u74", "x60", "c920"} and [r.profile for r in cost] == ["u74"]
    assert [r.profile for r in versus] == ["x60", "c920"]


def _report(sym: str):
    from copygen.verify.checks.prove import RoutineReport
    return RoutineReport(sym, "to", {c: "proved" for c in ("C1", "C2", "C3", "C4", "C5", "C6",
                                                           "S1", "S2", "A1", "B1", "B2", "X1",
                                                           "T1")}, {})


def _message(profiles: list[str]) -> str:
    proved = {c: "proved" for c in ("C1", "C2", "C3", "C4", "C5", "C6", "S1", "A1")}
    after = [Proof("__asm_copy_to_user", "copy_user", "proved", proved, {}, 1.0)]
    # each profile's cycles of its own: a table shows only its profile's
    rows = [Row(p, "copy_to_user", n, a, 1000.0 * (k + 1) + n, 100.0 * (k + 1) + n)
            for k, p in enumerate(profiles) for n in (8, 64, 512) for a in ("aligned", "misaligned")]
    ch = message.Change(("copy_user",), "6.8", {"copy_user": after}, {"copy_user": after}, rows,
                        {p: f"{p}'s fit" for p in profiles})
    site = jumplabel.Site(0x80200000, 0x80200400, 0x80201000, dispatch.KEY, False, jumplabel.NOP)
    # the fast copy against the slow one: faster on x60 everywhere; on c920
    # slower from 512 bytes misaligned (by 10 %), faster below
    versus = [Row(p, "copy_to_user", n, a, 100.0, 50.0 if p == "x60" or n < 512 or a == "aligned"
                  else 110.0)
              for p in profiles if VERDICT[p] for n in (8, 64, 512) for a in ("aligned", "misaligned")]
    sp = speeds_run.Speeds(SLOW, FAST, site, [_probe(p) for p in profiles],
                          [compose.combine(_report("__asm_copy_to_user"),
                                           _report("__asm_copy_to_user"))], on_proofs=after,
                          versus=versus)
    return commit_text.commit_message(ch, after, sp, "0.1.0", "copygen patch s.copy --fast-body f.copy",
                                    [("target u74 { xlen 64 }\n", "u74tuned.copy"),
                                     ("target x60 { xlen 64 }\n", "x60fast.copy")], "A <a@b>")


def _tables(text: str) -> dict[str, str]:
    """Each core's heading and what follows it, up to the next heading."""
    parts = re.split(r"\n(?=On \w+, misaligned access)", text)
    return {re.match(r"On (\w+),", p).group(1): p for p in parts[1:]}


def test_the_message_has_each_cores_table_under_its_own_profile():
    text = _message(["u74", "x60", "c920"])
    assert all(len(ln) <= 75 for ln in text.splitlines())
    tables = _tables(text.split("\nProofs (")[0])
    assert list(tables) == ["u74", "x60", "c920"]
    for k, (core, part) in enumerate(tables.items()):
        body = SLOW if core == "u74" else FAST
        speed = "slow" if core == "u74" else "fast"
        assert part.startswith(f"On {core}, misaligned access {speed}: {body}.")
        assert f"cost profile {core}, {core}'s fit" in " ".join(part.split())
        # the rows of this profile, and of no other
        sizes = {int(ln.split()[0]): ln.split()[1:] for ln in part.splitlines()
                 if re.match(r"\s+\d+\s+\d+", ln)}
        assert sizes[512] == [str(1000 * (k + 1) + 512), str(100 * (k + 1) + 512)] * 2, part
        assert len(sizes) == 3
    # a fast core says what it gains or loses against the slow copy
    said = {core: " ".join(part.split()) for core, part in tables.items()}
    assert "Against the slow copy" not in said["u74"]
    assert (f"Against the slow copy, {SLOW}, which x60 would run without the fast one: fewer "
            "cycles in 6 of the 6 cases, more in none; at best -50.0%") in said["x60"]
    assert ("which c920 would run without the fast one: fewer cycles in 5 of the 6 cases, more "
            "in 1 (at worst +10.0%, copy_to_user, 512 bytes, misaligned)") in said["c920"]
