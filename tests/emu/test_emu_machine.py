"""Kernel machine model: SUM gating, __ex_table fixups, oops, step limit, CSRs."""

from __future__ import annotations

import pytest

from copygen import emu
from copygen.emu.hart.machine import SR_SUM
from copygen.emu.insn.encode import encode

USER = 0x1000_0000
KERN = 0x9000_0000


@pytest.fixture(params=[True, False], ids=["fast", "reference"])
def fast(request):
    return request.param


@pytest.fixture
def m(uaccess_elf):
    m = emu.Machine.from_elf(uaccess_elf, profile="u74")
    m.map(USER, 2 * 4096, user=True)
    m.map(KERN, 2 * 4096, user=False)
    return m


def test_copy_with_sum_succeeds_and_clears_sum(m, fast):
    m.write(USER, bytes(range(200)))
    r = m.call("byte_copy_user", KERN, USER, 200, fast=fast)
    assert r.ret == 0 and r.faults == () and not r.sum_at_exit
    assert m.read(KERN, 200) == bytes(range(200))
    assert r.instret == 3 + 6 * 200 + 3 and r.cycles > 0 and r.callee_saved_ok


def test_fault_resumes_at_fixup_and_is_recorded(m, fast):
    src = USER + 2 * 4096 - 10  # 10 readable bytes, then an unmapped page
    m.write(src, b"abcdefghij")
    r = m.call("byte_copy_user", KERN, src, 50, fast=fast)
    assert r.ret == 40 and not r.sum_at_exit
    assert m.read(KERN, 11) == b"abcdefghij\0"
    (fault,) = r.faults
    assert fault.addr == USER + 2 * 4096 and fault.cause == "load: unmapped"
    assert fault.pc == m.symbol("byte_copy_user") + 10  # li(2) csrs(4) beqz(2) ... lb
    assert fault.pc in m.image.extable


def test_store_to_read_only_user_page_faults(m, fast):
    m.map(USER, 4096, user=True, writable=False)
    r = m.call("byte_copy_user", USER, KERN, 5, fast=fast)
    assert r.ret == 5 and r.faults[0].cause == "store: read-only"


def test_sum_clear_blocks_user_pages_and_oopses_without_fixup(m, fast):
    with pytest.raises(emu.Oops) as e:
        m.call("get_word_nosum", USER, fast=fast)
    assert e.value.cause == "load: user page while SUM clear" and e.value.addr == USER
    assert "pc" in str(e.value) and hex(USER) in str(e.value)
    assert m.call("get_word_nosum", KERN, fast=fast).faults == ()
    assert m.call("get_word_nosum", USER, sum_at_entry=True, fast=fast).ret == 0


def test_leaky_fixup_leaves_sum_set(m, fast):
    r = m.call("leaky_get_word", USER + 3 * 4096, fast=fast)
    assert r.ret_signed == -14 and r.sum_at_exit and len(r.faults) == 1
    m.write(USER, (0x1122334455667788).to_bytes(8, "little"))
    r = m.call("leaky_get_word", USER, fast=fast)
    assert r.ret == 0x1122334455667788 and not r.sum_at_exit


def test_misaligned_store_across_into_fault_writes_nothing(m, fast):
    m.write(USER + 4096 - 8, b"\x11" * 8)
    m.map(USER + 4096, 4096, user=True, writable=False)
    r = m.call("put_word_user", USER + 4096 - 4, 0xAABBCCDDEEFF0011, fast=fast)
    assert r.ret == 8 and r.faults[0].cause == "store: read-only"
    assert m.read(USER + 4096 - 8, 12) == b"\x11" * 8 + b"\0" * 4
    r = m.call("put_word_user", USER + 4096 - 12, 0xAABBCCDDEEFF0011, fast=fast)
    assert r.ret == 0 and r.misaligned == 1
    assert m.read(USER + 4096 - 12, 8) == (0xAABBCCDDEEFF0011).to_bytes(8, "little")


def test_misaligned_cost_dominates_on_u74(m, fast):
    aligned = m.call("put_word_user", USER + 8, 1, fast=fast).cycles
    misaligned = m.call("put_word_user", USER + 9, 1, fast=fast).cycles
    assert misaligned - aligned >= 300


def test_step_limit(m, fast):
    with pytest.raises(emu.StepLimit) as e:
        m.call("spin", step_limit=1000, fast=fast)
    assert "1000" in str(e.value) and "runaway" in str(e.value)


def test_csr_forms(m, fast):
    r = m.call("csr_dance", fast=fast)
    # sstatus ends as SUM (csrrs), plus t5 = SUM read before... see fixture
    assert r.ret == SR_SUM
    assert not r.sum_at_exit  # csrw sstatus, zero


def test_fetch_from_unmapped_or_user_page_is_an_oops(m, fast):
    with pytest.raises(emu.Oops, match="fetch: unmapped"):
        m.call(0x4000_0000, fast=fast)
    m.map(USER, 4096, user=True, executable=True)
    with pytest.raises(emu.Oops, match="fetch: user page"):
        m.call(USER, fast=fast)


def test_illegal_instruction_reports_pc(m, fast):
    m.map(KERN, 4096, user=False, executable=True)
    m.write(KERN, (0x00000053).to_bytes(4, "little"))  # fadd.s: F is not modelled
    with pytest.raises(emu.IllegalInstruction) as e:
        m.call(KERN, fast=fast)
    assert f"{KERN:#x}" in str(e.value) and "0x00000053" in str(e.value)


def test_map_rejects_partial_pages(m):
    with pytest.raises(emu.MapError):
        m.map(USER + 1, 4096, user=True)
    with pytest.raises(emu.MapError):
        m.read(0x7000_0000, 4)


def test_a_started_call_runs_watched_to_its_return(m):
    """start_call sets the call up as `call` does; run_watched calls the
    hook before each watched instruction and stops at the return."""
    m.write(USER, b"xyz")
    entry = m.start_call("byte_copy_user", KERN, USER, 3)
    loop = m.symbol("byte_copy_user") + 10          # the lb of the byte loop
    seen = []
    m.run_watched(10_000, {loop}, lambda pc: seen.append((pc, m.hart.x[12])))
    assert seen == [(loop, 3), (loop, 2), (loop, 1)]
    assert m.hart.x[10] == 0 and m.read(KERN, 3) == b"xyz" and m.callee_saved_kept(entry)
    assert entry[10:13] == (KERN, USER, 3) and entry[1] == emu.RETURN_SENTINEL


def test_a_watched_run_ends_a_fixup_that_faults_forever():
    """Every step counts, a faulting one too: a load whose fixup is itself
    retires nothing, and still ends at the step limit."""
    m = emu.Machine()
    m.map(KERN, 4096, user=False, executable=True)
    m.write(KERN, encode("lb", rd=10, rs1=11).to_bytes(4, "little"))
    m.hart.extable[KERN] = KERN
    m.start_call(KERN, 0, USER)                     # a1: an unmapped address
    with pytest.raises(emu.StepLimit):
        m.run_watched(50)
    assert len(m.hart.faults) == 50 and m.hart.instret == 0
