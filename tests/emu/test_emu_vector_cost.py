"""Vector cost profiles: the [vector] tables, their validation, and how a
vector access is charged by the bytes it moves (emu.timing.vcost through emu.timing.cost)."""

from __future__ import annotations

import tomllib
from types import SimpleNamespace

import pytest

from copygen import emu
from copygen.emu.timing.cost import CostModel
from copygen.emu.insn.decode import decode
from copygen.emu.insn.encode import encode
from copygen.emu.timing.profile import PROFILE_DIR, load_profile, parse_profile
from copygen.emu.timing.vcost import full_beats, occupancy, span_beats

X60, X280 = load_profile("x60"), load_profile("x280")
M8 = 0b011                    # vtype: e8, m8


def I(asm, **f):  # noqa: E743 - short helper for instruction literals
    return decode(encode(asm, **f))


def _model(p, vl: int, addr: int = 0x1000):
    """A cost model watching a stand-in hart: a0 = addr, vl as given."""
    cm = CostModel(p)
    cm.hart = SimpleNamespace(x=[0] * 10 + [addr] + [0] * 21,
                              v=SimpleNamespace(vl=vl, vlenb=p.vector.vlen // 8))
    return cm


def _charge(p, name: str, vl: int, addr: int = 0x1000) -> int:
    """Cycles the second of two back-to-back accesses waits for the unit:
    the first one's occupancy."""
    cm = _model(p, vl, addr)
    insn = I(name, vd=8, rs1=10) if name.startswith("vl") else I(name, vs3=8, rs1=10)
    cm.on_insn(insn, False)
    before = cm.issue_cycles
    cm.on_insn(insn, False)
    return cm.issue_cycles - before


@pytest.mark.parametrize("vl, addr, want", [
    (256, 0x1000, 16),   # m8 group, 16 beats of 16 bytes: LLVM's M8 column
    (32, 0x1000, 3),     # one register, 2 beats: the M1 column
    (40, 0x1000, 4),     # 3 beats: the smallest group that holds them is M2
    (1, 0x1000, 3),      # one beat: the fractional columns
    (256, 0x1003, 17),   # a misaligned whole group spans 17 beats: M8 + 1
])
def test_x60_vle8_costs_its_table_column_by_bytes(vl, addr, want):
    assert _charge(X60, "vle8.v", vl, addr) == want


def test_x60_store_and_ff_tables():
    assert _charge(X60, "vse8.v", 256) == 19 and _charge(X60, "vse8.v", 32) == 3
    assert _charge(X60, "vle8ff.v", 256) == 19 and _charge(X60, "vle8ff.v", 16) == 4


def test_x280_split_units_overlap_a_load_and_a_store():
    """X280: 1 + 2*LMUL cycles per group on its own sequencer; a store right
    after an independent load does not wait for the load unit."""
    assert _charge(X280, "vle8.v", 512) == 17 and _charge(X280, "vle8.v", 64) == 3
    cm = _model(X280, 512)
    cm.on_insn(I("vle8.v", vd=8, rs1=10), False)
    before = cm.issue_cycles
    cm.on_insn(I("vse8.v", vs3=16, rs1=10), False)
    assert cm.issue_cycles - before == 0


def test_a_store_waits_for_the_load_it_stores():
    cm = _model(X280, 512)
    cm.on_insn(I("vle8.v", vd=8, rs1=10), False)
    before = cm.issue_cycles
    cm.on_insn(I("vse8.v", vs3=8, rs1=10), False)
    assert cm.issue_cycles - before == 4        # load_latency: the first beat chains


def test_vsetvli_result_latency():
    """X280: vl reaches an address computation 3 cycles later (an ALU op
    could take it in the late ALU, as on the U74)."""
    cm = _model(X280, 0)
    cm.on_insn(I("vsetvli", rd=5, rs1=12, imm=M8), False)
    before = cm.issue_cycles
    cm.on_insn(I("ld", rd=6, rs1=5, imm=0), False)
    assert cm.issue_cycles - before == 3


def test_beats_and_columns():
    cfg = X60.vector
    assert full_beats(cfg) == (1, 1, 1, 2, 4, 8, 16)
    assert span_beats(0x1000, 0, cfg) == 0 and span_beats(0x100F, 2, cfg) == 2
    assert occupancy(cfg.load, 0, cfg) == 3 and occupancy(cfg.load, 20, cfg) == 20


def test_a_profile_without_vector_refuses_to_time_vector_code():
    for name in ("u74", "c910"):
        cm = load_profile(name)
        with pytest.raises(emu.ProfileError, match=r"no \[vector\] section.*vle8\.v"):
            m = CostModel(cm) if cm.engine == "inorder" else emu.Machine(None, cm).cost
            m.hart = SimpleNamespace(x=[0] * 32, v=SimpleNamespace(vl=1, vlenb=16), pc=0)
            m.on_insn(I("vle8.v", vd=8, rs1=10), False)


def test_machine_runs_at_the_profiles_vlen():
    assert emu.Machine(None, "x60").hart.vlen == 256 and emu.Machine(None, "x280").hart.vlen == 512
    assert emu.Machine(None, "u74").hart.vlen == 128
    with pytest.raises(emu.ConfigError, match="VLEN of 256"):
        emu.Machine(None, "x60", vlen=128)


def _x60_data() -> dict:
    return tomllib.loads((PROFILE_DIR / "x60.toml").read_text())


@pytest.mark.parametrize("edit, match", [
    (lambda v: v.pop("dlen"), r"\[vector\] dlen"),
    (lambda v: v.update(vlen=200), r"\[vector\] vlen"),
    (lambda v: v.update(dlen=512), r"\[vector\] dlen"),
    (lambda v: v.update(units="both"), r"\[vector\] units"),
    (lambda v: v.update(load=[3, 3, 3]), r"\[vector\] load must list 7"),
    (lambda v: v.update(store=[2, 2, 2, 3, 4, 8, 0]), r"\[vector\] store must list 7"),
    (lambda v: v.update(load_ff=[4, 4, 4, 5, 7, 11, 10]), r"\[vector\] load_ff must not fall"),
    (lambda v: v.update(lanes=4), r"\[vector\] has unknown key lanes"),
    (lambda v: v.update(misaligned=-1), r"\[vector\] misaligned must be a non-negative int"),
])
def test_vector_section_errors_name_the_key(edit, match):
    data = _x60_data()
    edit(data["vector"])
    with pytest.raises(emu.ProfileError, match=match):
        parse_profile(data, "x.toml")


def test_vector_section_needs_the_inorder_engine():
    data = tomllib.loads((PROFILE_DIR / "c910.toml").read_text())
    data["vector"] = _x60_data()["vector"]
    with pytest.raises(emu.ProfileError, match=r"\[vector\] is modelled by the inorder engine only"):
        parse_profile(data, "x.toml")


def test_a_misaligned_vector_element_costs_the_vector_rule():
    """x60's [vector] misaligned (0: the beats already count a misaligned
    range's extra beat) prices e16+ elements off their width; without the
    key (x280) a vector element costs the scalar [misaligned] cost."""
    assert parse_profile(_x60_data(), "x.toml").vector.misaligned == 0
    data = tomllib.loads((PROFILE_DIR / "x280.toml").read_text())
    assert parse_profile(data, "x.toml").vector.misaligned is None
    x60 = parse_profile(_x60_data(), "x.toml")
    cm = CostModel(x60)
    cm.hart = SimpleNamespace(vector_element=True)
    assert cm._misaligned_cost() == 0
    cm.hart = SimpleNamespace(vector_element=False)
    assert cm._misaligned_cost() == x60.misaligned_cost == 1
    cm = CostModel(parse_profile(data, "x.toml"))
    cm.hart = SimpleNamespace(vector_element=True)
    assert cm._misaligned_cost() == 700
