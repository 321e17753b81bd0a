"""The bounded exhaustive cross-check (verify.counterexamples.bounded): the same runs and
verdicts over one process or several, and the counterexample kept is the
one of the smallest n."""
from __future__ import annotations

from pathlib import Path

import pytest

from copygen.verify.counterexamples.bounded import check

ROOT = Path(__file__).resolve().parents[2]


def _elf(tmp_path, name: str) -> str:
    from copygen.inputs import linked_elf
    return str(linked_elf(str(ROOT / "tests" / "kernel_style" / name), tmp_path / "k"))


@pytest.mark.slow       # the bounded check twice; the two below run it in the fast loop
def test_spread_over_processes_gives_the_same_verdicts(tmp_path):
    elf = _elf(tmp_path, "bug_return_size_on_fault.S")
    one = check(elf, "__asm_copy_to_user", "to", 12, jobs=1)
    two = check(elf, "__asm_copy_to_user", "to", 12, jobs=2)
    assert one == two
    assert {"C4", "C5"} <= set(one)


def test_the_smallest_n_that_breaks_a_clause_is_reported(tmp_path):
    """Returning n after a fault is wrong as soon as a byte could be
    copied: n = 2 with the fault boundary one byte in is the first case."""
    elf = _elf(tmp_path, "bug_return_size_on_fault.S")
    bad = check(elf, "__asm_copy_to_user", "to", 12, jobs=2)
    assert bad["C5"].startswith("n=2,"), bad["C5"]


def test_a_correct_routine_holds_in_every_run(tmp_path):
    elf = _elf(tmp_path, "uaccess_2021_ok.S")
    assert check(elf, "__clear_user", "clear", 12, jobs=2) == {}
