"""Spreading independent solver queries of one proof over processes.

The children are forked, so they inherit the proof (its Z3 terms, the
explored segments, the invariants) without pickling any of it; only the
plain results (booleans, candidate lists, short strings) come back.  Items
are handed out one at a time, so one slow query does not hold up the rest.

Workers end quietly (quiet_worker): when the pool ends them (the command
was stopped: SIGTERM unwinds it, and the pool's exit terminates them) or
their parent dies without ending them, they go without a traceback, and
Ctrl-C reaches the parent alone, which ends them.  They are forked with
SIGTERM held (sigterm_held) until quiet_worker has put its default action
back: a pool ended while a worker is still starting (a loaded machine)
would otherwise run the command's own handler in that worker, which
unwinds it while it may hold the pool's queue lock, and the pool's exit
then waits for it forever.

Role: `fork_map`, `quiet_worker`, `sigterm_held`.  May import only the
standard library.
"""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
from contextlib import contextmanager
from typing import Callable, Iterator

# prctl(2): the signal a process gets when its parent dies
PR_SET_PDEATHSIG = 1

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


@contextmanager
def sigterm_held() -> Iterator[None]:
    """SIGTERM blocked in this thread (and so in the processes it forks and
    the threads it starts) for the block: a stop meanwhile is delivered
    when it ends, here as before and in each worker once quiet_worker has
    made SIGTERM end it."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def quiet_worker(parent: int) -> None:
    """A pool worker's initializer (`parent`: the pid that makes the pool).
    SIGTERM ends it at once, without the handler a command installs (which
    the fork copied), so no traceback; SIGINT is left to the parent; and on
    Linux the worker is sent SIGTERM when its parent dies, instead of
    writing its result into a closed pipe (a BrokenPipeError traceback per
    worker)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass                           # not Linux: the pool's own exit still ends it
    if os.getppid() != parent:         # the parent died before prctl took effect
        os._exit(128 + signal.SIGTERM)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})   # forked held (sigterm_held)


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
        with sigterm_held():
            pool = multiprocessing.get_context("fork").Pool(jobs, initializer=quiet_worker,
                                                            initargs=(os.getpid(),))
        with pool:
            for i, v in pool.imap_unordered(_call, range(count), chunksize=1):
                out[i] = v
    finally:
        _FN = None
    return out
