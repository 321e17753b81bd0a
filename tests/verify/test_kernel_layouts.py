"""`copygen verify` takes the layouts real kernel trees write uaccess.S in,
unchanged (issue 19): mainline's layered copy (an empty vector dispatch
falling through into a wrapper that calls the scalar copy between setting
and clearing SUM, and entry points for callers that hold SUM), the 2021
trees' hand-written absolute __ex_table with ENTRY/END, and the 2017-2020
ones' .altmacro LOCAL labels, ENTRY/ENDPROC and csrs/csrc on sstatus.

The fixtures (tests/kernel_style/*layout*.S) are our own, written from
the algorithm with the structure of each layout.  Proving their entry
points takes 5-30 s each, about two minutes in all: those tests are marked
slow (they run in CI too); the small routines written here take seconds.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from elftools.elf.elffile import ELFFile

from copygen.cli import main
from copygen.emu.insn.decode import decode
from copygen.emu.elf import read_elf
from copygen.emu.errors import ElfError
from copygen.gen import toolchain
from copygen.verify.contract.inputs import routines
from copygen.verify.symbolic.program import Program
from tests.conftest import ROOT, SHARED_PROOFS

HERE = ROOT / "tests" / "kernel_style"
SHIM = ROOT / "shim"
# fixture -> (what its layout includes, __ex_table bytes per entry, the entry points proved)
LAYOUTS = {
    "mainline_layout.S": (("<linux/export.h>", "<asm/hwcap.h>", "<asm/alternative-macros.h>",
                           "<asm/asm-extable.h>"), 12,
                          ("__asm_copy_to_user", "__asm_copy_to_user_sum_enabled", "__clear_user")),
    "layout_2021.S": (("<asm-generic/export.h>", "RISCV_PTR", "ENTRY(", "END("), 16,
                      ("__asm_copy_to_user", "__clear_user")),
    "layout_2017.S": (("<asm-generic/export.h>", ".altmacro", "LOCAL", "ENDPROC(", "csrs\tsstatus"), 16,
                      ("__asm_copy_to_user", "__clear_user")),
}


def _link(src, tmp_path, name="f"):
    obj, elf = tmp_path / f"{name}.o", tmp_path / f"{name}.elf"
    toolchain.assemble(src, SHIM / "include", obj)
    toolchain.link([obj], SHIM / "copygen.ld", elf)
    return elf


def _verify(tmp_path, *args):
    r = CliRunner().invoke(main, ["verify", *map(str, args), "--workdir", str(tmp_path / "w"),
                                  "--proof-cache", str(SHARED_PROOFS)])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r


@pytest.mark.parametrize("name", LAYOUTS)
def test_layout_assembles_with_the_shim_unchanged(name, tmp_path):
    text = (HERE / name).read_text()
    marks, entry_size, _ = LAYOUTS[name]
    assert all(m in text for m in marks), name
    elf = _link(HERE / name, tmp_path)
    image = read_elf(elf)
    with elf.open("rb") as f:
        size = ELFFile(f).get_section_by_name("__ex_table").data_size
    # one entry per user access, each naming an instruction of the code
    accesses = text.count("\tfixup ")
    assert size == entry_size * accesses
    assert len(image.extable) == accesses
    prog = Program(image)
    for insn, fixup in image.extable.items():
        assert prog.fetch(insn).name in ("lbu", "sb", "ld", "sd"), hex(insn)
        prog.fetch(fixup)


def test_mainline_entry_points_fall_through_and_hold_sum(tmp_path):
    image = read_elf(_link(HERE / "mainline_layout.S", tmp_path))
    sym = image.symbols
    # without CONFIG_RISCV_ISA_V the dispatchers are empty: each entry point
    # is the first instruction of the function after it
    assert sym["__asm_copy_to_user"] == sym["fallback_scalar_usercopy"] == sym["__asm_copy_from_user"]
    assert sym["__asm_copy_to_user_sum_enabled"] == sym["fallback_scalar_usercopy_sum_enabled"]
    assert routines(tmp_path / "f.elf") == [
        ("__asm_copy_to_user", "to"), ("__asm_copy_from_user", "from"),
        ("__asm_copy_to_user_sum_enabled", "to"), ("__asm_copy_from_user_sum_enabled", "from"),
        ("__clear_user", "clear")]


def test_a_call_is_followed_into_the_callee_and_back(tmp_path):
    image = read_elf(_link(HERE / "mainline_layout.S", tmp_path))
    prog = Program(image)
    routine = prog.routine(image.symbols["__asm_copy_to_user"])
    callee = image.symbols["fallback_scalar_usercopy_sum_enabled"]
    (call,) = [pc for pc in routine.pcs if prog.fetch(pc).name == "jal" and prog.fetch(pc).rd == 1]
    assert routine.edges[call] == (callee,)
    site = call + prog.fetch(call).length
    rets = [pc for pc in routine.pcs if prog.fetch(pc).name == "jalr"]
    # the callee's two returns go back to the call site; the wrapper's own has no successor
    assert sorted(len(routine.edges[pc]) for pc in rets) == [0, 1, 1]
    assert all(routine.edges[pc] in ((), (site,)) for pc in rets)
    # the loop heads are the callee's loops, not the call site
    assert site not in routine.cut_points and len(routine.cut_points) >= 4


def test_alternative_assembles_the_old_code(tmp_path):
    src = tmp_path / "alt.S"
    src.write_text('#include <asm/hwcap.h>\n#include <asm/alternative-macros.h>\n\t.text\n'
                   'ALTERNATIVE("addi a0, zero, 1", "addi a0, zero, 2", 0, '
                   'RISCV_ISA_EXT_ZVE32X, CONFIG_RISCV_ISA_V)\n')
    toolchain.assemble(src, SHIM / "include", tmp_path / "alt.o")
    with (tmp_path / "alt.o").open("rb") as f:
        code = ELFFile(f).get_section_by_name(".text").data()
    low = int.from_bytes(code[:2], "little")
    raw = low if low & 3 != 3 else int.from_bytes(code[:4], "little")
    insn = decode(raw, 0)
    assert (insn.name, insn.rd, insn.imm) == ("addi", 10, 1)


EXTABLE_SRC = """\
#include <linux/linkage.h>
#include <asm/asm.h>
#include <asm/asm-extable.h>
	.text
	.globl insn0, insn1, insn2, fix0, fix1, fix2
insn0:	sb	zero, 0(a0)
insn1:	ld	a1, 0(a0)
insn2:	sd	a1, 8(a0)
	ret
fix0:	li	a0, 1
fix1:	li	a0, 2
fix2:	li	a0, 3
	ret
"""
# each layout's entry for insn<k> -> fix<k>
EXTABLE_ENTRIES = {
    "relative 12-byte": "\t_asm_extable insn{k}, fix{k}\n",
    "relative 8-byte": ('\t.pushsection __ex_table, "a"\n\t.balign 4\n'
                        "\t.long insn{k} - ., fix{k} - .\n\t.popsection\n"),
    "absolute 16-byte": ('\t.section __ex_table, "a"\n\t.balign RISCV_SZPTR\n'
                         "\tRISCV_PTR insn{k}, fix{k}\n\t.previous\n"),
}


@pytest.mark.parametrize("layout", EXTABLE_ENTRIES)
@pytest.mark.parametrize("count", [1, 2, 3])
def test_extable_layouts_are_told_apart(layout, count, tmp_path):
    """3 entries are 24, 36 or 48 bytes: 48 divides by 8, 12 and 16 alike,
    and 24 by 8 and 12; the entries' addresses settle the layout."""
    src = tmp_path / "x.S"
    src.write_text(EXTABLE_SRC + "".join(EXTABLE_ENTRIES[layout].format(k=k) for k in range(count)))
    image = read_elf(_link(src, tmp_path))
    sym = image.symbols
    assert image.extable == {sym[f"insn{k}"]: sym[f"fix{k}"] for k in range(count)}


def test_an_extable_in_no_layout_is_refused(tmp_path):
    src = tmp_path / "x.S"
    src.write_text(EXTABLE_SRC + '\t.section __ex_table, "a"\n\t.balign 8\n\t.dword 1, 2\n')
    with pytest.raises(ElfError, match="none of the layouts"):
        read_elf(_link(src, tmp_path))


def test_an_unknown_extable_type_is_a_located_error_exit_2(tmp_path):
    src = tmp_path / "typed.S"
    src.write_text("#include <linux/linkage.h>\n#include <asm/asm-extable.h>\n\t.text\n"
                   "SYM_FUNC_START(__clear_user)\n1:\tsb zero, 0(a0)\n"
                   "\t__copygen_extable 1b, 2f, 3, 0\n2:\tret\nSYM_FUNC_END(__clear_user)\n")
    r = _verify(tmp_path, src, "--json")
    assert r.exit_code == 2, r.output
    err = json.loads(r.stdout)["error"]
    assert "has type 3" in err["message"] and "EX_TYPE_FIXUP" in err["message"]


SUM_HELD_COPY = """\
#include <linux/linkage.h>
#include <asm/asm-extable.h>
#include <asm/csr.h>
	.text
/* bytes only; SUM is the caller's */
SYM_FUNC_START(__asm_copy_to_user_sum_enabled)
	add	a3, a0, a2
	bgeu	a0, a3, 2f
1:	lbu	t0, 0(a1)
	_asm_extable 1b, 3f
4:	sb	t0, 0(a0)
	_asm_extable 4b, 3f
	addi	a0, a0, 1
	addi	a1, a1, 1
	bltu	a0, a3, 1b
2:	li	a0, 0
{exit}	ret
3:	sub	a0, a3, a0
	ret
SYM_FUNC_END(__asm_copy_to_user_sum_enabled)
"""


@pytest.mark.parametrize("exit_code,extra", [
    (0, ""),
    # giving SUM up on the way out breaks the caller, who still holds it
    (3, "\tli\tt6, SR_SUM\n\tcsrc\tCSR_STATUS, t6\n"),
])
@pytest.mark.slow
def test_a_sum_enabled_entry_must_return_with_sum_still_set(exit_code, extra, tmp_path):
    src = tmp_path / "held.S"
    src.write_text(SUM_HELD_COPY.replace("{exit}", extra))
    r = _verify(tmp_path, src, "--json", "--all-clauses")     # S2 proved beside S1's violation
    assert r.exit_code == exit_code, r.output
    (rep,) = json.loads(r.stdout)["files"][0]["reports"]
    assert rep["status"]["S1"] == ("proved" if exit_code == 0 else "violated"), rep["detail"]["S1"]
    assert rep["status"]["S2"] == "proved"


WRAPPED_COPY = """\
#include <linux/linkage.h>
#include <asm/asm-extable.h>
#include <asm/csr.h>
	.text
/* mainline's wrapper keeps ra in a register across the call */
SYM_FUNC_START(__asm_copy_to_user)
	li	t6, SR_SUM
	csrs	CSR_STATUS, t6
	mv	t4, ra
	call	copy_bytes
	mv	ra, t4
	csrc	CSR_STATUS, t6
	ret
SYM_FUNC_END(__asm_copy_to_user)

SYM_FUNC_START(copy_bytes)
	add	a3, a0, a2
	bgeu	a0, a3, 2f
1:	lbu	t0, 0(a1)
	_asm_extable 1b, 3f
4:	sb	t0, 0(a0)
	_asm_extable 4b, 3f
	addi	a0, a0, 1
	addi	a1, a1, 1
	bltu	a0, a3, 1b
2:	li	a0, 0
	ret
3:	sub	a0, a3, a0
	ret
SYM_FUNC_END(copy_bytes)
"""


@pytest.mark.slow
def test_a_callee_with_a_loop_returns_to_its_caller(tmp_path):
    """The callee's return after its loop goes back to the call site (the
    loop head keeps ra, a call's return address, and t4, the caller's ra):
    S1 and A1 are judged at the wrapper's own return."""
    src = tmp_path / "wrapped.S"
    src.write_text(WRAPPED_COPY)
    r = _verify(tmp_path, src, "--json")
    (rep,) = json.loads(r.stdout)["files"][0]["reports"]
    assert r.exit_code == 0, rep["detail"]
    assert rep["status"]["S1"] == rep["status"]["A1"] == "proved"


@pytest.mark.slow
@pytest.mark.parametrize("name", LAYOUTS)
def test_every_entry_point_of_a_layout_is_proved(name, tmp_path):
    entries = LAYOUTS[name][2]
    r = _verify(tmp_path, HERE / name, *[a for e in entries for a in ("--routine", e)], "--json")
    out = json.loads(r.stdout)
    reports = out["files"][0]["reports"]
    assert [rep["symbol"] for rep in reports] == list(entries)
    unproved = {rep["symbol"]: {c: rep["detail"][c] for c, st in rep["status"].items()
                                if st != "proved" and c != "B2s"} for rep in reports}
    assert r.exit_code == 0 and not any(unproved.values()), unproved


@pytest.mark.parametrize("name, returned", [("mainline_layout.S", 64), ("mainline_block_fault.S", 72)])
def test_mainline_block_fault_returns_the_whole_size_on_the_second_word(name, returned, tmp_path):
    """mainline_block_fault.S keeps mainline's block-granular fault return
    (docs/patching.md's worked example): copy_from_user of 72 bytes whose
    source page ends 8 bytes in returns 72 although 8 bytes were readable;
    mainline_layout.S's exact exits copy them and return 64."""
    from copygen.emu.api import Machine
    m = Machine.from_elf(_link(HERE / name, tmp_path))
    user, kern = 0x1000_0000, 0x7000_0000
    m.map(user, 0x1000, user=True)
    m.map(kern, 0x1000, user=False)
    m.write(user + 0x1000 - 8, bytes(range(1, 9)))
    r = m.call("__asm_copy_from_user", kern, user + 0x1000 - 8, 72)
    assert r.faults and not r.sum_at_exit
    assert r.ret == returned
