"""ELF loading: segments, symbols, __ex_table, and clean errors."""

from __future__ import annotations

import sys

import pytest

from copygen import emu
from copygen.emu.elf import read_elf
from emu_build import CFLAGS, CROSS, FIXTURES, build_elf, needs_toolchain, run


def test_symbols_extable_and_segments(uaccess_elf):
    image = read_elf(uaccess_elf)
    assert image.symbols["byte_copy_user"] == 0x80200000
    assert {"__start___ex_table", "__stop___ex_table", "leaky_get_word"} <= image.symbols.keys()
    n = (image.symbols["__stop___ex_table"] - image.symbols["__start___ex_table"]) // 12
    assert len(image.extable) == n == 4
    text = image.symbols["byte_copy_user"]
    assert all(text <= insn < fix < text + 0x1000 for insn, fix in image.extable.items())
    assert any(s.executable and not s.writable for s in image.segments)


def test_missing_file_and_not_an_elf(tmp_path):
    with pytest.raises(emu.ElfError, match="cannot read"):
        read_elf(tmp_path / "nope.elf")
    junk = tmp_path / "junk.elf"
    junk.write_bytes(b"not an elf at all" * 10)
    with pytest.raises(emu.ElfError, match="not a valid ELF"):
        read_elf(junk)


def test_wrong_architecture():
    with pytest.raises(emu.ElfError, match="not a 64-bit RISC-V"):
        read_elf(sys.executable if not sys.executable.endswith(".py") else "/bin/sh")


@needs_toolchain
def test_object_file_is_rejected(build_dir):
    obj = build_dir / "obj_only.o"
    run([CROSS + "gcc", "-c", *CFLAGS, "-o", str(obj), str(FIXTURES / "uaccess_mini.S")])
    with pytest.raises(emu.ElfError, match="no loadable segments"):
        read_elf(obj)


def test_unknown_symbol(uaccess_elf):
    m = emu.Machine.from_elf(uaccess_elf)
    with pytest.raises(emu.ElfError, match="no symbol 'memcpy'"):
        m.call("memcpy", 0, 0, 0)


@needs_toolchain
def test_unsupported_extable_type(build_dir):
    src = build_dir / "badex.S"
    src.write_text(".text\n.globl f\nf: ld a0, 0(a0)\n1: ret\n"
                   ".section __ex_table, \"a\"\n.long f - ., 1b - .\n.short 3, 0\n")
    elf = build_elf(build_dir, [src], name="badex.elf")
    with pytest.raises(emu.ElfError, match="type 3"):
        read_elf(elf)


@needs_toolchain
def test_bss_and_data_are_loaded(build_dir):
    src = build_dir / "data.c"
    src.write_text("long d = 0x1234; long z[4]; const long r = 7;\n"
                   "long f(void) { z[1] += d + r; return z[1]; }\n")
    m = emu.Machine.from_elf(build_elf(build_dir, [src], name="data.elf"))
    assert m.call("f").ret == 0x1234 + 7
    assert m.call("f").ret == 2 * (0x1234 + 7)
