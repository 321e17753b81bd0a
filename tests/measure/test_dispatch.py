"""The kernel's vector dispatch as the bench and the tuner time it
(measure.dispatch): from the threshold on, a copy_to_user case costs the
vector routine plus the kernel vector section around it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from copygen.errors import CopygenError
from copygen.gen.build import build_cached, build_vector_section
from copygen.measure.bench import Bench, Case
from copygen.measure.dispatch import Dispatched, section_cycles
from copygen.tune import evaluate as ev
from tests.conftest import ROOT

X60 = ROOT / "examples" / "x60vector.copy"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("dispatch")
    return build_cached(X60, d / "cache").elf, build_vector_section(d / "section")


def test_the_section_costs_more_with_a_dirty_user_state(built):
    _, section = built
    got = section_cycles(section, "x60")
    assert 0 < got["clean"] < got["dirty"]
    # a second build is the first one's ELF
    assert build_vector_section(section.parent) == section


def test_from_the_threshold_on_a_copy_takes_the_vector_path(built):
    elf, section = built
    bench = Bench(elf, "x60", 4096)
    cost = section_cycles(section, "x60")["clean"]
    d = Dispatched(bench, 1024, cost)
    for n in (64, 1023):
        assert d.run(Case("__asm_copy_to_user", n, 0, 0)) == bench.run(Case("__asm_copy_to_user", n, 0, 0))
    for n in (1024, 4096):
        got = d.run(Case("__asm_copy_to_user", n, 3, 0))
        vec = bench.run(Case("__asm_vector_usercopy", n, 3, 0))
        assert got.routine == "__asm_copy_to_user" and got.kind == "copy_to_user"
        assert got.cycles == vec.cycles + cost
    # the other routines are never dispatched
    assert d.run(Case("__asm_copy_from_user", 4096, 0, 0)) == bench.run(Case("__asm_copy_from_user", 4096, 0, 0))


def _job(tmp_path, text, profile="x60", kind="copy_user"):
    return ev.Job(code="c", text=text, kind=kind, profile=profile, workload="network",
                  align_mix="spec", cache=str(tmp_path))


def test_the_tuner_benches_a_vector_point_through_the_dispatch(tmp_path, built):
    """The point's own threshold decides (so `vector above` is a knob the
    tuner can rank); a scalar point, a kernel file or clear_user are benched
    as they are; a vector point on a profile without vector timing is a
    clear error."""
    elf, _ = built
    bench = Bench(elf, "x60", 4096)
    text = re.sub(r"above \d+", "above 2048", X60.read_text())
    got = ev._dispatched(_job(tmp_path, text), bench)
    assert isinstance(got, Dispatched) and got.threshold == 2048 and got.section > 0
    scalar = re.sub(r"(?m)^\s*vector .*\n", "", X60.read_text())
    assert ev._dispatched(_job(tmp_path, scalar), bench) is bench
    assert ev._dispatched(_job(tmp_path, text, kind="clear_user"), bench) is bench
    with pytest.raises(CopygenError, match="no \\[vector\\] section"):
        ev._dispatched(_job(tmp_path, text, profile="u74"), Bench(elf, "u74", 64))
