"""The command line: copygen's one composition root.

Each command parses its options, calls one library function of a layer
(gen: check, build; measure: bench, rank; verify: verify; mutate: mutate;
tune: tune; patch: patch; kernel: tree, kunit)
and prints its result through copygen.output (tables on stdout, errors on
stderr, one JSON envelope with --json).  Only this folder exits the process.
Role: the top of the import graph.  Imports click and every layer; nothing
imports it.
"""
from __future__ import annotations

import click

from copygen import __version__
from copygen.commands_build import build, check
from copygen.commands_calibrate import calibrate
from copygen.commands_hwbench import hwbench
from copygen.commands_kernel import kunit, tree
from copygen.commands_measure import bench, rank
from copygen.commands_mutate import mutate
from copygen.commands_patch import patch
from copygen.commands_tune import tune
from copygen.commands_verify import verify
from copygen.output import EXIT_SUMMARY, Main


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]},
              epilog=EXIT_SUMMARY)
@click.version_option(__version__, prog_name="copygen")
def main() -> None:
    """copygen: compile copy strategies into RISC-V kernel routines.

    A `.copy` file describes a strategy (threshold, alignment head, unrolled
    word loop, shift copy, tail, fault policy, target core).  copygen emits
    kernel-ready uaccess.S and string.c, builds them with the real RISC-V
    toolchain (${CROSS_COMPILE}gcc/ld), proves the machine code with Z3
    (verify), and runs it in its RV64 emulator under a core's cost profile
    (bench, rank).

    Every command takes --json: one object on stdout, {"schema": 1,
    "command": ..., "ok": ...}, on success and failure alike.
    """


for _cmd in (check, build, bench, rank, hwbench, calibrate, verify, mutate, tune, patch, tree, kunit):
    main.add_command(_cmd)
