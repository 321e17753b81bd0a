"""Z3 terms are freed only by the thread that proves.

Z3's Python bindings release the GIL while the solver runs, and one Z3
context may not be used by two threads at once.  Python's cycle collector
runs in whichever thread happens to allocate when a threshold is crossed:
a progress bar's refresh thread, or a Dask client's event loop, can then
free unreachable Z3 terms (Z3_dec_ref) while the proving thread is inside
Z3_solver_check, and the process dies with a segmentation fault.  Inside
`proving()` the automatic collector is off, so no other thread collects;
the garbage of the proof is collected on the proving thread as it leaves.

Role: `proving`.  May import only the standard library.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def proving() -> Iterator[None]:
    """Automatic garbage collection off for the block (nested blocks keep it
    off); on leaving the outermost block it is collected here, then back on."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.collect()
            gc.enable()
