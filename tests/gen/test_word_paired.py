"""`schedule paired` for word loops: loads first, the dst increment after
the first load and the src increment after the last, so that on a
dual-issue core with one memory pipe both issue beside loads and the loop
branch beside the last store.  What the language accepts, the emitted
loop, exact copies and fault returns under the qemu oracle, the proof for
every n, and the cycle a block saves on the u74 model."""
from __future__ import annotations

import re

import pytest

from copygen.emu.timing.profile import load_profile
from copygen.gen.build import build_file
from copygen.gen.front.validate import load_text
from copygen.gen.front.variants import sweep_space
from copygen.measure.bench import Bench, Case
from copygen.mutate import oracle as qemu

BASE = """target u74 { xlen 64; misaligned slow }
copy_user cu for u74 {
    small below 16
    align dst
    words unroll FIRST schedule SCHED
    then words unroll 4 schedule SCHED
    shift off
    tail words
    fault exact
}
"""


def _text(sched: str = "paired", first: int = 16) -> str:
    return BASE.replace("SCHED", sched).replace("FIRST", str(first))


def _build(tmp_path, name: str, text: str):
    src = tmp_path / f"{name}.copy"
    src.write_text(text)
    return build_file(src, tmp_path)


def _loop(build, label: str) -> list[str]:
    """The instructions of the loop that follows `label`, up to its branch."""
    text = next(f for f in build.files if f.name == "uaccess.S").read_text()
    body = text[text.index(f"{label}:\n"):]
    body = body[body.index("\n1:\n") + 3:]
    lines = [ln.strip() for ln in body[:body.index("1b")].splitlines()]
    return [ln for ln in lines if ln and not ln.startswith(("/*", "*"))]


@pytest.fixture(scope="module")
def paired(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("paired"), "paired", _text())


def test_paired_is_a_word_schedule_for_both_classes_and_a_sweep_axis(tmp_path):
    ph = load_text(_text(), "p.copy").copy_user.phases
    assert (ph.word_schedule, ph.then_schedule) == ("paired", "paired")
    text = _text("loads_first") + ("sweep s for cu {\n"
                                   "    then words unroll [2, 4] schedule [loads_first, paired]\n}\n")
    path = tmp_path / "sw.copy"
    path.write_text(text)
    space = sweep_space(str(path))
    assert len(space.variants) == 4 and not space.pruned
    assert "then words unroll 4 schedule paired" in {v.label for v in space.variants}


def test_increments_move_up_and_stores_address_back_from_the_new_dst(paired):
    loop = _loop(paired, ".Lcopy_words_then")
    ops = [ln.split()[0] if not ln.startswith("fixup") else ln.split()[1].rstrip(",")
           for ln in loop]
    # load, dst increment, three loads, src increment, four stores, branch
    assert ops == ["REG_L", "addi", "REG_L", "REG_L", "REG_L", "addi",
                   "REG_S", "REG_S", "REG_S", "REG_S", "bleu"], loop
    assert loop[1].startswith("addi\ta0, a0, 4*SZREG") and loop[5].startswith("addi\ta1, a1, 4*SZREG")
    offsets = [re.search(r", (\S+)\(a0\)", ln).group(1) for ln in loop if "REG_S" in ln]
    assert offsets == ["-4*SZREG", "-3*SZREG", "-2*SZREG", "-SZREG"]
    # a 16-word block spans two groups of the register pool: every store
    # comes after a0 moved, in ascending order
    first = _loop(paired, ".Lcopy_words")
    assert first[1].startswith("addi\ta0, a0, 16*SZREG")
    stores = [re.search(r", (\S+)\(a0\)", ln).group(1) for ln in first if "REG_S" in ln]
    assert stores[0] == "-16*SZREG" and stores[-1] == "-SZREG" and len(stores) == 16


def test_memcpy_words_paired_is_written_loads_first_in_c(tmp_path):
    text = ("target t { xlen 64; misaligned slow }\n"
            "string s for t {\n memcpy { small below 16; align dst; words unroll 4 schedule paired;"
            " shift unroll 2; tail words }\n"
            " memset { small below 16; align dst; words unroll 4; tail words }\n}\n")
    build = _build(tmp_path, "s", text)
    c = next(f for f in build.files if f.name == "string.c").read_text()
    block = c[c.index("word_t w0 = sw[0];"):]
    assert block.index("word_t w3 = sw[3];") < block.index("dw[0] = w0;")


def test_paired_word_loops_copy_exactly_under_qemu(paired, tmp_path):
    exe = qemu.build_harness(paired.objects, tmp_path / "harness")
    sizes = [n for base in (32, 128, 256) for n in range(base - 9, base + 10)] + [1000]
    cases = [qemu.Case(fn, d, s, n, seed=n + 8 * d + s) for fn in ("to", "from")
             for n in sizes for d in range(8) for s in (d, (d + 3) % 8)]
    # a user page that ends inside a 16-word block, a 4-word block or a word
    for fn, side in (("to", "dst"), ("from", "src")):
        for n in (200, 600):
            for off in (0, 5):
                for into in (1, 8, 60, 128, 131, 170):
                    near = qemu.PAGE - into - off
                    d, s = (near, near % 8) if side == "dst" else (near % 8, near)
                    cases.append(qemu.Case(fn, d, s, n, side, qemu.PAGE, seed=n + into))
    for case, r in zip(cases, qemu.run_cases(exe, cases)):
        assert not r.sum_at_exit, case
        assert r.prefix_ok and r.rest_untouched, case
        assert r.ret == case.exact_return(), (case, r.ret)


def test_a_paired_block_costs_its_memory_slots_on_the_u74(tmp_path):
    prof = load_profile("u74_spec")
    paired = Bench(_build(tmp_path, "p", _text()).elf, prof, 4096)
    first = Bench(_build(tmp_path, "l", _text("loads_first")).elf, prof, 4096)

    def cycles(bench, n, off=0):
        return bench.run(Case("__asm_copy_to_user", n, off, off)).cycles
    # one more 4-word block (sizes below the 16-word class): 8 loads and
    # stores, 8 cycles; loads first pays a ninth for its increments
    assert cycles(paired, 96) - cycles(paired, 64) == 8
    assert cycles(first, 96) - cycles(first, 64) == 9
    # never slower, co-aligned calls included
    for n in (16, 40, 72, 128, 200, 1024, 4000):
        for off in (0, 3):
            assert cycles(paired, n, off) <= cycles(first, n, off), (n, off)


@pytest.mark.slow
def test_paired_word_loops_are_proved_for_every_n(tmp_path):
    """Both classes paired, the first wider than the register pool (two
    groups of loads and stores), proved with the full contract."""
    from copygen.verify.checks.prove import prove_routine
    from copygen.verify.contract.verdict import verdict
    build = _build(tmp_path, "p", _text(first=16))
    rep = prove_routine(str(build.elf), "__asm_copy_to_user", "to")
    assert verdict(rep) == "proved", rep.status
