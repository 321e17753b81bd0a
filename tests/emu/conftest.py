"""Fixtures of the emulator tests (helpers live in emu_build.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu_build import build_elf, have_toolchain


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("emu-build")


@pytest.fixture(scope="session")
def uaccess_elf(build_dir) -> Path:
    if not have_toolchain():
        pytest.skip("riscv64-linux-gnu toolchain not installed")
    return build_elf(build_dir, ["uaccess_mini.S"], name="uaccess_mini.elf")
