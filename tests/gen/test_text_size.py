"""Code size as a measured quantity: `.text` bytes per routine agree with
`nm -S`, `tune --max-text` prunes, the Pareto front is the non-dominated
set, and bench, rank and tune carry the figure in their JSON."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess

import pytest
from click.testing import CliRunner

from copygen.cli import main
from copygen.gen.build import build_file
from copygen.measure.size import routine_sizes
from copygen.tune.figures import pareto_front
from copygen.tune.run import ranked, winner
from tests.conftest import ROOT

KERNEL2021 = ROOT / "examples" / "kernel2021.copy"
HEAD = """target u74 { xlen 64; misaligned slow; profile u74_spec }
copy_user k for u74 { small below 71; align dst; words unroll 8 schedule loads_first;
                      shift unroll 1 schedule interleave; tail bytes; fault exact }
"""
# unroll 2 and 16: 192 and 356 bytes of __asm_copy_to_user
TWO = HEAD + "sweep s for k { words unroll [2, 16] }\n"
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


def test_max_text_prunes_and_the_json_carries_the_bytes(tmp_path, monkeypatch):
    """The faster point (unroll 16 under `network`, in-order u74_spec) is over the limit: it
    ranks last, is never proved and cannot win; the proof is faked, the
    pruning is what is tested."""
    from copygen.tune import run
    from copygen.verify.solver.cache import prover_fingerprint
    proved = []

    def fake_prove(store, row, symbol, kind, cache, jobs, rules=None):
        proved.append(row["code"])
        store.add_entry_proof(row["code"], symbol, kind, "proved", {}, {}, 0.0, prover_fingerprint(),
                              row["elf_sha256"])
    monkeypatch.setattr(run, "_prove", fake_prove)
    src = tmp_path / "t.copy"
    src.write_text(TWO)
    r = CliRunner().invoke(main, ["tune", str(src), "--db", str(tmp_path / "t.db"), "--top", "2",
                                  "--max-text", "300", "--json", "--build-cache", str(tmp_path / "c"),
                                  "--proof-cache", str(tmp_path / "p"), "--report", str(tmp_path / "rep")])
    assert r.exit_code == 0, (r.output, r.stderr)
    out = json.loads(r.stdout)
    rows = {row["point"]: row for row in out["rows"]}
    big, small = rows["words unroll 16 schedule loads_first"], rows["words unroll 2 schedule loads_first"]
    assert (big["text_bytes"], small["text_bytes"]) == (356, 192)
    assert big["extable_bytes"] > small["extable_bytes"] > 0
    assert big["proof"] == "pruned: text 356 B > max 300 B" and big["rank"] == 2
    assert out["pruned"] == [{"point": big["point"], "reason": "text 356 B > max 300 B"}]
    assert out["winner"]["label"] == small["point"] and out["max_text"] == 300
    assert len(proved) == 2 and len(set(proved)) == 1   # the small point's two directions only
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "| 192 |" in report and (tmp_path / "rep" / "pareto.png").stat().st_size > 0
    shown = json.loads(CliRunner().invoke(main, ["tune", "show", str(tmp_path / "t.db"), "--json",
                                                 "--max-text", "1K"]).stdout)
    # under a looser limit the faster point ranks first, left unproved by the run
    assert shown["pruned"] == [] and shown["rows"][0]["point"] == big["point"]
    assert shown["rows"][0]["proof"].startswith("not proved") and shown["winner"]["label"] == small["point"]


@pytest.mark.parametrize("value", ["-5", "0", "lots", "1.5K"])
def test_a_bad_max_text_is_a_located_error(tmp_path, value):
    src = tmp_path / "t.copy"
    src.write_text(TWO)
    r = CliRunner().invoke(main, ["tune", str(src), "--dry-run", "--max-text", value])
    assert r.exit_code == 2 and "Invalid value for '--max-text'" in r.stderr
    assert "1KiB" in r.stderr


def test_the_pareto_front_is_the_non_dominated_set():
    pts = [(100, 50), (120, 40), (110, 60), (120, 45), (200, 40), (90, 70), (300, 10),
           (300, 10), (95, 80), (None, 1)]
    rows = [{"text_bytes": x, "expected": y, "i": i} for i, (x, y) in enumerate(pts)]
    front = pareto_front(rows)
    assert [(r["text_bytes"], r["expected"]) for r in front] == [(90, 70), (100, 50), (120, 40), (300, 10)]
    assert front[-1]["i"] == 6                   # of two equal points, the first stands


def test_a_pruned_point_ranks_last_and_never_wins():
    rows = [{"label": "big", "expected": 10.0, "text_bytes": 2000, "verdict": "proved", "grid": None},
            {"label": "small", "expected": 12.0, "text_bytes": 900, "verdict": "proved", "grid": None},
            {"label": "new", "expected": None, "text_bytes": None, "verdict": None, "grid": None}]
    out = ranked(rows, None, 1024)
    assert [r["label"] for r in out] == ["small", "big", "new"]
    assert out[1]["pruned"] == "text 2000 B > max 1024 B" and out[2]["pruned"] is None
    assert winner(out)["label"] == "small"
    assert winner(ranked(rows, None, 512)) is None


def test_a_store_from_before_extable_bytes_opens_and_keeps_its_rows(tmp_path):
    from copygen.tune.store import Store
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as con:
        con.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
                          "INSERT INTO meta VALUES ('schema', '1');"
                          "CREATE TABLE evals (code TEXT, profile TEXT, workload TEXT, expected REAL, "
                          "mean_size REAL, code_bytes INTEGER, grid TEXT, seconds REAL, "
                          "PRIMARY KEY (code, profile, workload));"
                          "INSERT INTO evals VALUES ('a', 'u74', 'network', 9.5, 64, 268, '{}', 1.0);")
    store = Store(db)
    assert store.eval_of("a", "u74", "network") == {"expected": 9.5, "mean_size": 64, "text_bytes": 268,
                                                    "grid": {}, "seconds": 1.0, "extable_bytes": None}
    store.add_eval("b", "u74", "network", {"expected": 8.0, "mean_size": 64, "text_bytes": 300,
                                           "extable_bytes": 120, "grid": {}, "seconds": 1.0})
    assert store.eval_of("b", "u74", "network")["extable_bytes"] == 120


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
