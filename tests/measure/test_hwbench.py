"""`copygen hwbench`: the one static executable it builds for a board, run
here under qemu-riscv64 in its quick mode and read back with
measure.measurements; the SUM toggles of the uaccess bodies made nops and
nothing else changed; two inputs defining the same symbols; a wrong
routine stopping the run; bad input refused with nothing written."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from elftools.elf.elffile import ELFFile

from copygen.cli import main
from copygen.gen import toolchain
from copygen.gen.build import build_file
from copygen.gen.resources import shim_dir
from copygen.gen.rvobject import instructions, privileged, sum_toggle
from copygen.measure.measurements import parse, read
from tests.conftest import ROOT

U74 = str(ROOT / "examples" / "u74tuned.copy")
KSTYLE = str(ROOT / "tests" / "kernel_style" / "uaccess_2021_ok.S")     # same symbols as U74's uaccess
BUGGY = str(ROOT / "tests" / "kernel_style" / "bug_loop_bound_2021.S")
BOARD = 'Star "Five", 2'

pytestmark = pytest.mark.skipif(
    not (shutil.which("qemu-riscv64") and shutil.which(toolchain.cross_prefix() + "gcc")),
    reason="needs qemu-riscv64 and the riscv64-linux-gnu toolchain")


def hwbench(*args):
    return CliRunner().invoke(main, ["hwbench", *map(str, args)])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """u74tuned.copy and a kernel-style uaccess.S, which define the same
    uaccess symbols, in one executable; (its directory, the JSON envelope)."""
    out = tmp_path_factory.mktemp("hwbench") / "board"
    r = hwbench(U74, KSTYLE, "-o", out, "--sizes", "8,64,1448", "--board", BOARD, "--core", "u74",
                "--clock-ghz", "1.5", "--json")
    assert r.exit_code == 0, r.output
    return out, json.loads(r.stdout)


@pytest.fixture(scope="module")
def quick_run(built):
    ran = toolchain.run_user(built[0] / "hwbench", ["--quick"], timeout=120)
    assert ran.returncode == 0, ran.stderr
    return ran


def test_the_quick_run_prints_measurements_flagged_emulated(built, quick_run):
    table = parse(quick_run.stdout, "hwbench")
    assert table.emulated and table.header["emulated"] == "yes"
    assert table.header["tool"].startswith("copygen hwbench ")
    assert table.header["board"] == BOARD and table.header["clock_ghz"] == "1.5"
    assert table.header["timer"] in ("rdcycle", "clock_gettime") and table.header["cpuinfo"]
    assert table.header["uname"].startswith("Linux ") and table.header["uname"].endswith("riscv64")
    cycles = table.header["timer"] == "rdcycle"
    cells = {}
    for row in table.rows:
        assert (row.board, row.core, row.clock_ghz) == (BOARD, "u74", 1.5)
        assert row.reps == 3 and row.value > 0 and row.spread is not None
        per_call = row.method == "isolated"
        assert row.unit == {(True, True): "cycles_per_call", (True, False): "ns_per_call",
                            (False, True): "bytes_per_cycle", (False, False): "bytes_per_ns"}[
                                (per_call, cycles)]
        key = (row.routine, row.source_file, row.size, row.src_off, row.dst_off)
        cells.setdefault(key, set()).add((row.method, row.state))
    # --quick keeps the sizes 8, 64, 1448 and the pairs 0:0 and 1:3 (clear: dst only)
    routines = {(r["routine"], r["source_file"]) for r in built[1]["routines"]}
    want = {(name, src, n, s, d) for name, src in routines for n in (8, 64, 1448)
            for s, d in ([(0, 0), (0, 3)] if "clear" in name or "memset" in name else [(0, 0), (1, 3)])}
    assert set(cells) == want
    for combos in cells.values():       # orbench never falls below a timer's resolution
        assert {("orbench", "warm"), ("orbench", "cold")} <= combos
    said = quick_run.stderr.count("row left out")
    assert len(table.rows) == 4 * len(want) - said


def test_two_inputs_may_define_the_same_symbols(built, quick_run):
    out, env = built
    by_symbol = {}
    for r in env["routines"]:
        by_symbol.setdefault(r["routine"], []).append((r["source_file"], r["symbol"]))
    for name in ("__asm_copy_to_user", "__clear_user"):
        sources = sorted(src for src, _ in by_symbol[name])
        assert sources == sorted([U74, KSTYLE])
        assert len({sym for _, sym in by_symbol[name]}) == 2     # each input its own prefix
    listed = toolchain.run_user(out / "hwbench", ["--list"]).stdout.splitlines()
    assert f"__clear_user\tclear_user\t{KSTYLE}" in listed and f"memcpy\tmemcpy\t{U74}" in listed
    rows = {(r.routine, r.source_file) for r in parse(quick_run.stdout).rows}
    assert {("__asm_copy_to_user", U74), ("__asm_copy_to_user", KSTYLE)} <= rows
    # the C library's memcpy is not the one timed: the routine's own symbol is renamed
    syms = {s.name for s in ELFFile(open(out / "hwbench", "rb")).get_section_by_name(".symtab")
            .iter_symbols()}
    assert {"hwb0_memcpy", "hwb0___asm_copy_to_user", "hwb1___asm_copy_to_user", "memcpy"} <= syms


def _code(path: Path) -> dict[str, bytes]:
    with open(path, "rb") as f:
        elf = ELFFile(f)
        return {s.name: s.data() for s in elf.iter_sections() if s["sh_flags"] & 0x4 and s.data_size}


def _is_sum_toggle(word: int) -> bool:
    """csrrs/csrrc x0, sstatus, rs1 (rs1 != x0), decoded here on its own."""
    return (word & 0x7F == 0x73 and (word >> 12) & 7 in (2, 3) and (word >> 7) & 31 == 0
            and (word >> 15) & 31 != 0 and word >> 20 == 0x100)


def test_only_the_sum_toggles_change(built):
    """*.kernel.o against *.user.o: the words that differ are exactly the
    listed ones, each a SUM toggle before and a 4-byte nop after, and every
    toggle of the code is listed."""
    total = 0
    for o in built[1]["objects"]:
        before, after = _code(Path(o["kernel_object"])), _code(Path(o["user_object"]))
        assert before.keys() == after.keys()
        for name, old in before.items():
            new = after[name]
            assert len(old) == len(new)
            mine = {p["offset"] for p in o["neutralised"] if p["section"] == name}
            differ = {at for at in range(0, len(old), 2) if old[at:at + 2] != new[at:at + 2]}
            assert differ <= {at + half for at in mine for half in (0, 2)}
            for at in mine:
                assert _is_sum_toggle(int.from_bytes(old[at:at + 4], "little"))
                assert new[at:at + 4] == (0x13).to_bytes(4, "little")       # addi x0, x0, 0
            toggles = {at for at, size, w in instructions(old) if size == 4 and _is_sum_toggle(w)}
            assert toggles == mine
            total += len(mine)
    assert total >= 8           # two uaccess bodies, each setting and clearing SUM


def test_the_objects_are_the_kernels_machine_code(built, tmp_path):
    """*.kernel.o: the build's own objects, symbols renamed, code untouched."""
    objects = {Path(o["kernel_object"]).name: Path(o["kernel_object"]) for o in built[1]["objects"]}
    fresh = build_file(U74, tmp_path / "copy")
    for obj in fresh.objects:
        assert _code(objects[f"0-u74tuned-{obj.stem}.kernel.o"]) == _code(obj)
    asm = tmp_path / "k.o"
    toolchain.assemble(Path(KSTYLE), shim_dir() / "include", asm, vector=True)
    assert _code(objects["1-uaccess_2021_ok-uaccess_2021_ok.kernel.o"]) == _code(asm)


def test_decoding_the_system_instructions():
    assert sum_toggle(0x100FA073) == "csrs sstatus, t6"
    assert sum_toggle(0x100FB073) == "csrc sstatus, t6"
    assert sum_toggle(0x10029073) is None and privileged(0x10029073)    # csrw sstatus, t0
    assert sum_toggle(0x100FA0F3) is None                                # rd = ra: not a toggle
    assert privileged(0xC0002573) is None                                # rdcycle a0
    assert privileged(0x10200073) and privileged(0x10500073)             # sret, wfi
    assert privileged(0x00000073) is None and privileged(0x00100073) is None
    walked = list(instructions(bytes.fromhex("0100" "73a00f10" "8280")))
    assert [(at, size) for at, size, _ in walked] == [(0, 2), (2, 4), (6, 2)]


def test_the_executable_narrows_and_overrides(built, monkeypatch):
    exe = built[0] / "hwbench"
    ran = toolchain.run_user(exe, ["--quick", "--routine", "memcpy", "--sizes", "16", "--align", "2:2",
                                   "--method", "orbench", "--timer", "clock_gettime",
                                   "--emulated", "no", "--board", "other"])
    assert ran.returncode == 0, ran.stderr
    table = parse(ran.stdout)
    assert table.header["emulated"] == "no" and table.header["timer"] == "clock_gettime"
    assert {(r.routine, r.size, r.src_off, r.dst_off, r.mode, r.method, r.unit, r.board)
            for r in table.rows} == {("memcpy", 16, 2, 2, "co-aligned", "orbench", "bytes_per_ns",
                                      "other")}
    assert len(table.rows) == 2
    monkeypatch.setenv("HWBENCH_EMULATED", "no")
    ran = toolchain.run_user(exe, ["--quick", "--routine", "memset", "--sizes", "8"])
    assert "# emulated: no" in ran.stdout.splitlines()
    bad = toolchain.run_user(exe, ["--routine", "strlen"])
    assert bad.returncode == 2 and "strlen" in bad.stderr
    assert toolchain.run_user(exe, ["--sizes", "0"]).returncode == 2
    assert "orbench" in toolchain.run_user(exe, ["--help"]).stdout


def test_emulated_is_told_from_cpuinfo(built, tmp_path, monkeypatch):
    """A board's kernel names rv64 on an `isa` line; qemu-user shows its
    host's cpuinfo, which has none, or (8.1 and later) one of its own."""
    board = tmp_path / "board"
    board.write_text("processor\t: 0\nhart\t\t: 1\nisa\t\t: rv64imafdc_zicntr\nmmu\t\t: sv39\n\n")
    host = tmp_path / "host"
    host.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu isa rv64\n")
    made_up = tmp_path / "qemu"         # what qemu-user 8.1 and later show
    made_up.write_text("processor\t: 0\nhart\t\t: 0\nisa\t\t: rv64imafdc\nmmu\t\t: sv48\n"
                       "uarch\t\t: qemu\n\n")
    args = ["--quick", "--routine", "memset", "--sizes", "8", "--align", "0:0"]
    for cpuinfo, emulated in ((board, "no"), (host, "yes"), (made_up, "yes")):
        monkeypatch.setenv("HWBENCH_CPUINFO", str(cpuinfo))
        table = parse(toolchain.run_user(built[0] / "hwbench", args).stdout)
        assert table.header["emulated"] == emulated
    monkeypatch.setenv("HWBENCH_CPUINFO", str(board))
    table = parse(toolchain.run_user(built[0] / "hwbench", args).stdout)
    assert table.header["cpuinfo"] == ["processor : 0", "hart : 1", "isa : rv64imafdc_zicntr",
                                       "mmu : sv39"]


def test_a_wrong_routine_stops_the_run(tmp_path):
    """The 2021 loop-bound bug writes past dst + 121 with a return of 0."""
    for src, name in ((KSTYLE, "ok"), (BUGGY, "bug")):
        r = hwbench(src, "-o", tmp_path / name, "--routine", "copy_to_user", "--sizes", "121",
                    "--align", "0:0")
        assert r.exit_code == 0, r.output
    assert toolchain.run_user(tmp_path / "ok" / "hwbench", ["--quick"]).returncode == 0
    ran = toolchain.run_user(tmp_path / "bug" / "hwbench", ["--quick"])
    assert ran.returncode == 3
    assert "__asm_copy_to_user" in ran.stderr and BUGGY in ran.stderr and "size 121" in ran.stderr
    r = hwbench(BUGGY, "-o", tmp_path / "bug", "--routine", "copy_to_user", "--sizes", "121",
                "--align", "0:0", "--run", "--quick")
    assert r.exit_code == 1 and "is wrong: size 121" in r.stderr
    assert not (tmp_path / "bug" / "measurements.csv").exists()


def test_run_writes_the_measurements(tmp_path):
    out = tmp_path / "run"
    r = hwbench(U74, "-o", out, "--routine", "memcpy", "--sizes", "8,64", "--run", "--quick", "--json")
    assert r.exit_code == 0, r.output
    env = json.loads(r.stdout)
    assert env["ok"] and env["command"] == "hwbench" and env["measurements"] == str(out / "measurements.csv")
    table = read(out / "measurements.csv")
    assert table.emulated and table.routines() == ["memcpy"] and len(table.rows) == env["rows"]
    assert {(r.size, r.src_off, r.dst_off) for r in table.rows} == {(8, 0, 0), (8, 1, 3),
                                                                   (64, 0, 0), (64, 1, 3)}
    assert sorted(p.name for p in out.iterdir()) == ["README", "hwbench", "hwbench.c",
                                                     "measurements.csv", "objects"]


def _bad_copy(tmp):
    p = tmp / "bad.copy"
    p.write_text("target u74 {\n    xlen 64\n    bogus\n}\n")
    return [p]


def _privileged(tmp):
    p = tmp / "priv.S"
    p.write_text("#include <linux/linkage.h>\nSYM_FUNC_START(memset)\n\tcsrw sscratch, t0\n"
                 "\tret\nSYM_FUNC_END(memset)\n")
    return [p]


BAD = {
    "missing": (lambda t: [t / "nope.copy"], "no such file"),
    "copy_error": (_bad_copy, "syntax error"),
    "not_defined": (lambda t: [ROOT / "examples" / "kernel2021.copy", "--routine", "memcpy"],
                    "no input defines routine `memcpy`"),
    "unknown_routine": (lambda t: [U74, "--routine", "strlen"], "unknown routine `strlen`"),
    "privileged": (_privileged, "privileged CSR 0x140"),
    "not_source": (lambda t: [ROOT / "measure" / "measurements.py"], "cannot benchmark a `.py` file"),
    "zero_size": (lambda t: [U74, "--sizes", "0,8"], "--sizes"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_one_error_and_writes_nothing(case, tmp_path):
    make, words = BAD[case]
    args = make(tmp_path)
    fresh, kept = tmp_path / "fresh", tmp_path / "kept"
    kept.mkdir()
    (kept / "hwbench").write_text("an earlier build")
    for out in (fresh, kept):
        r = hwbench(*args, "-o", out, "--json")
        assert r.exit_code == 2, r.output
        env = json.loads(r.stdout)
        assert not env["ok"] and words in env["error"]["message"] + (env["error"]["hint"] or "")
        errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]
        assert len(errors) == 1 and "Traceback" not in r.stderr
    assert not fresh.exists()
    assert [p.name for p in kept.iterdir()] == ["hwbench"]
    assert (kept / "hwbench").read_text() == "an earlier build"
