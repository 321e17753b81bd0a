"""The benchmark scripts, by subject (calibration, emu, verify, tune,
kernel, suite), each with its results beside it in <subject>/results/.
Run from the repository root as modules, e.g.
`python -m bench.tune.tune_goals --help`; they import copygen as installed
and each other as `bench.*`.
"""
