"""`copygen tune FILE` and `copygen tune show DB`, start to finish.

tune_sweep(): plan the sweep (tune.run.plan) and check the baselines, say
the plan (before any work: a dry run ends there), record the run and its
points in the store, evaluate every routine the store lacks, evaluate the
baselines, prove the best `top`, rank, and write the report directory when
asked.  show_store(): the same ranking from a store, computing nothing.
The caller watches through a Watch: the plan, messages, and stages with a
count (the command line draws them as progress bars).

Role: orchestration.  May import gen, emu.timing.profile, measure.dispatch (the
vector state's name), measure.bench (the timing fingerprint evaluations are
kept under), verify.solver.cache, verify.contract.rules (the target's register
rules its proofs hold to), tune.*, copygen.errors and the standard library.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from copygen.emu.timing.profile import available, load_profile
from copygen.errors import CopygenError, Loc
from copygen.gen.front.parse import read_source
from copygen.gen.front.validate import STRING_FNS, load_file
from copygen.measure.bench import timing_fingerprint
from copygen.measure.dispatch import vector_state_name
from copygen.tune import report
from copygen.tune.board import on_board  # noqa: F401  (the command's one door)
from copygen.tune.evaluate import KERNEL_FILE, Job, evaluate
from copygen.tune.run import (Plan, baseline_key, evaluate_all, is_assembly, job_for, plan,
                              prove_top, ranked, winner)
from copygen.tune.store import Store, eval_workload, run_workload
from copygen.verify.contract.rules import RegisterRules, register_number


@dataclass(frozen=True)
class Request:
    source: str                         # the .copy file holding the sweep
    sweep: str | None = None            # None: the file's only sweep
    profile: str | None = None          # None: the swept routine's target profile
    workload: str = "network"
    align_mix: str = "spec"
    jobs: int = 1
    dask: str | None = None             # a Dask scheduler's address
    db: str | None = None               # None: default_db(source)
    top: int = 5                        # 0: rank without proving
    shown: int = 10
    baselines: tuple[str, ...] = ()
    guards: tuple[str, ...] = ()        # .copy files or kernel .S files
    guard_trees: tuple[str, ...] = ()   # kernel trees: their file of the swept routine guards
    report_dir: str | None = None
    dry_run: bool = False
    build_cache: str = "build/tune"
    proof_cache: str = "build/proofs"
    max_text: int | None = None         # .text bytes the tuned routine may have
    vector_dirty: float = 0.0           # share of vector calls with dirty user vector state


@contextlib.contextmanager
def _no_stage(description: str, total: int | None):
    yield lambda step: None


@dataclass
class Watch:
    """What the caller sees as a run goes.  `stage(description, total)` is
    a context manager yielding `step(x)`: an int advances the count, a
    string describes what is being done."""
    planned: Callable[[Plan], None] = lambda p: None
    tell: Callable[[str], None] = lambda message: None
    stage: Callable = _no_stage


@dataclass
class Ranking:
    """A run's ranking, as a store holds it."""
    db: str
    meta: dict                          # the run's row, its args decoded
    rows: list[dict]                    # ranked, guards applied
    table: list[dict]                   # the first `shown` rows as shown
    baselines: dict[str, dict]
    winner: dict | None
    guards: list[str]
    ranked_only: bool = False           # --top 0: nothing was to be proved
    written: list[Path] = field(default_factory=list)
    max_text: int | None = None         # the .text limit the ranking applied


# where stores go unless --db says: beside the build cache, never beside the
# .copy (examples/ is part of the repository)
STORES = Path("build") / "tune"


def default_db(source: str) -> Path:
    """build/tune/<the .copy's stem>.tune.db, under the current directory."""
    return STORES / (Path(source).stem + ".tune.db")


def tune_sweep(req: Request, watch: Watch = Watch()) -> tuple[Plan, Ranking | None]:
    """Walk the request's sweep; the ranking is None for a dry run."""
    profile = _profile_name(req.source, req.sweep, req.profile)
    load_profile(profile)
    p = plan(req.source, req.sweep, profile, req.workload, req.align_mix, available(),
             req.vector_dirty)
    trees = tuple(kernel_file(t, p.space.kind) for t in req.guard_trees)
    req = dataclasses.replace(req, guards=req.guards + trees)
    names = list(dict.fromkeys(_baseline_check(b, p.space.kind) for b in req.baselines + req.guards))
    watch.planned(p)
    if req.dry_run:
        return p, None
    db = Path(req.db) if req.db else default_db(req.source)
    store = _open_store(db)
    try:
        store.add_run(p.run, req.source, p.space.sweep, p.space.routine, p.space.kind, profile,
                      req.workload, {"align_mix": req.align_mix, "baselines": names,
                                     "guards": list(req.guards), "max_text": req.max_text,
                                     "vector_state": vector_state_name(req.vector_dirty)})
        store.add_points(p.run, p.points)
        with watch.stage(f"tune {p.space.sweep}", len(p.codes)) as step:
            ran = evaluate_all(store, p, profile, req.workload, req.align_mix, req.build_cache,
                               req.jobs, req.dask, step, req.vector_dirty)
        watch.tell(f"evaluated {ran} routines ({len(p.codes) - ran} from the store {db})")
        base = _baselines(store, names, p.space.kind, profile, req)
        if req.top:
            with watch.stage("proving", None) as step:
                prove_top(store, p.run, p.space.kind, req.top, req.proof_cache, req.jobs,
                          lambda label: step(f"proving {label}"), {g: base[g] for g in req.guards},
                          req.max_text, lambda code: job_for(p, code, profile, req.workload,
                                                             req.align_mix, req.build_cache,
                                                             req.vector_dirty),
                          _rules(req.source, req.sweep))
        return p, _ranking(store, p.run, base, req.shown, req.report_dir, str(db),
                           list(req.guards), req.max_text, ranked_only=req.top == 0)
    finally:
        store.close()


def show_store(db: str, run_id: str | None = None, shown: int = 10,
               report_dir: str | None = None, max_text: int | None = None) -> Ranking:
    """A store's ranking of one run (default: the latest), computing nothing;
    under `max_text`, else the limit the run was last made with."""
    store = _open_existing(db)
    try:
        runs = store.runs()
        if not runs:
            raise CopygenError("holds no tuning run", Loc(db))
        meta = next((r for r in runs if r["run"] == run_id), None) if run_id else runs[-1]
        if meta is None:
            raise CopygenError(f"no run {run_id}", Loc(db), hint=f"runs: {', '.join(r['run'] for r in runs)}")
        args = json.loads(meta["args"])
        workload = run_workload(meta)
        base = {}
        for name in args.get("baselines", []):
            key = baseline_key(name, meta["kind"]) if Path(name).is_file() else None
            row = store.eval_of(key, meta["profile"], workload) if key else None
            if row:
                base[name] = {**row, "name": _strategy_name(name, meta["kind"])}
        limit = max_text if max_text is not None else args.get("max_text")
        return _ranking(store, meta["run"], base, shown, report_dir, db, args.get("guards", []), limit)
    finally:
        store.close()


def _open_existing(db: str) -> Store:
    """The store `tune show` reads, its errors hinting at where stores are
    (tune show has no --db: the store is its argument)."""
    try:
        return Store.open_existing(db, eval_profile)
    except CopygenError as err:
        if Path(db).suffix == ".copy":
            hint = (f"{db} is a strategy: `copygen tune {db}` keeps its store in "
                    f"{default_db(db)} (or where its `--db PATH` said), so `copygen tune show "
                    f"{default_db(db)}`")
        else:
            hint = ("tune show reads the store a run wrote: build/tune/<FILE's stem>.tune.db "
                    "after `copygen tune FILE`, or PATH after `copygen tune FILE --db PATH`")
        raise CopygenError(err.message, err.loc, hint=hint) from None


def _ranking(store: Store, run: str, base: dict, shown: int, report_dir: str | None, db: str,
             guards: list[str], max_text: int | None, ranked_only: bool = False) -> Ranking:
    from copygen.verify.solver.cache import prover_fingerprint
    rows = ranked(store.results(run, prover_fingerprint()), {g: base[g] for g in guards if g in base},
                  max_text)
    meta = next(r for r in store.runs() if r["run"] == run)
    win = winner(rows)
    written = (report.write_report(Path(report_dir), meta, rows, base, win, shown, max_text)
               if report_dir else [])
    return Ranking(db, {**meta, "args": json.loads(meta["args"])}, rows,
                   report.table_rows(rows, base, shown), base, win, guards, ranked_only, written,
                   max_text)


def _target(file: str, sweep: str | None):
    """The target of the swept routine (the file's first when none is swept)."""
    st = load_file(file, available())
    chosen = [s for s in st.sweeps if sweep in (None, s.name)]
    routine = chosen[0].routine.partition(".")[0] if chosen else None
    for r in (st.copy_user, st.clear_user, st.string):
        if r is not None and r.name == routine:
            return r.target
    return st.targets[0]


def _profile_name(file: str, sweep: str | None, given: str | None) -> str:
    """The given profile, else the profile of the swept routine's target."""
    return given or _target(file, sweep).profile


def _rules(file: str, sweep: str | None) -> RegisterRules | None:
    """The register rules the swept routine's target states (`reserve`,
    `jump`): its proofs include clause R1 under them; None without any."""
    t = _target(file, sweep)
    if not (t.reserve or t.jump):
        return None
    return RegisterRules(tuple(sorted(t.reserve, key=register_number)), t.jump)


def eval_profile(profile: str) -> str:
    """The profile as the store keys evaluations: its name and the timing
    model's fingerprint (cycles measured under another model are not
    reused)."""
    return f"{profile}@{timing_fingerprint(profile)}"


def _open_store(path: Path) -> Store:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return Store(path, eval_profile)
    except OSError as err:
        raise CopygenError(f"cannot open the store {path}: {err.strerror}",
                           hint="give --db a writable path") from None


def kernel_file(tree: str, kind: str) -> str:
    """The file of a kernel tree that holds the routine of a sweep's kind
    (arch/riscv/lib/memset.S for memset, uaccess.S for clear_user)."""
    if kind not in KERNEL_FILE:
        raise CopygenError(f"a kernel tree has no file for a {kind} sweep", Loc(tree),
                           hint="guard memcpy, memset, copy_user or clear_user sweeps with it")
    path = Path(tree).expanduser() / "arch" / "riscv" / "lib" / KERNEL_FILE[kind]
    if not path.is_file():
        raise CopygenError(f"no arch/riscv/lib/{KERNEL_FILE[kind]} in it", Loc(tree),
                           hint="give --guard-kernel-tree the top of a Linux tree")
    return str(path)


def _baseline_check(path: str, kind: str) -> str:
    if is_assembly(path):
        read_source(path)                   # an unreadable file fails here
        return path
    st = load_file(path, available())
    if getattr(st, "string" if kind in STRING_FNS else kind) is None:
        what = "string block" if kind in STRING_FNS else f"{kind} routine"
        raise CopygenError(f"baseline {path} has no {what} (for its {kind})",
                           hint="give a file that defines one")
    return path


def _baselines(store: Store, names: list[str], kind: str, profile: str, req: Request) -> dict[str, dict]:
    """Each baseline's evaluation, from the store or made (and kept) now."""
    workload = eval_workload(req.workload, req.align_mix, vector_state_name(req.vector_dirty))
    out = {}
    for name in names:
        key = baseline_key(name, kind)
        row = store.eval_of(key, profile, workload)
        if row is None:
            asm = Path(name).name if is_assembly(name) else ""
            row = evaluate(Job(key, read_source(name), kind, profile, req.workload, req.align_mix,
                               req.build_cache, asm, req.vector_dirty))
            store.add_eval(key, profile, workload, row)
        out[name] = {**row, "name": _strategy_name(name, kind)}
    return out


def _strategy_name(path: str, kind: str) -> str:
    """What a baseline's routine is called in its file (`kernel2021`,
    `lib.memcpy`, or a kernel file's `memset.S`): the label of its point
    in a plot."""
    if is_assembly(path):
        return Path(path).name
    st = load_file(path, available())
    if kind in STRING_FNS:
        return f"{st.string.name}.{kind}"
    return getattr(st, kind).name
