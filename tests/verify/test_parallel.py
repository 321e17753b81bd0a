"""The solver's process pool: workers start with SIGTERM held until their
initializer makes it end them, so a pool ended while a worker is still
starting never runs the command's own handler in that worker."""
from __future__ import annotations

import os
import signal

from copygen.verify.solver.parallel import fork_map, quiet_worker, sigterm_held


def _command_handler(signum, frame):
    raise SystemExit("the command's handler ran in a worker")


def _state(_i):
    return (signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, []),
            signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)


def test_workers_take_sigterm_by_default_and_the_parent_keeps_its_mask():
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    old = signal.signal(signal.SIGTERM, _command_handler)
    try:
        got = fork_map(_state, 4, 2)
    finally:
        signal.signal(signal.SIGTERM, old)
    assert got == [(False, True)] * 4            # not held, default action
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before


def test_a_sigterm_before_the_initializer_waits_for_it_and_ends_the_worker():
    read, write = os.pipe()
    old = signal.signal(signal.SIGTERM, _command_handler)
    try:
        with sigterm_held():
            pid = os.fork()
            if pid == 0:                         # the worker, not yet initialised
                os.close(read)
                try:
                    os.kill(os.getpid(), signal.SIGTERM)   # the pool ends it now
                    os.write(write, b"held ")
                    quiet_worker(os.getppid())
                    os.write(write, b"outlived")
                except BaseException:
                    os.write(write, b"handler")
                os._exit(0)
    finally:
        signal.signal(signal.SIGTERM, old)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    said = os.read(read, 100)
    os.close(read)
    assert said == b"held "
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
