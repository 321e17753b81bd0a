"""The kernel-style fixtures of tests/kernel_style/: each assembles against the
shim and links with shim/copygen.ld; under the qemu oracle the OK routine
keeps the contract (with the block policy's known corners) and each bug file
breaks it the way its README says."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from copygen.gen import toolchain
from copygen.mutate import edits as mutate, judge as mutjudge
from copygen.mutate.insns import SZREG
from copygen.mutate.judge import fault_in_range

ROOT = Path(__file__).resolve().parent.parent.parent
HERE = ROOT / "tests" / "kernel_style"
# the real kernels' layouts (mainline_layout.S, layout_20*.S, and
# mainline_block_fault.S, the patch walk-through's tree) are
# tests/verify/test_kernel_layouts.py's and tests/patch/test_patch.py's, the vector
# ones (vector_*.S) tests/verify/test_vector_kernel.py's, the memset
# (memset_*.S) tests/gen/test_computed_jump.py's; these are the 2021-style bug
# fixtures
FILES = sorted(p for p in HERE.glob("*.S") if "layout" not in p.stem
               and not p.stem.startswith(("mainline", "vector", "memset")))
EXPECTED = json.loads((HERE / "expected.json").read_text())
BLOCK = 8 * SZREG
CLAUSES = {"C1", "C2", "C3", "C4", "C5", "C6", "S1", "S2", "A1", "B1", "B2", "T1"}
SYMBOLS = {"__asm_copy_to_user", "__asm_copy_from_user", "__clear_user"}


def test_expected_json_names_every_file_with_known_clauses():
    files = {k for k in EXPECTED if not k.startswith("_")}
    assert files == {p.name for p in FILES}
    for name, clauses in EXPECTED.items():
        assert set(clauses) <= CLAUSES, name
        assert name.startswith("_") or name.endswith("_ok.S") or clauses, name
    readme = (HERE / "README.md").read_text()
    assert all(f"`{p.name}`" in readme for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_assembles_and_links(path, tmp_path):
    text = path.read_text()
    for inc in ("<linux/linkage.h>", "<linux/export.h>", "<asm/asm.h>",
                "<asm/asm-extable.h>", "<asm/csr.h>"):
        assert f"#include {inc}" in text
    assert "_asm_extable" in text and "SYM_FUNC_ALIAS" in text and "100b" in text
    obj, elf = tmp_path / "f.o", tmp_path / "f.elf"
    toolchain.assemble(path, ROOT / "shim" / "include", obj)
    toolchain.link([obj], ROOT / "shim" / "copygen.ld", elf)
    with elf.open("rb") as f:
        e = ELFFile(f)
        names = {s.name for s in e.get_section_by_name(".symtab").iter_symbols()}
        assert SYMBOLS <= names
        assert e.get_section_by_name(".text").header.sh_addr == 0x80200000
        # one 12-byte entry per user access (the `fixup` lines)
        assert e.get_section_by_name("__ex_table").data_size == 12 * text.count("\tfixup ")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every fixture run on the same cases: {file stem: {fn: [(case, result)]}}."""
    bench = mutjudge.make_bench(tmp_path_factory.mktemp("ks"), count=600, seed=4)
    out = {}
    for path in FILES:
        exe = mutjudge.build_exe(bench, path.read_text(), path.stem)
        assert exe is not None, path
        out[path.stem] = {}
        for fn, cases in bench.cases.items():
            run = mutjudge.run_exe(bench, exe, cases)
            assert not run.died, f"{path.name} {fn}: {run.died}"
            out[path.stem][fn] = list(zip(cases, run.results))
    return out


def _avail(case) -> int:
    """Bytes of the faulting buffer before its inaccessible page."""
    off = case.dst_off if case.fault_side == "dst" else case.src_off
    return min(case.n, max(0, case.fault_at - off))


def _all(runs, stem):
    return [(fn, c, r) for fn, pairs in runs[stem].items() for c, r in pairs]


def test_ok_keeps_the_contract(runs):
    faults = 0
    for fn, c, r in _all(runs, "uaccess_2021_ok"):
        assert not r.sum_at_exit, f"S1: {c}"
        assert 0 <= r.ret <= c.n, f"C2: {c} -> {r.ret}"
        assert r.prefix_ok, f"C3: {c} -> {r.ret}"
        if not fault_in_range(c):
            assert r.ret == 0 and r.rest_untouched, f"C1/B1/B2: {c} -> {r}"
            continue
        faults += 1
        copied, avail = c.n - r.ret, _avail(c)
        assert copied <= avail, f"claims bytes past the fault: {c} -> {r.ret}"
        # the block policy: at most one block (plus the shift copy's look-ahead)
        assert copied >= avail - BLOCK - SZREG, f"lazy return: {c} -> {r.ret}"
        if fn != "to":       # loads and word-by-word clears fault before storing
            assert r.rest_untouched, f"C4 on a load fault: {c} -> {r.ret}"
        if r.ret == c.n:
            assert avail < BLOCK + SZREG, f"C5 beyond the first block: {c}"
    assert faults > 300


def test_sum_bug_leaves_sum_set_after_a_fault(runs):
    rows = _all(runs, "bug_sum_csrs_on_fault")
    assert all(not r.sum_at_exit for _, c, r in rows if not fault_in_range(c))
    assert all(r.sum_at_exit for _, c, r in rows if fault_in_range(c))


def test_size_bug_returns_n_after_bytes_were_stored(runs):
    bad = [(c, r) for _, c, r in _all(runs, "bug_return_size_on_fault")
           if fault_in_range(c) and r.ret == c.n and _avail(c) >= BLOCK + SZREG]
    assert len(bad) > 50
    assert any(not r.rest_untouched for c, r in bad)     # bytes stored past dst+n-N
    assert all(not r.sum_at_exit for _, _, r in _all(runs, "bug_return_size_on_fault"))


def test_loop_bound_bug_writes_past_dst(runs):
    rows = [(c, r) for fn, c, r in _all(runs, "bug_loop_bound_2021")
            if fn != "clear" and not fault_in_range(c)]
    wrote_past = [c for c, r in rows if r.ret == 0 and not r.rest_untouched]
    assert len({c.fn for c in wrote_past}) == 2, "no store past dst+n seen in to and from"
    # the extra block's loads stay inside the aligned word holding the last
    # source byte (at least SZREG*8-(SZREG-1) bytes are left when it starts),
    # so no page-granular oracle sees them: B2's strict variant only
    assert all(r.ret == 0 and r.rest_untouched for _, c, r in _all(runs, "bug_loop_bound_2021")
               if c.fn == "clear" and not fault_in_range(c))


def test_src_end_bug_returns_nonsense(runs):
    rows = _all(runs, "bug_fault_return_from_src_end")
    assert sum(r.ret > c.n for fn, c, r in rows if fn != "clear" and fault_in_range(c)) > 50
    ok = runs["uaccess_2021_ok"]["clear"]
    assert [r for _, r in ok] == [r for fn, _, r in rows if fn == "clear"]


def test_mutations_apply_to_kernel_style_too():
    text = (HERE / "uaccess_2021_ok.S").read_text()
    applied = {k for k, f in mutate.KINDS.items() if f(text)}
    assert applied == set(mutate.KINDS) - {"fixup_offset"}    # no per-offset fixups here
