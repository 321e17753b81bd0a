"""copygen's autotuner: walks a sweep's space, benches every distinct
routine it makes under a workload and a size x alignment grid, proves the
best, and keeps every result in an SQLite store that survives being killed.

space (gen.front.variants) -> evaluate (build + bench, one process or a Dask
worker each) -> store (SQLite, committed per point) -> prove the top K
(verify, with the proof cache) -> report (tables, report.md, plots, the
winner as a .copy file).  tune.session.tune_sweep runs it all for one
request, tune.session.show_store renders a store again; `copygen tune` is
glue over those two.
May import gen, emu, measure, verify and the standard library (sqlite3;
distributed only when --dask is given); never the command line.
"""
