"""The measurement format (measure.measurements): the public table read as
it is, our own form written and read back unchanged, and every kind of bad
file refused with its line."""
from __future__ import annotations

import pytest

from copygen.measure import measurements as m
from tests.conftest import ROOT

PUBLIC = ROOT / "bench" / "calibration" / "measurements" / "memcpy_2024_upstream.csv"
OURS = """# copygen-measurements 1
# board: testboard
# emulated: no
# cpuinfo: processor : 0
# cpuinfo: isa : rv64imafdc
board,core,clock_ghz,routine,source_file,mode,size,src_off,dst_off,method,state,reps,value,unit,spread
b,u74,1.5,memcpy,x.S,aligned,64,0,0,orbench,warm,9,48,cycles_per_call,0.01
b,u74,1.5,memcpy,x.S,misaligned,64,1,3,isolated,cold,9,96,ns_per_call,
"""


def _table(text, tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(text)
    return m.read(path)


def test_the_public_table_reads_as_orbench_rows_with_its_offsets():
    t = m.read(PUBLIC)
    assert t.boards() == ["JH7110", "TH1520"] and t.routines() == ["memcpy"]
    un = [r for r in t.rows if r.src_off or r.dst_off]
    assert un and all((r.src_off, r.dst_off, r.mode) == (1, 3, "misaligned") for r in un)
    assert {r.method for r in t.rows} == {"orbench"} and {r.unit for r in t.rows} == {"bytes_per_ns"}
    first = t.rows[0]
    # 0.42 bytes/ns at 1.5 GHz: 0.28 bytes per cycle, 8 bytes in 28.6 cycles
    assert first.bytes_per_cycle() == pytest.approx(first.value / first.clock_ghz)
    assert first.cycles_per_call() == pytest.approx(first.size / first.bytes_per_cycle())


def test_our_form_reads_its_header_and_converts_units(tmp_path):
    t = _table(OURS, tmp_path)
    assert t.header["board"] == "testboard" and t.header["cpuinfo"] == ["processor : 0", "isa : rv64imafdc"]
    assert not t.emulated
    a, b = t.rows
    assert a.cycles_per_call() == 48 and a.bytes_per_cycle() == pytest.approx(64 / 48)
    assert b.cycles_per_call() == pytest.approx(96 * 1.5) and b.spread is None


def test_written_tables_read_back_the_same(tmp_path):
    t = _table(OURS, tmp_path)
    again = m.parse(m.write(t))
    assert again.rows == t.rows and again.header == t.header


@pytest.mark.parametrize("edit, words", [
    (lambda s: s.replace(",value,unit,", ",value,").replace(",cycles_per_call,", ",").replace(",ns_per_call,", ","),
     "no `unit` column"),
    (lambda s: s.replace(",value,unit,spread", ",figure,unit,spread"), "no figure column"),
    (lambda s: s.replace("cycles_per_call", "furlongs"), "m.csv:7:1: error: unit 'furlongs'"),
    (lambda s: s.replace(",64,0,0,", ",sixty,0,0,"), "m.csv:7:1: error: size 'sixty' is not a number"),
    (lambda s: s.replace("aligned,64,0,0", "aligned,64,0,4"), "m.csv:7:1: error: mode 'aligned' but offsets 0:4"),
    (lambda s: s.replace("orbench", "stopwatch"), "method 'stopwatch'"),
    (lambda s: s.replace(",0.01\n", ",0.01,9\n"), "m.csv:7:1: error: 16 cells"),
    (lambda s: s.replace("copygen-measurements 1", "copygen-measurements 7"), "not a copygen-measurements 1"),
    (lambda s: s.splitlines(keepends=True)[0] + s.splitlines(keepends=True)[5], "a header but no rows"),
])
def test_a_bad_file_is_refused_at_its_line(tmp_path, edit, words):
    with pytest.raises(m.MeasurementError) as err:
        _table(edit(OURS), tmp_path)
    assert words in err.value.render()


def test_ns_without_a_clock_cannot_become_cycles(tmp_path):
    t = _table(OURS.replace("b,u74,1.5,memcpy,x.S,misaligned", "b,u74,,memcpy,x.S,misaligned"), tmp_path)
    with pytest.raises(m.MeasurementError, match="needs clock_ghz"):
        t.rows[1].cycles_per_call()
    assert m.with_clock(t.rows, 2.0)[1].cycles_per_call() == 192


def test_emulated_files_say_so(tmp_path):
    assert _table(OURS.replace("emulated: no", "emulated: yes"), tmp_path).emulated
