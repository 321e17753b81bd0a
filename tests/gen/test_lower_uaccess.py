"""gen.lower.lower_uaccess: the `sum_held` form (no SUM handling, for a body
whose caller holds SUM) and label prefixes, asserted on the IR; then the
emitted body run in the emulator under a caller that holds SUM.  Each for
the kernel's layout and for the class layout (size classes)."""
from __future__ import annotations

import pytest

from copygen.emu.api import Machine
from copygen.gen import toolchain
from copygen.gen.emission.emit import render_body
from copygen.gen.emission.ir import Insn, Label
from copygen.gen.lower.lower_uaccess import clear_user_function, copy_user_function
from copygen.gen.front.validate import load_text
from tests.conftest import ROOT

STRATEGY = """
target t { xlen 64; misaligned slow }
copy_user c for t { small below 71; align dst; words unroll 8; shift unroll 1; tail words; fault exact }
clear_user z for t { small below 16; align dst; words unroll 2; tail bytes; fault exact }
"""
CLASSES = """
target t { xlen 64; misaligned slow }
copy_user c for t { small below 8; align dst; words unroll 8; then words unroll 2;
                    shift unroll 4 schedule paired; then shift unroll 2; tail words; fault exact }
clear_user z for t { small below 8; align dst; words unroll 2; then words unroll 1; tail bytes;
                     fault exact }
"""


def insns(fn):
    return [i for ph in fn.phases + fn.fault_exits for i in ph.body if isinstance(i, Insn)]


def labels(fn):
    out = {ph.label for ph in fn.phases + fn.fault_exits if ph.label}
    out |= {i.name for ph in fn.phases + fn.fault_exits for i in ph.body
            if isinstance(i, Label) and not i.name.isdigit()}
    out |= {i.fixup for i in insns(fn) if i.fixup}
    return out


@pytest.fixture(scope="module", params=[STRATEGY, CLASSES], ids=["kernel", "classes"])
def st(request):
    return load_text(request.param)


def test_a_copy_sets_sum_on_entry_and_clears_it_on_every_exit(st):
    fn = copy_user_function(st.copy_user)
    ops = [i.op for i in insns(fn)]
    assert ops.count("csrs") == 1
    # every return (the class layout's byte loop has its own) and the fault
    # exit clear SUM just before it
    rets = [k for k, op in enumerate(ops) if op == "ret"]
    assert len(rets) >= 2 and all("csrc" in ops[k - 3:k] for k in rets), ops
    assert ops.count("csrc") == len(rets)
    # SUM is on before the first branch (so on every path); the class
    # layout computes the end of dst between `li` and `csrs`
    entry = [i.op for i in fn.phases[0].body]
    assert entry[0] == "li" and entry.index("csrs") in (1, 2), entry
    assert not any(op.startswith("b") for op in entry[:entry.index("csrs")]), entry


def test_sum_held_copy_never_touches_sum(st):
    fn = copy_user_function(st.copy_user, sum_held=True)
    assert not [i for i in insns(fn) if i.op in ("csrs", "csrc", "csrw", "csrrc", "csrrs")]
    assert not [i for i in insns(fn) if "SR_SUM" in i.operands]
    # the same copy otherwise: the same user accesses and fault exits
    plain = copy_user_function(st.copy_user)
    assert fn.user_accesses() == plain.user_accesses()
    assert [i.fixup for i in insns(fn) if i.fixup] == [i.fixup for i in insns(plain) if i.fixup]
    assert "caller" in " ".join(fn.summary)
    assert all("SR_SUM" not in r for ph in fn.phases for r, _ in ph.regs)


def test_prefix_names_every_local_label(st):
    for fn, prefix in ((copy_user_function(st.copy_user, prefix="ucopy"), "ucopy"),
                       (clear_user_function(st.clear_user, prefix="uclear"), "uclear")):
        assert labels(fn)
        assert all(name.startswith(f".L{prefix}_") for name in labels(fn)), labels(fn)


def _caller(body: str) -> str:
    """A mainline-style wrapper: SUM set around a call to the body."""
    return f"""
#include <linux/linkage.h>
#include <asm/asm.h>
#include <asm/asm-extable.h>
#include <asm/csr.h>
	.macro fixup op reg addr lbl
100:
	\\op \\reg, \\addr
	_asm_extable	100b, \\lbl
	.endm
	.text
SYM_FUNC_START(copy_sum_held)
{body}SYM_FUNC_END(copy_sum_held)
"""


def test_sum_held_body_copies_and_leaves_sum_set_even_on_a_fault(st, tmp_path):
    fn = copy_user_function(st.copy_user, sum_held=True)
    src = tmp_path / "held.S"
    src.write_text(_caller(render_body(fn, ["test"])))
    obj, elf = tmp_path / "held.o", tmp_path / "held.elf"
    toolchain.assemble(src, ROOT / "shim" / "include", obj)
    toolchain.link([obj], ROOT / "shim" / "copygen.ld", elf)
    m = Machine.from_elf(elf)
    user, kern = 0x1000_0000, 0x7000_0000
    m.map(user, 0x2000, user=True)
    m.map(kern, 0x2000, user=False)
    data = bytes(range(200))
    m.write(kern, data)
    r = m.call("copy_sum_held", user + 3, kern, 200, sum_at_entry=True)
    assert r.ret == 0 and m.read(user + 3, 200) == data and r.sum_at_exit
    # the destination's second page is gone: the copy stops at the boundary
    m.unmap(user + 0x1000, 0x1000)
    r = m.call("copy_sum_held", user + 0x1000 - 100, kern, 150, sum_at_entry=True)
    assert r.faults and r.sum_at_exit
    assert r.ret == 50 and m.read(user + 0x1000 - 100, 100) == data[:100]


def test_the_c_sketch_of_each_loop_has_the_bound_of_its_code():
    """Every `while (end - dst >= N)` in a generated phase comment is a
    bound the code of that routine tests (the limit register is set to end
    - N somewhere in it): the sketch of a pipelined loop says 2 blocks, of
    a shift block loop its whole block."""
    import re
    for path in sorted((ROOT / "out").glob("*/uaccess.S")):
        text = path.read_text()
        for n in {int(m) for m in re.findall(r"while \(end - dst >= (\d+)\)", text)}:
            assert f"from which {n} bytes remain" in text or f"end - {n}" in text, (path, n)
        # a shift loop's block moves dst by the whole block, one word at a time
        for m in re.finditer(r"for \(i = 0; i < (\d+); i\+\+\)", text):
            assert int(m.group(1)) > 1, path


def test_generated_lines_fit_checkpatchs_100_columns():
    """checkpatch.pl warns at 101 columns (tabs at 8): the u74tuned patch
    of Linux 6.12 had one such line, a branch's note."""
    long = [(p.parent.name, i + 1) for p in sorted((ROOT / "out").glob("*/uaccess*.S"))
            for i, line in enumerate(p.read_text().splitlines()) if len(line.expandtabs(8)) > 100]
    assert long == []


PIECES_INLINE = """
target t { xlen 64; misaligned slow }
copy_user c for t { small below 16; align dst; words unroll 8 schedule paired;
                    then words unroll 4 schedule paired; shift unroll 4 schedule paired;
                    tail words; ends pieces; inline WHERE; fault exact }
"""


@pytest.mark.parametrize("where, shortcut", [("both", True), ("words", True),
                                             ("shift", False), ("none", False)])
def test_an_in_line_first_loop_branches_once_to_the_last_pieces(where, shortcut):
    """With the first word loop in line and the ends in pieces, a call
    that loop leaves with less than a word goes by one forward branch to
    the last test (`.Lcopy_last`: anything left?) instead of failing the
    second class's test and the tail's first; otherwise the loop's exit
    tests for nothing left, as before."""
    fn = copy_user_function(load_text(PIECES_INLINE.replace("WHERE", where)).copy_user)
    body = insns(fn)
    to_last = [i for i in body if i.op == "bltu" and i.operands == ("a3", "t0", ".Lcopy_last")]
    assert len(to_last) == (1 if shortcut else 0)
    assert (".Lcopy_last" in labels(fn)) == shortcut
    if shortcut:
        last = next(ph for ph in fn.phases if ph.label == ".Lcopy_last")
        assert [i.text() for i in last.body] == ["bne\ta0, a3, .Lcopy_tail_pieces"]
