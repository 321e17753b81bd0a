"""Out-of-order engine (emu.timing.ooo, emu.timing.memhier, emu.timing.predictor): cycle counts
worked out by hand on a small made-up core, one mechanism per test.

The core (TOY below): dispatch 2 per cycle, retire 2, one pipe per class
except two ALU pipes, ALU latency 1, load 3 (L1), mispredict 5, store
buffer 2 entries draining one store per 2 cycles, L2 10 cycles + 4 per
line, DRAM 50 cycles + 8 per line.  Times are written D (dispatch), I
(issue), C (complete), R (retire); a sequence costs the R of its last
instruction."""

from __future__ import annotations

import tomllib

import pytest

from copygen import emu
from copygen.emu.insn.decode import decode
from copygen.emu.insn.encode import encode
from copygen.emu.timing.memhier import DRAM, L1, L2, PF_DRAM, Hierarchy
from copygen.emu.timing.ooo import MISPREDICT, RET_LAST, TAKEN, empty_state, engine, step
from copygen.emu.timing.cost import uop
from copygen.emu.timing.predictor import make_predictor
from copygen.emu.timing.profile import parse_profile

TOY_TOML = """
name = "toy"
[calibration]
against = "nothing: a test core"
error = "n/a"
[engine]
kind = "ooo"
[pipeline]
issue_width = 2
mem_pipes = 2
mispredict = 5
taken_bubble = 0
jalr_bubble = 0
serial_cost = 4
fault_cost = 100
[latency]
alu = 1
load = 3
mul = 3
div = 10
div_pipelined = false
store_data_late = 0
[misaligned]
cost = 1
[cache]
size = 1024
line = 64
ways = 2
[window]
rob = 8
retire_width = 2
[ports]
alu = 2
load = 1
store = 1
branch = 1
[store_buffer]
entries = 2
drain = 2
[predictor]
kind = "bimodal"
entries = 16
[l2]
size = 8192
ways = 4
latency = 10
line_cycles = 4
[dram]
latency = 50
line_cycles = 8
[prefetch]
kind = "next_line"
degree = 2
buffer = 8
"""


def toy(**changes):
    data = tomllib.loads(TOY_TOML)
    for key, value in changes.items():
        table, name = key.split("__")
        data[table][name] = value
    return parse_profile(data, "toy")


TOY = toy()


def I(asm, **f):  # noqa: E743 - short helper for instruction literals
    return decode(encode(asm, **f))


def cycles(seq, p=TOY):
    """Fold (instruction, dynamic code) pairs from an empty window."""
    e = engine(p)
    state, total = empty_state(e), 0
    for insn, code in seq:
        adv, state = step(state, uop(insn, p), code, e)
        total += adv
    return total + state[RET_LAST]


ADDI5 = I("addi", rd=5, rs1=5, imm=1)


def test_dependency_chain_against_independent_ops():
    # chain: D 0 0 1 1, I 0 1 2 3, C = R = 1 2 3 4
    assert cycles([(ADDI5, 0)] * 4) == 4
    # independent, two ALU pipes: I 0 0 1 1, R 1 1 2 2
    assert cycles([(I("addi", rd=r, rs1=0, imm=1), 0) for r in (5, 6, 7, 28)]) == 2


def test_port_conflict_on_the_load_pipe():
    loads = [(I("ld", rd=5 + k, rs1=10, imm=8 * k), 0) for k in range(4)]
    # one load pipe: I 0 1 2 3, C = R = 3 4 5 6
    assert cycles(loads) == 6
    # two: I 0 0 1 1, C 3 3 4 4
    assert cycles(loads, toy(ports__load=2)) == 4


def test_store_buffer_full_stalls_dispatch():
    stores = [(I("sd", rs1=10, rs2=0, imm=8 * k), 0) for k in range(4)]
    # st0 D0 I0 R1 drains by 3; st1 D0 I1 R2 by 5; st2 waits for st0's entry:
    # D3 I3 R4 (by 7); st3 waits for st1's: D5 I5 R6.
    assert cycles(stores) == 6
    # room for all four: I 0 1 2 3 on the one store pipe, R 1 2 3 4
    assert cycles(stores, toy(store_buffer__entries=8)) == 4


def test_a_mispredicted_branch_delays_the_next_dispatch():
    bne = I("bne", rs1=6, rs2=0, imm=-8)
    # bne D0 I0 C1; next dispatches at I + 5 = 5: C = R = 6
    assert cycles([(bne, TAKEN | MISPREDICT), (ADDI5, 0)]) == 6
    # predicted taken: the group ends, next D1 I1 R2
    assert cycles([(bne, TAKEN), (ADDI5, 0)]) == 2


def test_l2_miss_and_dram_latency_and_channel_occupancy():
    ld = I("ld", rd=6, rs1=10, imm=0)
    use = I("add", rd=7, rs1=6, rs2=6)
    # L1 hit: ld C3, add I3 C4
    assert cycles([(ld, L1), (use, 0)]) == 4
    # L2: data at 0 + 10, add C11; DRAM: at 50, add C51
    assert cycles([(ld, L2), (use, 0)]) == 11
    assert cycles([(ld, DRAM), (use, 0)]) == 51
    # two L2 misses: the second waits for the channel (busy 4 cycles a line): 4 + 10
    ld2 = I("ld", rd=8, rs1=10, imm=64)
    assert cycles([(ld, L2), (ld2, L2)]) == 14


def test_a_prefetched_stream_costs_bandwidth_not_latency():
    loads = [I("ld", rd=5 + k, rs1=10, imm=64 * k) for k in range(4)]
    # demand misses to DRAM: starts 0 8 16 24 (8 cycles a line), data 50 later
    assert cycles([(x, DRAM) for x in loads]) == 74
    # prefetched: starts 0 8 16 24, then the L1 latency: 24 + 3
    assert cycles([(x, PF_DRAM) for x in loads]) == 27


def test_hierarchy_levels_and_next_line_prefetch():
    h = Hierarchy(TOY)
    assert h.touch(100, 0) == DRAM          # cold; prefetches lines 101 and 102
    assert h.touch(101, 0) == PF_DRAM       # taken from the prefetch buffer
    assert h.touch(101, 0) == L1
    # lines 100, 108, 116 share an L1 set (8 sets of 2 ways): 100 is evicted, stays in L2
    h.touch(108, 0), h.touch(116, 0)
    assert h.touch(100, 0) == L2


def test_bimodal_predictor_learns_a_loop_branch():
    bp = make_predictor("bimodal", 16, 0)
    outcomes = [True, True, True, False]
    first = [bp.mispredicted(0x80, True, t) for t in outcomes]
    second = [bp.mispredicted(0x80, True, t) for t in outcomes]
    assert first == [1, 0, 0, 1] and second == [0, 0, 0, 1]
    gs = make_predictor("gshare", 64, 4)
    for _ in range(6):
        last = [gs.mispredicted(0x80, True, t) for t in outcomes]
    assert last == [0, 0, 0, 0]  # with history, the exit of a 4-trip loop is learnt too


LOOP = [("addi", dict(rd=5, rs1=0, imm=3)), ("addi", dict(rd=5, rs1=5, imm=-1)),
        ("bne", dict(rs1=5, rs2=0, imm=-4)), ("jalr", dict(rd=0, rs1=1, imm=0))]
CODE = 0x8000_0000


@pytest.mark.parametrize("fast", [False, True])
def test_the_predictor_learns_across_calls_on_one_machine(fast):
    m = emu.Machine(None, TOY)
    m.map(CODE, 4096, user=False, writable=False, executable=True)
    m.write(CODE, b"".join(encode(a, **f).to_bytes(4, "little") for a, f in LOOP))
    # First call, counters weakly not-taken: bne T (mispredicted), T, NT (mispredicted).
    # li D0 I0; addi D0 I1; bne D1 I2, next at 7; addi D7 I7; bne D7 I8 (taken: next D8);
    # addi D8 I8; bne D8 I9, next at 14; ret D14 I14 C = R = 15.
    assert m.call(CODE, fast=fast).cycles == 15
    # Trained: only the exit is mispredicted.  bne D1 I2 (next D2); addi D2 I2;
    # bne D2 I3; addi D3 I3; bne D3 I4, next at 9; ret D9 C = R = 10.
    assert m.call(CODE, fast=fast).cycles == 10


@pytest.mark.parametrize("change, message", [
    (("predictor", "kind", "perceptron"), "[predictor] kind must be one of"),
    (("window", "rob", "many"), "[window] rob must be a int"),
    (("prefetch", "kind", "magic"), "[prefetch] kind must be one of"),
    (("predictor", "entries", 12), "power of two"),
    (("engine", "kind", "vliw"), "[engine] kind"),
])
def test_ooo_profile_errors_name_the_key(change, message):
    data = tomllib.loads(TOY_TOML)
    table, key, value = change
    data[table][key] = value
    with pytest.raises(emu.ProfileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_profile(data, "toy")


def test_ooo_profile_needs_its_tables():
    data = tomllib.loads(TOY_TOML)
    del data["l2"]
    with pytest.raises(emu.ProfileError, match=r"missing \[l2\] size"):
        parse_profile(data, "toy")
