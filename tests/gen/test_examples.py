"""Every example parses, builds with -Werror, and links into a usable ELF."""
from __future__ import annotations

import pytest
from elftools.elf.elffile import ELFFile

from copygen.gen.front.validate import load_file
from tests.conftest import EXAMPLES

USER = {"__asm_copy_to_user", "__asm_copy_from_user", "__clear_user"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_parses_without_errors(path):
    st = load_file(path)
    assert st.routines(), "an example must define at least one routine"


def test_all_five_kinds_of_example_exist():
    stems = {p.stem for p in EXAMPLES}
    assert {"pre2021", "kernel2021", "string2021", "c910fast", "u74pipelined"} <= stems


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_links_with_symbols_and_extable(path, built_examples):
    res = built_examples[path.stem]
    with open(res.elf, "rb") as f:
        elf = ELFFile(f)
        assert elf["e_machine"] == "EM_RISCV"
        symtab = elf.get_section_by_name(".symtab")
        names = {s.name: s for s in symtab.iter_symbols()}
        for sym in res.symbols:
            assert sym in names, f"{sym} missing from {res.elf}"
            assert names[sym]["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
            assert names[sym]["st_value"] >= 0x80200000
        ex = elf.get_section_by_name("__ex_table")
        user_syms = USER & set(res.symbols)
        if user_syms:
            assert ex is not None and ex.data_size % 12 == 0 and ex.data_size > 0
        if "__asm_copy_from_user" in res.symbols:
            assert names["__asm_copy_from_user"]["st_value"] == names["__asm_copy_to_user"]["st_value"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_string_object_calls_nothing(path, built_examples):
    """GCC must not turn our byte loops into calls to memcpy/memset.  The
    one call string.c makes itself is memmove's to __memcpy, which is
    another object when memcpy is in assembly (memcpy.S); with memmove
    there too, memcpy.S needs nothing from another object (kexec's
    purgatory links it alone)."""
    res = built_examples[path.stem]
    st = load_file(path).string
    for obj in res.objects:
        with open(obj, "rb") as f:
            symtab = ELFFile(f).get_section_by_name(".symtab")
            undefined = [s.name for s in symtab.iter_symbols()
                         if s["st_shndx"] == "SHN_UNDEF" and s.name]
        allowed = []
        if st and st.memcpy_asm and obj.name == "string.o" and not st.memmove_asm:
            allowed = ["__memcpy"]
        assert undefined in ([], allowed), f"{obj.name} needs {undefined}"


def _sum_clears_before_every_ret(text: str) -> bool:
    """In the emitted assembly, each `ret` is preceded by csrc of SR_SUM."""
    last_csr = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("csrs") or line.startswith("csrc"):
            last_csr = line.split()[0]
        if line == "ret" and last_csr != "csrc":
            return False
        if line.startswith("SYM_FUNC_START"):
            last_csr = None
    return True


UACCESS_EXAMPLES = [p for p in EXAMPLES if load_file(p).copy_user or load_file(p).clear_user]


@pytest.mark.parametrize("path", UACCESS_EXAMPLES, ids=lambda p: p.stem)
def test_uaccess_text_is_kernel_dialect(path, built_examples):
    res = built_examples[path.stem]
    S = res.outdir / "uaccess.S"
    text = S.read_text()
    assert text.startswith("/* SPDX-License-Identifier:")
    for inc in ("linux/linkage.h", "linux/export.h", "asm/asm.h", "asm/asm-extable.h",
                "asm/csr.h"):
        assert f"#include <{inc}>" in text
    assert "SYM_FUNC_START(__asm_copy_to_user)" in text or "SYM_FUNC_START(__clear_user)" in text
    assert "_asm_extable" in text and "EXPORT_SYMBOL(" in text
    assert _sum_clears_before_every_ret(text)
    # every load or store of user memory goes through the fixup macro
    for line in text.splitlines():
        op = line.strip().split("\t")[0]
        assert op not in ("ld", "sd", "lbu", "sb", "REG_L", "REG_S"), line
    # only caller-saved registers are written
    for bad in ("s0", "s1", "sp,", "gp", "tp"):
        assert f"\t{bad}" not in text.replace("/*", "\n/*")
