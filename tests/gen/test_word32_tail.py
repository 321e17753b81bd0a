"""A copy whose loop moves 32-bit words while the cursor is short of the
end (Linux 6.12's memcpy.S copies its tail so when both buffers and the
end allow): the cursor and the end stay whole words apart, a guess
(verify.invariants.infer.BLOCK_MASKS) without which B1 and B2 stay unknown."""
from __future__ import annotations

import pytest

from copygen.verify.contract.clauses import required
from copygen.verify.checks.prove import prove_routine

# our own: 32-bit words when src, dst and the end are 4-aligned, else bytes
WORD32 = """\
#include <linux/linkage.h>
#include <asm/asm.h>

SYM_FUNC_START(__memcpy)
	mv	t6, a0
	beqz	a2, 3f
	add	a3, a1, a2
	or	a5, a1, t6
	or	a5, a5, a3
	andi	a5, a5, 3
	bnez	a5, 2f
1:	lw	a4, 0(a1)
	addi	a1, a1, 4
	sw	a4, 0(t6)
	addi	t6, t6, 4
	bltu	a1, a3, 1b
	ret
2:	lb	a4, 0(a1)
	addi	a1, a1, 1
	sb	a4, 0(t6)
	addi	t6, t6, 1
	bltu	a1, a3, 2b
3:	ret
SYM_FUNC_END(__memcpy)
"""


@pytest.fixture(scope="module")
def elf(tmp_path_factory):
    from copygen.inputs import linked_elf
    d = tmp_path_factory.mktemp("w32")
    (d / "w32.S").write_text(WORD32)
    return str(linked_elf(str(d / "w32.S"), d / "w32"))


def test_a_32_bit_word_loop_is_proved(elf):
    rep = prove_routine(elf, "__memcpy", "memcpy", jobs=1)
    assert all(rep.status[c] == "proved" for c in required("memcpy")), rep.detail


@pytest.mark.slow
def test_without_the_word_distance_its_bounds_stay_unknown(elf, monkeypatch):
    from copygen.verify.invariants import infer
    monkeypatch.setattr(infer, "BLOCK_MASKS", infer.MASKS)
    rep = prove_routine(elf, "__memcpy", "memcpy", jobs=1)
    assert rep.status["B1"] == "unknown", rep.status
