"""A tuning run, start to finish (and again after a kill, without redoing).

plan(): expand the sweep into variants, key each by the code it emits
(points that emit the same routine are one evaluation), and name the run by
a hash of everything that decides its results (the vector state among them
when it is not clean: a clean run has the name of the same command without
--vector-state).  evaluate_all(): every key
not yet in the store, on local worker processes (`jobs`) or a Dask cluster
(`dask`), each committed as it finishes.  prove_top(): the best keys in rank
order, proved with the full contract (the proof cache skips code proved
before); a variant is a winner only when every required clause is proved
and its routine is within the `.text` limit, if one is given.  A proof
reads the ELF its evaluation benched, checked against the SHA-256 the
evaluation recorded, and builds none of its own: what is proved is what
was timed (a code whose evaluated ELF is not there is evaluated again
first: evaluated_build).
Role: orchestration.  May import gen, verify, measure (through
tune.evaluate), tune.store, tune.evaluate, copygen.errors.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from copygen.gen.emission import emit
from copygen.errors import CopygenError, Loc
from copygen.gen.front.parse import read_source
from copygen.gen.front.validate import STRING_FNS, load_text
from copygen.gen.front.variants import Space, sweep_space
from copygen.measure.dispatch import vector_state_name
from copygen.tune.evaluate import SYMBOL, Job, evaluate, file_sha256
from copygen.tune.store import Store, eval_workload
from copygen.verify.solver.parallel import quiet_worker

KIND_OF_SWEEP = {"copy_user": "to", "clear_user": "clear", "memcpy": "memcpy", "memset": "memset"}


@dataclass
class Plan:
    run: str
    space: Space
    codes: dict[str, str] = field(default_factory=dict)     # code key -> text to build
    points: list[tuple[str, str, str, str]] = field(default_factory=list)


def code_key(text: str, kind: str) -> str:
    """A hash of the routine kind and the file a variant's routine is emitted
    into (uaccess.S, or string.c for memcpy and memset), under a fixed source
    name.  The kind is part of it: one uaccess.S holds both copy_user and
    clear_user, which a store shared by two sweeps evaluates apart."""
    st = load_text(text, "variant.copy")
    render = emit.render_string if kind in STRING_FNS else emit.render_uaccess
    text_out = render(st, "variant.copy") or ""
    return hashlib.sha256(f"{kind}\n{text_out}".encode()).hexdigest()


def is_assembly(path: str) -> bool:
    """A kernel assembly file (memset.S, uaccess.S), not a .copy strategy."""
    return Path(path).suffix in (".S", ".s")


def baseline_key(path: str, kind: str) -> str:
    """The code key a baseline file is evaluated under: its routine's, for
    a .copy; a hash of the kind and the file's text, for a kernel .S."""
    text = read_source(path)
    if not is_assembly(path):
        return code_key(text, kind)
    return hashlib.sha256(f"{kind}\nassembly {Path(path).name}\n{text}".encode()).hexdigest()


def plan(path: str, sweep: str | None, profile: str, workload: str, align_mix: str,
         profiles=None, vector_dirty: float = 0.0) -> Plan:
    space = sweep_space(path, sweep, profiles)
    state = vector_state_name(vector_dirty)
    ident = json.dumps([read_source(path), space.sweep, profile, workload, align_mix]
                       + ([] if state == "clean" else [f"vector:{state}"]))
    p = Plan(hashlib.sha256(ident.encode()).hexdigest()[:16], space)
    for v in space.variants:
        key = code_key(v.alone, space.kind)
        p.codes.setdefault(key, v.alone)
        p.points.append((json.dumps(v.as_dict(), sort_keys=True), v.label, key, v.text))
    return p


def evaluate_all(store: Store, p: Plan, profile: str, workload: str, align_mix: str, cache: str,
                 jobs: int = 1, dask: str | None = None,
                 advance: Callable[[int], None] = lambda n: None, vector_dirty: float = 0.0) -> int:
    """Evaluate every code key the store lacks under this profile, workload,
    alignment mix and vector state; returns how many ran."""
    done = store.evaluated(profile, eval_workload(workload, align_mix, vector_state_name(vector_dirty)))
    todo = [job_for(p, k, profile, workload, align_mix, cache, vector_dirty)
            for k in p.codes if k not in done]
    advance(len(p.codes) - len(todo))
    if dask:
        _on_dask(store, todo, dask, advance)
    elif jobs <= 1:
        for job in todo:
            _commit(store, job, evaluate(job), advance)
    else:
        _on_pool(store, todo, jobs, advance)
    return len(todo)


def job_for(p: Plan, code: str, profile: str, workload: str, align_mix: str, cache: str,
            vector_dirty: float = 0.0) -> Job:
    """The evaluation of the plan's code key `code`."""
    return Job(code, p.codes[code], p.space.kind, profile, workload, align_mix, cache,
               vector_dirty=vector_dirty)


def job_workload(job: Job) -> str:
    """The evals key a job's result is kept under (tune.store.eval_workload)."""
    return eval_workload(job.workload, job.align_mix, vector_state_name(job.vector_dirty))


def _commit(store: Store, job: Job, row: dict, advance) -> None:
    store.add_eval(job.code, job.profile, job_workload(job), row)
    advance(1)


def _on_pool(store: Store, todo: list[Job], jobs: int, advance) -> None:
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=quiet_worker, initargs=(os.getpid(),))
    try:
        pending = {pool.submit(evaluate, job): job for job in todo}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                _commit(store, pending.pop(fut), fut.result(), advance)
    except BaseException:
        # stopped (SIGTERM, Ctrl-C) or a point failed: end the workers now
        # instead of waiting for the points they hold (committed ones stay)
        _end_workers(pool)
        raise
    pool.shutdown()


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and terminate the workers (quietly:
    quiet_worker)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.join()


def _on_dask(store: Store, todo: list[Job], address: str, advance) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise CopygenError("--dask needs the `distributed` package",
                           hint="pip install 'copygen[dask]'") from None
    try:
        client = Client(address, timeout="10s")
    except OSError as err:
        raise CopygenError(f"cannot reach the Dask scheduler at {address}: {err}") from None
    try:
        futures = {client.submit(evaluate, job, pure=False): job for job in todo}
        for fut in as_completed(list(futures)):
            _commit(store, futures[fut], fut.result(), advance)
    finally:
        client.close()


def slower_cells(grid: dict, base: dict) -> int:
    """How many (class, size) cells of `base` the point of `grid` is slower
    in; a cell `grid` was not measured in (a row of a store written under
    other grid classes) counts as slower: nothing says it is not."""
    return sum(1 for cls, row in base.items() for n, t in row.items()
               if grid.get(cls, {}).get(n, float("inf")) > t + 1e-9)


def text_pruned(row: dict, max_text: int | None) -> str | None:
    """Why `row` is pruned by the limit on the tuned routine's `.text`
    bytes (None: it is not, or nothing is known of its size yet)."""
    size = row.get("text_bytes")
    if max_text is None or size is None or size <= max_text:
        return None
    return f"text {size} B > max {max_text} B"


def ranked(rows: list[dict], guards: dict[str, dict] | None = None,
           max_text: int | None = None) -> list[dict]:
    """The store's rows (best expected cycles first) with each guard and
    the size limit applied: a point whose routine has more than `max_text`
    bytes of .text ranks after every point that has not (`pruned` on each
    row says why), and a point slower than a guard baseline in any cell of
    the size x alignment grid after every point that is not (`guard` on
    each row counts its slower cells per guard)."""
    if not guards and max_text is None:
        return rows
    for r in rows:
        r["pruned"] = text_pruned(r, max_text)
        r["guard"] = ({g: slower_cells(r["grid"], base["grid"]) for g, base in (guards or {}).items()}
                      if r.get("grid") else {})
    return sorted(rows, key=lambda r: (r["expected"] is None, r["pruned"] is not None,
                                       any(r["guard"].values())))


def prove_top(store: Store, run: str, kind: str, top: int, proof_cache: str, jobs: int,
              advance: Callable[[str], None] = lambda label: None,
              guards: dict[str, dict] | None = None, max_text: int | None = None,
              job_of: Callable[[str], Job] | None = None, rules=None) -> None:
    """Prove the `top` best evaluated codes of the run (in rank order, after
    the guards), and keep going down the ranking until one is proved or 3 x
    top are tried.  Points over the size limit are never tried: none of
    them can win.  `job_of(code)` evaluates again a code whose evaluated
    ELF is not there to prove (evaluated_build)."""
    from copygen.verify.solver.cache import ProofCache, prover_fingerprint
    tried, proved = 0, 0
    seen: set[str] = set()
    for row in ranked(store.results(run), guards, max_text):
        if row["expected"] is None or row.get("pruned") or row["code"] in seen:
            continue
        seen.add(row["code"])
        if tried >= top and (proved or tried >= 3 * top):
            break
        tried += 1
        advance(row["label"])
        if store.needs_proof(row["code"], prover_fingerprint()):
            _prove(store, evaluated_build(store, row, job_of), kind, ProofCache(proof_cache), jobs,
                   rules)
        proved += store.proof_of(row["code"]) == "proved"


def evaluated_build(store: Store, row: dict, job_of: Callable[[str], Job] | None) -> dict:
    """`row` naming the ELF its evaluation benched, as it was benched (its
    SHA-256 checked).  An evaluation that names none (a store written before
    evaluations recorded theirs), or whose file is gone (a cleared build
    cache, a Dask worker's own disk) or changed, is made again by
    `job_of(code)` (the same code under the same model: the same cycles)
    and replaces the stored one; without `job_of` it is refused."""
    elf = Path(row["elf"]) if row.get("elf") else None
    if elf is not None and elf.is_file() and file_sha256(elf) == row["elf_sha256"]:
        return row
    if job_of is None:
        raise CopygenError(f"the ELF evaluated for {row['label']} is not there as it was benched",
                           Loc(str(elf or "")), hint="tune again: the tuner evaluates it again")
    job = job_of(row["code"])
    again = evaluate(job)
    store.add_eval(job.code, job.profile, job_workload(job), again, replace=True)
    return {**row, "elf": again["elf"], "elf_sha256": again["elf_sha256"]}


def _prove(store: Store, row: dict, kind: str, cache, jobs: int, rules=None) -> None:
    """Prove the ELF `row` names (evaluated_build): the one its evaluation
    benched; with the target's register `rules`, clause R1 too."""
    from copygen.verify.solver.cache import prove_cached, prover_fingerprint
    from copygen.verify.contract.verdict import verdict
    rep = prove_cached(row["elf"], SYMBOL[kind], KIND_OF_SWEEP[kind], cache, jobs=jobs, rules=rules)
    store.add_proof(row["code"], verdict(rep), rep.status, rep.detail, rep.seconds,
                    prover_fingerprint(), row["elf_sha256"])


def winner(rows: list[dict]) -> dict | None:
    """The best-ranked point whose code is proved, within the size limit
    and (when the rows carry guards) nowhere slower than a guard."""
    return next((r for r in rows if r["verdict"] == "proved" and not r.get("pruned")
                 and not any(r.get("guard", {}).values())), None)
