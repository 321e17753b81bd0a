"""Spreading independent solver queries of one proof over processes.

The children are forked, so they inherit the proof (its Z3 terms, the
explored segments, the invariants) without pickling any of it; only the
plain results (booleans, candidate lists, short strings) come back.  Items
are handed out one at a time, so one slow query does not hold up the rest.

Role: `fork_map`.  May import only the standard library.
"""
from __future__ import annotations

import multiprocessing
import os
from typing import Callable

_FN: Callable[[int], object] | None = None


def _call(i: int):
    assert _FN is not None
    return i, _FN(i)


def default_jobs() -> int:
    """COPYGEN_JOBS if set, else the machine's cores."""
    env = os.environ.get("COPYGEN_JOBS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return os.cpu_count() or 1


def fork_map(fn: Callable[[int], object], count: int, jobs: int) -> list:
    """[fn(0), ..., fn(count - 1)], over `jobs` forked processes (in this
    process when jobs <= 1, there are fewer than two items, or the platform
    cannot fork, or this process may not have children)."""
    global _FN
    jobs = min(jobs, count)
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods() \
            or multiprocessing.current_process().daemon:
        return [fn(i) for i in range(count)]
    _FN = fn
    out: list = [None] * count
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for i, v in pool.imap_unordered(_call, range(count), chunksize=1):
                out[i] = v
    finally:
        _FN = None
    return out
