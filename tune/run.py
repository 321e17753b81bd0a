"""A tuning run, start to finish (and again after a kill, without redoing).

plan(): expand the sweep into variants, key each by the code it emits
(points that emit the same routine are one evaluation), and name the run by
a hash of everything that decides its results (the vector state among them
when it is not clean: a clean run has the name of the same command without
--vector-state).  evaluate_all(): every key
not yet in the store, on local worker processes (`jobs`) or a Dask cluster
(`dask`), each committed as it finishes.  prove_top(): the best keys in rank
order, proved with the full contract (the proof cache skips code proved
before); a variant is a winner only when every required clause of every
entry point its ELF defines is proved (entry_points: what `copygen verify`
proves of it, both copy directions of a copy_user, memcpy, memmove and
memset of a string block, a vector routine) and its routine is within the
`.text` limit, if one is given.  The swept routine's benched entry point
(__asm_copy_to_user of a copy_user) is proved for each of the top keys,
as a filter; the others only for points in rank order until one is proved
throughout (a point with one not proved is disqualified, and the next
tried), so a sweep costs about one point's other entry points more than
proving the benched one alone did.  A proof reads the ELF its evaluation
benched, checked against the SHA-256 the evaluation recorded, and builds
none of its own: what is proved is what was timed (a code whose evaluated
ELF is not there is evaluated again first: evaluated_build), each entry
point of that one file.
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
from copygen.verify.solver.parallel import quiet_worker, sigterm_held



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
        with sigterm_held():           # the workers are forked at the first submit
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


def entry_points(elf: str | Path, kind: str) -> list[tuple[str, str]]:
    """(symbol, kind) of every entry point of the ELF that `copygen verify`
    proves (verify.contract.inputs.routines: both copy directions, clear,
    memcpy, memmove, memset, a vector routine), the one a sweep of `kind`
    benches first.  The composed vector copy `verify` also shows is no
    entry point (it is those routines' reports put together)."""
    from copygen.verify.contract.inputs import routines     # z3: only when proving
    return sorted(routines(Path(elf)), key=lambda e: e[0] != SYMBOL[kind])


def short_name(symbol: str) -> str:
    """An entry point as reports name it: copy_to_user, clear_user, memcpy."""
    return symbol.removeprefix("__asm_").lstrip("_")


def prove_top(store: Store, run: str, kind: str, top: int, proof_cache: str, jobs: int,
              advance: Callable[[str], None] = lambda label: None,
              guards: dict[str, dict] | None = None, max_text: int | None = None,
              job_of: Callable[[str], Job] | None = None, rules=None) -> None:
    """Prove the `top` best evaluated codes of the run (in rank order, after
    the guards), and keep going down the ranking until one is proved or 3 x
    top are tried.  Each code's benched entry point is proved first; the
    others of the codes tried until one has them all proved (prove_point).
    Points over the size limit are never tried: none of them can win.
    `job_of(code)` evaluates again a code whose evaluated ELF is not there
    to prove (evaluated_build)."""
    from copygen.verify.solver.cache import ProofCache, prover_fingerprint
    prover = prover_fingerprint()
    tried, complete = 0, 0
    seen: set[str] = set()
    for row in ranked(store.results(run, prover), guards, max_text):
        if row["expected"] is None or row.get("pruned") or row["code"] in seen:
            continue
        seen.add(row["code"])
        if tried >= top and (complete or tried >= 3 * top):
            break
        tried += 1
        prove_point(store, row, kind, ProofCache(proof_cache), jobs, rules, job_of,
                    every=not complete, advance=advance)
        complete += store.proof_of(row["code"], prover) == "proved"


def prove_point(store: Store, row: dict, kind: str, cache, jobs: int, rules=None,
                job_of: Callable[[str], Job] | None = None, every: bool = True,
                advance: Callable[[str], None] = lambda label: None) -> None:
    """Prove the entry points of `row`'s code that are still to prove, in
    the ELF its evaluation benched: the benched one first, then (`every`)
    each other while the ones before are proved.  A code already decided
    (proved throughout, or an entry point not proved) is left as it is; so
    is a record from before entry points were kept that disqualified it
    (its "proved" is proved again, entry by entry)."""
    from copygen.verify.solver.cache import prover_fingerprint
    prover = prover_fingerprint()
    code = row["code"]
    f = store.proof_fields(code, prover)
    if f["verdict"] not in (None, "partial") or (f["verdict"] == "partial" and not every
                                                  and not f.get("legacy")):
        return
    build = evaluated_build(store, row, job_of)
    entries = store.entry_points(code)
    if entries is None or f.get("legacy") or f["proof_elf_sha256"] != build["elf_sha256"]:
        entries = entry_points(build["elf"], kind)
        store.set_entry_points(code, entries, build["elf_sha256"])
    for i, (sym, sym_kind) in enumerate(entries):
        if i and not every:
            break
        if store.needs_entry_proof(code, sym, prover, build["elf_sha256"]):
            advance(f"{row['label']}: {short_name(sym)}")
            _prove(store, build, sym, sym_kind, cache, jobs, rules)
        done = store.entry_proof(code, sym)
        if done is None or done["verdict"] != "proved":
            break


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


def _prove(store: Store, row: dict, symbol: str, kind: str, cache, jobs: int,
           rules=None) -> None:
    """Prove entry point `symbol` (of verify's `kind`) of the ELF `row`
    names (evaluated_build): the one its evaluation benched; with the
    target's register `rules`, clause R1 too (scalar routines: R1 is the
    scalar prover's).  A vector routine is proved at every VLEN, as
    `copygen verify` and `copygen patch` prove it."""
    from copygen.verify.solver.cache import prove_cached, prover_fingerprint
    from copygen.verify.contract.verdict import verdict
    from copygen.verify.contract.world import VECTOR_KINDS
    if kind in VECTOR_KINDS:
        from copygen.verify.vector.vprove import prove_vectors
        rep = prove_cached(row["elf"], symbol, kind, cache,
                           prove=lambda callee: prove_vectors(str(row["elf"]), symbol=symbol))
    else:
        rep = prove_cached(row["elf"], symbol, kind, cache, jobs=jobs, rules=rules)
    store.add_entry_proof(row["code"], symbol, kind, verdict(rep), rep.status, rep.detail,
                          rep.seconds, prover_fingerprint(), row["elf_sha256"])


def winner(rows: list[dict]) -> dict | None:
    """The best-ranked point whose code is proved (every entry point of it:
    tune.store.overall), within the size limit and (when the rows carry
    guards) nowhere slower than a guard."""
    return next((r for r in rows if r["verdict"] == "proved" and not r.get("pruned")
                 and not any(r.get("guard", {}).values())), None)
