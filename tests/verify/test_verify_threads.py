"""Z3 terms are freed only by the proving thread: while a proof runs, another
thread (a progress bar's refresh, a Dask client's loop) that allocates must
not run the cycle collector over the proof's garbage."""
from __future__ import annotations

import gc
import threading
import weakref

import pytest

from copygen.verify.solver.gcguard import proving
from copygen.verify.checks.prove import prove_routine


class _Node:
    def __init__(self):
        self.me = self            # a cycle: only the collector frees it


def _collected_by(box: list) -> _Node:
    gc.collect()                  # counts at zero: no collection before the thread's
    node = _Node()
    weakref.finalize(node, lambda: box.append(threading.current_thread().name))
    return node


def _allocate_in_thread() -> None:
    def churn():
        junk = [[i] for i in range(200_000)]    # crosses the collector's thresholds
        del junk
    t = threading.Thread(target=churn, name="churn")
    t.start()
    t.join()


def test_cyclic_garbage_is_not_collected_by_another_thread_while_proving():
    freed: list = []
    with proving():
        _collected_by(freed)
        _allocate_in_thread()
        assert freed == []
    assert freed == [threading.current_thread().name]
    assert gc.isenabled()


def test_without_the_guard_another_thread_would_collect_it():
    # the premise of the guard: an allocating thread does run the collector
    freed: list = []
    _collected_by(freed)
    _allocate_in_thread()
    assert freed == ["churn"]


def test_nested_blocks_keep_the_collector_off_until_the_outermost_ends():
    with proving():
        with proving():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


class _Stop(Exception):
    pass


def test_a_proof_runs_with_the_collector_off_and_leaves_it_on(built_examples):
    seen = []

    def stage(name):
        seen.append(gc.isenabled())
        raise _Stop
    with pytest.raises(_Stop):
        prove_routine(str(built_examples["kernel2021"].elf), "__asm_copy_to_user", "to",
                      jobs=1, stage=stage)
    assert seen == [False]
    assert gc.isenabled()
