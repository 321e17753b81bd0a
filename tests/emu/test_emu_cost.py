"""Cost engine: issue model, cache, profile files."""

from __future__ import annotations

import tomllib

import pytest

from copygen import emu
from copygen.emu.timing.cost import EMPTY_STATE, Cache, CostModel, schedule, uop
from copygen.emu.insn.decode import decode
from copygen.emu.insn.encode import encode
from copygen.emu.timing.profile import PROFILE_DIR, available, load_profile, parse_profile

U74 = load_profile("u74_spec")


def I(asm, **f):  # noqa: E743 - short helper for instruction literals
    return decode(encode(asm, **f))


def cycles(insns, p=U74, taken_last=False):
    state, total = EMPTY_STATE, 0
    for k, insn in enumerate(insns):
        adv, state = schedule(state, uop(insn, p), taken_last and k == len(insns) - 1, p)
        total += adv
    return total + 1  # the cycle the last group issues in


def test_independent_alu_ops_dual_issue():
    two = [I("add", rd=5, rs1=6, rs2=7), I("add", rd=10, rs1=11, rs2=12)]
    assert cycles(two) == 1
    assert cycles(two * 2) == 2


def test_dependent_alu_ops_serialise():
    chain = [I("addi", rd=5, rs1=5, imm=1)] * 4
    # u74: the second of a dependent pair runs in the late ALU, so the first
    # pair issues together; after that the chain retires one per cycle.
    assert cycles(chain) == 3
    assert cycles(chain, load_profile("c910")) == 4


def test_load_to_use_latency():
    ld = I("ld", rd=5, rs1=10, imm=0)
    alu_use = I("add", rd=6, rs1=5, rs2=5)
    addr_use = I("ld", rd=6, rs1=5, imm=0)
    data_use = I("sd", rs1=10, rs2=5, imm=8)
    # ALU users read in the late stage: the 1-cycle load-to-ALU bypass.
    assert cycles([ld, alu_use]) == 1 + U74.lat_load - U74.alu_late == 2
    assert cycles([ld, addr_use]) == 1 + U74.lat_load       # address: full latency
    assert cycles([ld, data_use]) == 1 + U74.load_to_store  # store data from a load: no bypass


def test_late_alu_result_reaches_early_readers_late():
    ld = I("ld", rd=5, rs1=10, imm=0)
    shl = I("sll", rd=6, rs1=5, rs2=7)      # waits in the late ALU for the load
    addr_use = I("ld", rd=8, rs1=6, imm=0)  # needs it at address generation
    data_use = I("sd", rs1=10, rs2=6, imm=8)
    assert cycles([ld, shl]) == 2
    # sll issues at cycle 1 and executes 2 stages later: address users wait 1 + 3.
    assert cycles([ld, shl, addr_use]) == 1 + 1 + U74.lat_alu + U74.alu_late
    # store data is read late, so an ALU result reaches it with 1 cycle's delay.
    assert cycles([ld, shl, data_use]) == 1 + 1 + U74.lat_alu + U74.alu_late - U74.store_data_late


def test_one_memory_pipe_on_u74_two_on_c910():
    loads = [I("ld", rd=5 + k, rs1=10, imm=8 * k) for k in range(4)]
    assert cycles(loads) == 4
    assert cycles(loads, load_profile("c910")) == 2


def test_static_branch_prediction():
    back = I("bne", rs1=5, rs2=0, imm=-8)
    fwd = I("bne", rs1=5, rs2=0, imm=8)
    assert cycles([back], taken_last=True) == 1 + U74.taken_bubble
    assert cycles([back], taken_last=False) == 1 + U74.mispredict
    assert cycles([fwd], taken_last=True) == 1 + U74.mispredict
    assert cycles([fwd], taken_last=False) == 1


def test_unpipelined_divider():
    div = [I("div", rd=5 + k, rs1=10, rs2=11) for k in range(2)]
    assert cycles(div) >= 1 + U74.lat_div


def test_cache_lru_and_misses():
    c = Cache(U74)
    lines_per_way = c.nsets
    same_set = [k * lines_per_way for k in range(U74.cache_ways + 1)]
    assert all(c.touch(line, 0) == U74.miss_load for line in same_set)
    assert c.touch(same_set[-1], 0) == 0          # most recent: hit
    assert c.touch(same_set[0], 0) == U74.miss_load  # evicted by the ninth line
    assert c.misses == len(same_set) + 1


def test_access_charges_misaligned_and_both_lines():
    cm = CostModel(U74)
    cm.access(0x1000 + 60, 8, 0)   # spans two lines, misaligned
    assert cm.cache.misses == 2 and cm.misaligned == 1
    assert cm.stall_cycles == 2 * U74.miss_load + U74.misaligned_cost


def test_fault_cost_and_drain():
    cm = CostModel(U74)
    cm.on_insn(I("ld", rd=5, rs1=10, imm=0), False)
    cm.on_fault()
    assert cm.states[cm.state] == EMPTY_STATE and cm.stall_cycles == U74.fault_cost


def test_profiles_load_and_record_calibration():
    assert {"u74", "c910"} <= set(available())
    for name in available():
        p = load_profile(name)
        assert p.calibrated_against and p.calibration_error
    assert load_profile("c910").misaligned_cost < 10 < U74.misaligned_cost


def test_profile_errors_name_the_key(tmp_path):
    data = tomllib.loads((PROFILE_DIR / "u74_spec.toml").read_text())
    del data["cache"]["ways"]
    with pytest.raises(emu.ProfileError, match=r"\[cache\] ways"):
        parse_profile(data, "x.toml")
    data = tomllib.loads((PROFILE_DIR / "u74_spec.toml").read_text())
    data["cache"]["size"] = 3000
    with pytest.raises(emu.ProfileError, match="geometry"):
        parse_profile(data)
    data = tomllib.loads((PROFILE_DIR / "u74_spec.toml").read_text())
    data["latency"]["load"] = "3"
    with pytest.raises(emu.ProfileError, match="load"):
        parse_profile(data)
    del data["calibration"]
    data["latency"]["load"] = 3
    with pytest.raises(emu.ProfileError, match="calibration"):
        parse_profile(data)
    with pytest.raises(emu.ProfileError, match="available"):
        load_profile("no-such-core")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[[")
    with pytest.raises(emu.ProfileError, match="bad.toml"):
        load_profile(bad)


def test_no_profile_means_no_cycles(uaccess_elf):
    m = emu.Machine.from_elf(uaccess_elf)
    m.map(0x1000_0000, 4096, user=True)
    r = m.call("byte_copy_user", 0x1000_0000, 0x1000_0000, 0)
    assert r.cycles is None and r.instret > 0


def test_cache_stays_warm_across_calls_until_reset(uaccess_elf):
    for fast in (True, False):
        m = emu.Machine.from_elf(uaccess_elf, profile="u74_spec")
        m.map(0x1000_0000, 4096, user=True)
        m.map(0x7000_0000, 4096, user=False)
        cold = m.call("byte_copy_user", 0x1000_0000, 0x7000_0000, 1000, fast=fast)
        warm = m.call("byte_copy_user", 0x1000_0000, 0x7000_0000, 1000, fast=fast)
        m.reset_cache()
        again = m.call("byte_copy_user", 0x1000_0000, 0x7000_0000, 1000, fast=fast)
        assert cold.cache_misses == again.cache_misses == 2 * 16 and warm.cache_misses == 0
        assert cold.cycles == again.cycles > warm.cycles


def test_optional_latency_keys_default_to_the_generic_rule():
    data = tomllib.loads((PROFILE_DIR / "u74_spec.toml").read_text())
    del data["latency"]["alu_late"], data["latency"]["load_to_store"]
    p = parse_profile(data)
    assert p.alu_late == 0 and p.load_to_store == p.lat_load - p.store_data_late
    data["latency"]["alu_late"] = -1
    with pytest.raises(emu.ProfileError, match="alu_late"):
        parse_profile(data)


def test_a_fitted_profile_names_its_data_board_and_cross_validated_error(tmp_path):
    cal = tomllib.loads((PROFILE_DIR / "u74.toml").read_text())["calibration"]
    p = load_profile("u74")
    assert p.engine == "ooo" and f"on {cal['board']}," in p.provenance
    assert p.provenance.startswith(f"fitted to {cal['data'].rsplit('/', 1)[-1]}")
    for kind, err in cal["cross_validated_error_pct"].items():
        assert f"{err:g} % {kind}" in p.provenance
    assert load_profile("u74_spec").provenance.startswith("not fitted to a board's measurements")
    path = tmp_path / "x.toml"        # without cross-validated figures it says so
    path.write_text((PROFILE_DIR / "u74.toml").read_text().replace("cross_validated_error_pct", "cv"))
    assert ", not cross-validated; bytes/cycle" in load_profile(str(path)).provenance
