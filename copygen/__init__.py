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

In a source checkout the pillar folders sit beside this one rather than
inside it; the path below lets ``copygen.gen`` resolve to ``./gen`` there, so
the tree runs as it is (tests, ``python -m copygen``) with or without an
install.  An installed wheel has them inside, and the extra entry is not added.
"""
from pathlib import Path as _Path

__version__ = "0.1.0"

_checkout = _Path(__file__).resolve().parent.parent
if (_checkout / "pyproject.toml").is_file() and (_checkout / "gen" / "__init__.py").is_file():
    __path__.append(str(_checkout))
