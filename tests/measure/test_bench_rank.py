"""`copygen bench` and `copygen rank`: output shapes, ordering sanity, workloads, errors."""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
import warnings

import pytest
from click.testing import CliRunner

from copygen import emu
from copygen.emu.timing.profile import load_profile
from copygen.measure import bench as bench_mod
from copygen.measure.bench import KINDS, Bench, BenchError, Case, Sample, align_class
from copygen.measure.render import bench_figure, plot_bench
from copygen.measure.workload import (WorkloadError, load_llvm_csv, make_workload, parse_aligns, parse_sizes,
                          size_grid)
from copygen.cli import main
from tests.conftest import ROOT, build_text

K2021, PRE = str(ROOT / "examples/kernel2021.copy"), str(ROOT / "examples/pre2021.copy")
STRING = str(ROOT / "examples/string2021.copy")
SAMPLE_CSV = str(ROOT / "bench/workloads/small_headers.csv")


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    build = str(tmp_path_factory.mktemp("bench-build"))

    def run(*args, code=0):
        res = CliRunner().invoke(main, [*args, "--build-cache", build])
        assert res.exit_code == code, (res.output, res.exception)
        return res
    return run


def test_bench_json_shape(cli):
    out = json.loads(cli("bench", K2021, "--sizes", "0,8,100,8192", "--align", "0:0,1:0,3:5", "--json").stdout)
    assert out["ok"] and out["profile"] == "u74" and out["warm"]
    assert out["modelled_by"].startswith("fitted to memcpy_2024_upstream.csv on JH7110")
    samples = out["samples"]
    # copy_to/from_user: 4 sizes x 3 pairs; clear_user has no source: 4 sizes x 2 dst offsets
    assert len(samples) == 2 * 12 + 8
    keys = {"routine", "kind", "size", "src_align", "dst_align", "align_class", "cycles",
            "bytes_per_cycle", "instret", "cache_misses", "misaligned", "source", "measured_cycles"}
    for s in samples:
        assert set(s) == keys and s["cycles"] > 0
        assert s["source"] == "modelled" and s["measured_cycles"] is None     # no --measured
        assert s["bytes_per_cycle"] == pytest.approx(s["size"] / s["cycles"], abs=1e-4)
    assert {s["kind"] for s in samples} == {"copy_to_user", "copy_from_user", "clear_user"}
    big = {(s["kind"], s["src_align"]): s for s in samples if s["size"] == 8192}
    assert big["copy_to_user", 0]["align_class"] == "aligned"
    assert big["copy_to_user", 1]["align_class"] == "misaligned"
    # physical limit of the u74: one 8-byte load plus one store every two cycles
    assert all(s["bytes_per_cycle"] <= 4.0 for s in samples if s["kind"] != "clear_user")


def test_bench_csv_table_and_plot(cli, tmp_path):
    rows = list(csv.DictReader(io.StringIO(cli("bench", STRING, "--sizes", "1-3,64", "--align", "*:0",
                                               "--csv").stdout)))
    # memcpy, memmove: 4 sizes x 8 pairs; memset has no source: 4 sizes x 1 dst offset
    assert len(rows) == 2 * 4 * 8 + 4 and rows[0]["routine"] == "memcpy"
    assert {r["kind"] for r in rows} == {"memcpy", "memmove", "memset"}
    png = tmp_path / "p.png"
    res = cli("bench", STRING, "--sizes", "8,512", "--routine", "memcpy", "--plot", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "memcpy" in res.stdout and "memset" not in res.stdout


@pytest.mark.parametrize("symbols", [("__asm_copy_to_user", "__clear_user"),
                                     ("__asm_copy_from_user", "__clear_user", "memcpy")])
def test_plot_legend_names_every_routine_without_a_warning(tmp_path, symbols):
    """matplotlib leaves out of a legend every label that starts with `_`
    (and warns when none is left): the kernel's symbols all do."""
    samples = [Sample(sym, KINDS[sym].name, n, 0, d, cycles=n + 20 + i, instret=n, cache_misses=0,
                      misaligned=0)
               for i, sym in enumerate(symbols) for n in (8, 64) for d in (0, 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        labels = plot_bench(samples, tmp_path / "p.png", "t", 4.0)
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(labels) == sorted(f"{KINDS[sym].name} ({c})" for sym in symbols
                                    for c in ("aligned", "misaligned"))


def _samples(cycles_of):
    return [Sample(sym, KINDS[sym].name, n, s, d, cycles=cycles_of(sym, n, d), instret=n,
                   cache_misses=0, misaligned=0)
            for sym in ("__asm_copy_to_user", "__asm_copy_from_user") for n in (8, 64, 512)
            for s, d in ((0, 0), (1, 3))]


def test_plot_draws_equal_curves_once_and_names_them_all():
    """copy_to_user and copy_from_user run the same code: one curve per
    alignment class, labelled with both names, not two drawn on each other."""
    import matplotlib.pyplot as plt
    fig = bench_figure(_samples(lambda sym, n, d: n + 10 + d), "t", None)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "copy_to_user = copy_from_user (aligned)", "copy_to_user = copy_from_user (misaligned)"]
    assert len(ax.get_lines()) == 2
    plt.close(fig)
    fig = bench_figure(_samples(lambda sym, n, d: n + 10 + d + (sym == "__asm_copy_to_user")), "t", None)
    assert len(fig.axes[0].get_lines()) == 4          # different: each its own curve
    plt.close(fig)


def test_plot_limit_label_sits_inside_the_frame_above_every_curve():
    import matplotlib.pyplot as plt
    fig = bench_figure(_samples(lambda sym, n, d: max(n // 8, 1)), "t", 8.0)  # curves reach the limit
    fig.canvas.draw()
    ax = fig.axes[0]
    frame = ax.get_window_extent()
    (label,) = [t for t in ax.texts if "limit" in t.get_text()]
    box = label.get_window_extent()
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= frame.x1                      # beside the axes: it hides no curve
    plt.close(fig)


def _cells(line: str) -> list[str]:
    return re.findall(r"\d+ \(\d+\.\d\d\)", line)


def test_piped_bench_table_has_one_line_per_row(cli):
    """Off a terminal (CliRunner's stdout is not one) a table wider than any
    screen keeps each row on one line: its size, then every cell."""
    args = ("bench", K2021, "--sizes", "8,8192", "--align", "*:0,*:3", "--routine", "copy_to_user")
    samples = json.loads(cli(*args, "--json").stdout)["samples"]
    lines = cli(*args).stdout.splitlines()
    for size in (8, 8192):
        want = [f"{s['cycles']} ({s['size'] / s['cycles']:.2f})" for s in samples if s["size"] == size]
        assert len(want) == 16
        rows = [ln for ln in lines if _cells(ln) == want]
        assert len(rows) == 1, "\n".join(lines)
        assert re.search(rf"\b{size}\b", rows[0].split(want[0])[0])


def test_piped_rank_table_has_one_line_per_row(cli, tmp_path):
    """A source path too long for a 200-column table stays whole, on its
    row's line, with the row's figures."""
    deep = tmp_path / ("a_directory_with_a_long_name_" * 6)
    deep.mkdir()
    src = shutil.copy(K2021, deep / "kernel2021.copy")
    args = ("rank", PRE, str(src), "--workload", "uniform:0-64", "--routine", "copy_to_user",
            "--routine", "clear_user")
    entries = json.loads(cli(*args, "--json").stdout)["ranking"]
    assert sum(map(len, entries.values())) == 4
    lines = cli(*args).stdout.splitlines()
    for entry in (e for es in entries.values() for e in es):
        rows = [ln for ln in lines if entry["source"] in ln and entry["routine"] in ln]
        assert len(rows) == 1, "\n".join(lines)
        assert re.search(r" \d+\.\d .* \d+\.\d{3} ", rows[0]), rows[0]     # cycles, bytes/cycle


def test_bench_orders_the_2021_routine_ahead(cli):
    def cycles(path, align):
        out = json.loads(cli("bench", path, "--sizes", "8192", "--align", align,
                             "--routine", "copy_to_user", "--json").stdout)
        return out["samples"][0]["cycles"]
    assert cycles(K2021, "0:0") < cycles(PRE, "0:0")
    assert cycles(K2021, "1:0") * 4 < cycles(PRE, "1:0")   # shift copy vs bytes


def test_rank_json_ordering(cli):
    out = json.loads(cli("rank", PRE, K2021, "--workload", "network", "--json").stdout)
    assert out["ok"] and out["profile"] == "u74" and out["workload"]["name"] == "network+spec"
    assert out["modelled_by"] == load_profile("u74").provenance
    ranking = out["ranking"]
    assert set(ranking) == {"copy_to_user", "clear_user"}   # copy_from_user: same code, skipped
    for entries in ranking.values():
        cyc = [e["expected_cycles"] for e in entries]
        assert cyc == sorted(cyc) and entries[0]["relative"] == 1.0 and entries[0]["rank"] == 1
    assert ranking["copy_to_user"][0]["source"] == K2021     # large copies: the 2021 routine wins


def test_rank_small_sizes_and_llvm_csv(cli):
    out = json.loads(cli("rank", PRE, K2021, "--workload", SAMPLE_CSV, "--routine", "copy_to_user",
                         "--align-mix", "aligned", "--json").stdout)
    assert out["workload"]["max_size"] == 128 and out["workload"]["aligns"] == [[0, 0, 1.0]]
    assert [e["source"] for e in out["ranking"]["copy_to_user"]] == [PRE, K2021]
    rows = list(csv.DictReader(io.StringIO(
        cli("rank", PRE, K2021, "--workload", "small", "--routine", "copy_to_user", "--csv").stdout)))
    # below 71 bytes the 2021 routine is a byte loop; pre-2021's threshold is 16
    assert [r["source"] for r in rows] == [PRE, K2021]
    assert float(rows[1]["relative"]) > 1


def test_rank_skips_files_without_the_routine(cli):
    out = json.loads(cli("rank", K2021, STRING, "--routine", "memcpy", "--workload", "small", "--json").stdout)
    assert [e["source"] for e in out["ranking"]["memcpy"]] == [STRING]


def test_workloads_and_specs():
    wl = make_workload("network")
    assert dict(wl.sizes) == pytest.approx({1448: 0.8, 6500: 0.1, 50000: 0.1})
    assert sum(p for *_, p in wl.aligns) == pytest.approx(1)
    spec = {(s, d): p for s, d, p in wl.aligns}
    assert spec[0, 0] == pytest.approx(0.89 ** 2, rel=0.02)
    for name in ("fleet", "uniform:0-4096", SAMPLE_CSV):
        sizes = make_workload(name).sizes
        grid = size_grid(sizes)
        assert len(grid) <= 160 and sum(grid.values()) == pytest.approx(1)
        # linear interpolation keeps the mean size exact
        assert sum(s * w for s, w in grid.items()) == pytest.approx(sum(s * p for s, p in sizes))
    fleet = dict(make_workload("fleet").sizes)
    assert sum(p for s, p in fleet.items() if s <= 128) == pytest.approx(0.96)
    assert parse_sizes("0-16/8, 100,4..5") == [0, 4, 5, 8, 16, 100]
    assert parse_aligns("*:3")[:2] == [(0, 3), (1, 3)] and len(parse_aligns("all")) == 64
    assert align_class(3, 3) == "co-aligned" and align_class(0, 8) == "aligned"


@pytest.mark.parametrize("text,match", [
    ("0.5,0.5\n0.1\n", "one line"), ("0.5,x", "not a number"), ("0.5,-1", ">= 0"), ("0,0", "sum"),
])
def test_llvm_csv_errors(tmp_path, text, match):
    f = tmp_path / "w.csv"
    f.write_text(text)
    with pytest.raises(WorkloadError, match=match):
        load_llvm_csv(f)


def test_llvm_csv_format():
    f = load_llvm_csv(SAMPLE_CSV)
    assert min(f) >= 0 and max(f) == 128 and sum(f.values()) == pytest.approx(1)


@pytest.mark.parametrize("args,needle", [
    (["bench", "no-such.copy"], "no such file"),
    (["bench", K2021, "--sizes", "1-x"], "expected A-B"),
    (["bench", K2021, "--align", "9"], "SRC:DST"),
    (["bench", K2021, "--align", "0:99"], "0..63"),
    (["bench", K2021, "--sizes", "99999999"], "too large"),
    (["bench", K2021, "--profile", "nope"], "unknown cost profile"),
    (["bench", K2021, "--routine", "memcpy"], "no routine"),
    (["bench", K2021, "--json", "--csv"], "exclusive"),
    (["rank", K2021, "--workload", "bogus"], "unknown workload"),
    (["rank", K2021, "--workload", "missing.csv"], "--workload: no such file"),
    (["rank", K2021, str(ROOT / "examples/c910fast.copy")], "--profile"),
    (["rank", K2021, PRE, "--routine", "memcpy"], "none of the files"),
])
def test_errors_exit_2_without_traceback(cli, args, needle):
    res = cli(*args, code=2)
    assert needle in res.output and "Traceback" not in res.output
    assert isinstance(res.exception, SystemExit)


def test_emulator_errors_become_clean_errors(cli, monkeypatch):
    def oops(self, case):
        raise emu.Oops(0x80200010, 0x10000000, "store: user page while SUM clear")
    monkeypatch.setattr(Bench, "run", oops)
    res = cli("bench", K2021, "--sizes", "8", "--json", code=2)
    assert "emulator: oops" in res.output and json.loads(res.stdout)["ok"] is False


def test_bench_refuses_a_wrong_result(built_examples):
    b = Bench(built_examples["kernel2021"].elf, "u74", 64)
    b.run(Case("__asm_copy_to_user", 64, 1, 0))
    with pytest.raises(BenchError, match="returned"):
        b._check(Case("__asm_copy_to_user", 8, 0, 0), bench_mod.KINDS["__asm_copy_to_user"], 3, 0x1000_0000,
                 0x7000_0000)


# p550 traps misaligned access (700 cycles each): a pipe held that long is
# what emu.timing.ooo._pick_pipe finds its way past in one pass
@pytest.mark.parametrize("profile", ["p550", "c910"])
def test_an_out_of_order_cell_does_not_depend_on_the_cells_before_it(built_examples, profile):
    """The gshare predictor of an out-of-order profile persists across calls
    and its entries alias between paths: each case starts it afresh, so a
    cell run after others costs what it costs on a machine of its own."""
    elf = built_examples["c910tuned"].elf
    cases = [Case("__asm_copy_to_user", n, s, d)
             for n in (64, 512, 8, 1024, 200) for s, d in ((0, 0), (3, 5), (1, 1))]
    shared = Bench(elf, profile, 1024)
    in_order = [shared.run(c).cycles for c in cases]
    alone = [Bench(elf, profile, 1024).run(c).cycles for c in cases]
    assert in_order == alone


@pytest.mark.parametrize("profile", ["p550", "c910"])
def test_an_out_of_order_cell_is_timed_with_its_branches_trained(built_examples, profile):
    """A call with fewer branches than the gshare history leaves outcomes of
    the calls before it in the history; the bench warms it until the
    history at entry repeats, so its cycles are those of a long loop of
    calls (c910tuned's clear_user of 64 B: 8 branches against a 12-deep
    history; two warm calls left three of them mispredicted, 56 cycles
    against 32)."""
    elf = built_examples["c910tuned"].elf
    cases = [Case("__clear_user", n, 0, d) for n in (16, 64, 72) for d in (0, 1)] + \
            [Case("__asm_copy_to_user", n, s, d) for n in (8, 64) for s, d in ((0, 0), (3, 5))]
    bench = Bench(elf, profile, 128)
    for case in cases:
        measured = bench.run(case).cycles
        m, kind = bench.machine, bench_mod.KINDS[case.routine]
        dst = bench.base[kind.dst_user, "dst"] + case.dst_align
        src = bench.base[kind.src_user, "src"] + case.src_align
        args = (dst, case.size) if kind.form == "clear" else (dst, src, case.size)
        m.reset_predictor(origin=case.routine)
        looped = [m.call(case.routine, *args).cycles for _ in range(12)]
        assert measured == looped[-1] == looped[-2], (case, measured, looped)


def test_an_out_of_order_cell_does_not_move_with_unrelated_code(tmp_path_factory):
    """c910tuned, and the same with a copy_user of a different size linked
    before string.o: memset's code is the same, at another address.  Its
    cells are the same on both out-of-order profiles, since the predictor
    indexes the measured routine's branches by their distance from its
    entry (14 of these 32 cells differed by 9-10 cycles when it indexed
    absolute pcs: one of memset's branches shared a gshare entry with
    another path at one of the two addresses)."""
    text = (ROOT / "examples/c910tuned.copy").read_text()
    moved = text.replace("    then words unroll 2\n    ends overlap", "    then words unroll 1\n    ends overlap")
    assert moved != text
    builds = [build_text(tmp_path_factory, t, name) for t, name in ((text, "as_is"), (moved, "moved"))]
    addr = [emu.Machine.from_elf(b.elf).symbol("memset") for b in builds]
    assert addr[0] != addr[1]
    cases = [Case("memset", n, 0, d) for n in (16, 64, 256, 1024) for d in range(8)]
    for profile in ("c910", "p550"):
        a, b = ([Bench(x.elf, profile, 1024).run(c).cycles for c in cases] for x in builds)
        assert a == b, profile


X60V = str(ROOT / "examples/x60vector.copy")


def _cycles(out: dict) -> dict:
    return {(s["routine"], s["size"]): s["cycles"] for s in out["samples"]}


def test_bench_times_the_kernels_vector_dispatch_in_each_vector_state(cli):
    """From the vector phase's threshold (768 B) copy_to_user is the vector
    routine plus the section around it, dearer when the user's vector
    state is dirty; below it, and with `off`, the scalar routine."""
    args = ["bench", X60V, "--sizes", "256,1024", "--align", "0:0", "--routine", "copy_to_user",
            "--routine", "vector_usercopy", "--json"]
    off, clean, dirty, quarter = (json.loads(cli(*args, "--vector-state", s).stdout)
                                  for s in ("off", "clean", "dirty", "0.25"))
    assert off["vector_dispatch"] == {}
    d = clean["vector_dispatch"]["copy_to_user"]
    assert d["from_bytes"] == 768 and d["vector_routine"] == "__asm_vector_usercopy"
    dd = dirty["vector_dispatch"]["copy_to_user"]["section_cycles"]
    assert dd > d["section_cycles"] > 0
    vec = _cycles(clean)[("__asm_vector_usercopy", 1024)]
    assert _cycles(clean)[("__asm_copy_to_user", 1024)] == vec + d["section_cycles"]
    assert _cycles(dirty)[("__asm_copy_to_user", 1024)] == vec + dd
    assert _cycles(quarter)[("__asm_copy_to_user", 1024)] == \
        pytest.approx(vec + d["section_cycles"] + 0.25 * (dd - d["section_cycles"]))
    assert _cycles(off)[("__asm_copy_to_user", 1024)] != _cycles(clean)[("__asm_copy_to_user", 1024)]
    for out in (off, clean, dirty):
        assert _cycles(out)[("__asm_copy_to_user", 256)] == _cycles(off)[("__asm_copy_to_user", 256)]
    table = cli("bench", X60V, "--sizes", "1024", "--align", "0:0", "--routine", "copy_to_user",
                "--vector-state", "dirty").stdout
    assert "copy_to_user: from 768 B through __asm_vector_usercopy in a dirty vector section" in table
    assert "copy_from_user" not in table


def test_rank_charges_the_vector_section_and_refuses_an_unknown_state(cli):
    args = ["rank", X60V, "--workload", "uniform:760-776", "--align-mix", "aligned",
            "--routine", "copy_to_user", "--json"]
    clean, dirty = (json.loads(cli(*args, "--vector-state", s).stdout) for s in ("clean", "dirty"))
    (c,), (d,) = clean["ranking"]["copy_to_user"], dirty["ranking"]["copy_to_user"]
    assert d["expected_cycles"] > c["expected_cycles"]
    assert clean["vector_dispatch"][X60V]["copy_to_user"]["vector_state"] == "clean"
    res = cli("rank", X60V, "--vector-state", "warm", code=2)
    assert "--vector-state 'warm': give clean, dirty, off" in res.output
    assert "Traceback" not in res.output
