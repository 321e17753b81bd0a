"""Code size as a measured quantity: `.text` bytes per routine agree with
`nm -S`, and bench and rank carry the figure in their JSON."""
from __future__ import annotations

import json
import os
import subprocess

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.gen.build import build_file
from copygen.measure.size import routine_sizes
from tests.conftest import ROOT

KERNEL2021 = ROOT / "examples" / "kernel2021.copy"
HEAD = """target u74 { xlen 64; misaligned slow }
copy_user k for u74 { small below 71; align dst; words unroll 8 schedule loads_first;
                      shift unroll 1 schedule interleave; tail bytes; fault exact }
"""
LIB = HEAD + """string lib for u74 {
    memcpy { small below 16; align dst; words unroll 1; shift unroll 1; tail bytes }
    memset { small below 16; align dst; words unroll 1; tail bytes }
}
"""


def _tool(name: str) -> str:
    return os.environ.get("CROSS_COMPILE", "riscv64-linux-gnu-") + name


def _nm_sizes(elf) -> dict[str, int]:
    out = subprocess.run([_tool("nm"), "-S", str(elf)], capture_output=True, text=True, check=True)
    sizes = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4:                 # address, size, type, name
            sizes[parts[3]] = int(parts[1], 16)
    return sizes


def _section_size(elf, name: str) -> int:
    out = subprocess.run([_tool("objdump"), "-h", str(elf)], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[1] == name:
            return int(parts[2], 16)
    return 0


@pytest.mark.parametrize("text", [KERNEL2021.read_text(), LIB], ids=["kernel2021", "string"])
def test_text_bytes_are_what_nm_says(tmp_path, text):
    src = tmp_path / "s.copy"
    src.write_text(text)
    elf = build_file(src, tmp_path / "out").elf
    sizes = routine_sizes(elf)
    nm = _nm_sizes(elf)
    assert sizes and all(z.text_bytes == nm[s] > 0 for s, z in sizes.items())
    # the exception table is shared out to the routines whose code faults, aliases once
    code = {z.routine: z.extable_bytes for z in sizes.values()
            if z.routine not in ("__asm_copy_from_user", "memcpy", "memmove", "memset")}
    assert sum(code.values()) == _section_size(elf, "__ex_table")


def test_bench_and_rank_json_carry_text_bytes(tmp_path):
    cache = ["--build-cache", str(tmp_path / "c")]
    r = CliRunner().invoke(main, ["bench", str(KERNEL2021), "--sizes", "8", "--align", "0:0",
                                  "--json", *cache])
    assert r.exit_code == 0, r.output
    sizes = {z["routine"]: z["text_bytes"] for z in json.loads(r.stdout)["sizes"]}
    elf = json.loads(r.stdout)["elf"]
    assert sizes == {s: n for s, n in _nm_sizes(elf).items() if s in sizes} and len(sizes) == 3
    r = CliRunner().invoke(main, ["rank", str(KERNEL2021), "--workload", "uniform:0-16", "--json", *cache])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)["ranking"]["copy_to_user"]
    assert row["text_bytes"] == sizes["__asm_copy_to_user"]
