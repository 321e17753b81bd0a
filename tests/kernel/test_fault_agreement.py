"""The emulator against the booted kernel (issue 64 item 3): the fault
suite's calls replayed in copygen's emulator on the uaccess.S a recorded
boot ran (bench/kernel/results/fault_agreement.json, made by
bench/kernel/fault_agreement.py) give the recorded digest, test case for
test case: the same return values and the same destination bytes, in
the boot without V (the scalar copy) and in the one with V (the vector
copy from the threshold on, through 6.12's dispatch and glue).

The uaccess.S is read by its blob id from a kernel tree in copygen's
cache (the record keeps the id, not the kernel's text); without such a
tree the tests skip.  Three test cases per record by default, one in nine
under the `slow` marker, every one under `kernel` (`python3 -m pytest -m
kernel`).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from copygen.gen.toolchain import run_git
from copygen.kernel.tree import cache_dir
from tests.conftest import ROOT

RECORD = ROOT / "bench" / "kernel" / "results" / "fault_agreement.json"
RECORDS = json.loads(RECORD.read_text()) if RECORD.is_file() else {}
QUICK = ("copy_to_user_test.user+0 kernel+0", "copy_from_user_test.user+5 kernel+2",
         "clear_user_test.user+3")


def _blob(blob: str) -> str | None:
    """A blob's text from any git tree under copygen's cache, if one has it."""
    for git_dir in sorted(cache_dir().glob("*/.git")) + sorted(cache_dir().glob("*/*/.git")):
        r = run_git(["cat-file", "blob", blob], git_dir.parent, check=False)
        if r.returncode == 0:
            return r.stdout
    return None


def _replay(label: str, names, tmp_path: Path) -> None:
    from bench.kernel.fault_agreement import VLEN, model_cases
    rec = RECORDS[label]
    texts = [_blob(rec["uaccess_blob"]), _blob(rec["uaccess_vector_blob"])]
    if None in texts:
        pytest.skip(f"no tree under {cache_dir()} holds the .S files of {label} "
                    f"({rec['commit'][:12]})")
    scalar, _ = model_cases(texts[:1], list(names), tmp_path / "s")
    vector, _ = model_cases(texts, list(names), tmp_path / "v", (rec["boots"]["v"]["threshold"], VLEN))
    for name in names:
        want = rec["cases"][name]
        assert (name, scalar[name]["calls"], scalar[name]["digest"], vector[name]["digest"]) == \
            (name, want["calls"], want["kernel"], want["kernel_v"])


@pytest.mark.skipif(not RECORDS, reason=f"no record {RECORD}")
@pytest.mark.parametrize("label", sorted(RECORDS))
def test_the_emulator_gives_the_kernels_digests(label, tmp_path):
    _replay(label, QUICK, tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(not RECORDS, reason=f"no record {RECORD}")
@pytest.mark.parametrize("label", sorted(RECORDS))
def test_the_emulator_gives_the_kernels_digests_in_one_case_of_nine(label, tmp_path):
    _replay(label, sorted(RECORDS[label]["cases"])[::9], tmp_path)


@pytest.mark.kernel
@pytest.mark.skipif(not RECORDS, reason=f"no record {RECORD}")
@pytest.mark.parametrize("label", sorted(RECORDS))
def test_the_emulator_gives_the_kernels_digests_in_every_test_case(label, tmp_path):
    """About three minutes a record: with the tests that use a real tree."""
    _replay(label, sorted(RECORDS[label]["cases"]), tmp_path)


def test_the_record_says_what_was_run_and_that_both_agree():
    for label, rec in RECORDS.items():
        assert rec["command"].startswith("python -m bench.kernel.fault_agreement")
        n = len(rec["cases"])
        assert n == 136 and rec["agree_no_v"] == rec["agree_v"] == f"{n}/{n}", label
