"""The C heap of a proving process keeps the memory Z3 frees.

A proof creates and deletes thousands of one-shot Z3 contexts
(verify.solver.budget).  With glibc's defaults each large block goes back to the
kernel when freed (trimmed, or unmapped when it was mmapped) and the next
context faults the same pages in again: system time, not solving.
`keep_freed` raises both thresholds once per process, so freed blocks
stay in the heap for the next context (glibc's `mallopt`; elsewhere it
does nothing).  The heap then stays at its peak for the process's life.

Role: `keep_freed`.  May import only the standard library.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
TRIM_BYTES = 1 << 30
MMAP_BYTES = 32 << 20        # glibc's largest mmap threshold on 64-bit


@functools.lru_cache(maxsize=1)
def keep_freed() -> bool:
    """True when the C library took the settings."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_TRIM_THRESHOLD, TRIM_BYTES)) and bool(mallopt(M_MMAP_THRESHOLD, MMAP_BYTES))
