"""copygen's code generator: front end (parse, validate), lowering to the
IR, scheduling, emission through the templates, the toolchain driver (the
only place that runs external programs) and the build pipeline.

Imports nothing outside `gen` (never emu, verify, measure or the command
line); its package data (grammar, templates, shim) is found through
gen.resources.
"""
from copygen import __version__

__all__ = ["__version__"]
