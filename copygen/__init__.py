"""copygen: the installed namespace, and the command line at its top.

The pillars live in the repository's own top-level folders and are installed
under this name (pyproject.toml maps them): ``copygen.gen`` (front end,
lowering, emission, toolchain driver), ``copygen.emu`` (the RV64 machine and
its cost profiles), ``copygen.verify`` (the Z3 prover), ``copygen.measure``
(benches, workloads, ranking, plots), ``copygen.mutate`` (the verifier's
mutation tool), ``copygen.tune`` (the autotuner) and ``copygen.patch``
(kernel trees and patches); the grammar, templates and kernel-macro shim are package data
(``copygen.grammar``, ``copygen.templates``, ``copygen.shim``).

``copygen.cli`` (with the ``commands_*`` and ``output`` modules beside it)
is the one composition root: it imports every layer, and no layer imports
it; the layers take only ``__version__`` from this module.

The pillar folders sit beside this one in the repository and inside it in
a wheel; an install (``pip install -e .`` in a checkout, as install.sh does,
or a wheel) maps them under this name, so the tree and the wheel import
alike.  Nothing else is reachable under ``copygen``: the tests and the bench
scripts are not part of the package.
May import nothing.
"""

__version__ = "0.1.0"
