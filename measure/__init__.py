"""copygen's measurement layer: benches, workloads, ranking, rendering, plots.

Runs linked ELFs in the emulator (copygen.emu) under a cost profile and turns
cycles into tables, CSV/JSON rows and plots: bench (cycles per routine, size
and alignment, every result checked), workload (size and alignment
distributions), rank (expected cycles per call under a workload), render
(tables, CSV, PNG).  The autotuner sits on top of it.
May import emu and the standard library (rich, matplotlib for rendering);
never gen or verify, and never the command line.
"""
