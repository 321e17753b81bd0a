"""The tuner's results store: one SQLite file.

Tables (schema SCHEMA):
  runs     one row per tuning run: its identity (a hash of the sweep's file,
           the sweep, profile, workload and grid) and what it was asked
  points   every point of a run: its axis values, label, variant text and
           the key of the code it emits (points that emit the same routine
           share a key and are evaluated once)
  evals    one row per (code key, profile, workload: eval_workload's key,
           with the alignment mix and vector state): expected cycles per
           call, the routine's `.text` bytes (column code_bytes) and its
           share of `__ex_table` (extable_bytes; measure.size says what is
           counted), the size x alignment grid, the seconds it took, and
           the ELF benched (its path and SHA-256: what a proof reads)
  proofs   one row per code key: the entry points its ELF defines (column
           entries: what `copygen verify` proves of it, every one of
           which must be proved), the verdict over them, the status and
           detail of the entry that decides it, the fingerprint of the prover
           and the SHA-256 of the ELF proved.  A row written before entry
           points were recorded (entries empty) holds the proof of the
           swept routine's first entry point alone (__asm_copy_to_user of a
           copy_user): it is read as that and no more (results: `legacy`),
           never as a proof of the point
  entry_proofs  one row per (code key, entry point): its kind, verdict and
           each clause's status, the fingerprint of the prover that gave it
           (an `unknown` from another prover is proved again:
           verify.solver.cache.prover_fingerprint) and the SHA-256 of the
           ELF proved; each committed as it finishes

Each evaluation is committed as it finishes (WAL journal): a run killed at
any moment and started again with the same command finds every committed
row and redoes none of them.  A file that is not a copygen store is refused
with a CopygenError and left untouched.  Columns added since schema 1 was
first written (LATER_COLUMNS) are added to an older store when it is
opened, empty in its old rows: its results stay, and show "-" there.
Role: persistence.  May import copygen.errors and the standard library.
"""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from copygen.errors import CopygenError, Loc

SCHEMA = 1


def eval_workload(workload: str, align_mix: str, vector_state: str = "clean") -> str:
    """What the evals table keys an evaluation's workload by: the cycles
    depend on the alignment mix and on the vector state (the share of
    vector calls with dirty user vector state, as measure.dispatch names
    it) too, so a mix other than the default spec and a state other than
    clean are part of the key ("network@all", "uniform:0-4096+vector:dirty",
    "tcp@all+vector:0.25"); the defaults keep the plain name, as the stores
    written before either was part of the key."""
    key = workload if align_mix == "spec" else f"{workload}@{align_mix}"
    return key if vector_state == "clean" else f"{key}+vector:{vector_state}"


def run_workload(run: dict) -> str:
    """The evals key of a run's row (runs table): its workload under the
    alignment mix and vector state its args record."""
    args = run["args"] if isinstance(run["args"], dict) else json.loads(run["args"] or "{}")
    return eval_workload(run["workload"], args.get("align_mix", "spec"),
                         args.get("vector_state", "clean"))

TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs (run TEXT PRIMARY KEY, source TEXT, sweep TEXT, routine TEXT,
    kind TEXT, profile TEXT, workload TEXT, args TEXT, created REAL);
CREATE TABLE IF NOT EXISTS points (run TEXT, point TEXT, label TEXT, code TEXT, text TEXT,
    PRIMARY KEY (run, point));
CREATE TABLE IF NOT EXISTS evals (code TEXT, profile TEXT, workload TEXT, expected REAL,
    mean_size REAL, code_bytes INTEGER, grid TEXT, seconds REAL, extable_bytes INTEGER,
    elf TEXT, elf_sha256 TEXT, PRIMARY KEY (code, profile, workload));
CREATE TABLE IF NOT EXISTS proofs (code TEXT PRIMARY KEY, verdict TEXT, status TEXT,
    detail TEXT, seconds REAL, prover TEXT, elf_sha256 TEXT, entries TEXT);
CREATE TABLE IF NOT EXISTS entry_proofs (code TEXT, symbol TEXT, kind TEXT, verdict TEXT,
    status TEXT, detail TEXT, seconds REAL, prover TEXT, elf_sha256 TEXT,
    PRIMARY KEY (code, symbol));
"""
# (table, column, type) added to schema 1 after stores of it were written
LATER_COLUMNS = (("proofs", "prover", "TEXT"), ("evals", "extable_bytes", "INTEGER"),
                 ("evals", "elf", "TEXT"), ("evals", "elf_sha256", "TEXT"),
                 ("proofs", "elf_sha256", "TEXT"), ("proofs", "entries", "TEXT"))
# verdicts, worst first (verify.contract.verdict.ORDER); "partial": every
# entry point tried so far proved, some not tried yet
ORDER = ("unanalysable", "violated", "unknown", "bounded", "partial", "proved")


def overall(entries: list[str] | None, verdicts: dict[str, str]) -> str | None:
    """The verdict of a point from its entry points' (`verdicts`: symbol ->
    verdict, of those tried): None before any is tried; the worst of them
    when one is not proved (one entry point not proved disqualifies the
    point); "proved" only when every one of `entries` (None: not known,
    a record from before entry points were) is; else "partial"."""
    if not verdicts:
        return None
    bad = [v for v in verdicts.values() if v != "proved"]
    if bad:
        return min(bad, key=lambda v: ORDER.index(v) if v in ORDER else 0)
    if entries is None or set(entries) - set(verdicts):
        return "partial"
    return "proved"


class Store:
    def __init__(self, path: str | Path, profile_key=None) -> None:
        """profile_key(profile name) -> what evaluations are kept under: the
        caller's timing model in it (measure.bench.timing_fingerprint)
        makes a changed model measure again instead of mixing old cycles
        with new; by default the name alone."""
        self.path = Path(path)
        self._profile_key = profile_key or (lambda profile: profile)
        if self.path.is_dir():
            raise CopygenError(f"--db {path} is a directory", hint="give a file name, e.g. tune.db")
        try:
            self.db = sqlite3.connect(self.path, timeout=30)
            # read before anything is written: a foreign file stays as it was
            known = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as err:
            raise CopygenError(f"{path} is not a copygen tuning store ({err})",
                               hint="give --db a new file name; this file is left as it is") from None
        if known and "meta" not in known:
            self.db.close()
            raise CopygenError(f"{path} is an SQLite file but not a copygen tuning store",
                               hint="give --db a new file name; this file is left as it is")
        self.db.execute("PRAGMA journal_mode=WAL")
        with self.db:
            self.db.executescript(TABLES)
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
        schema = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0]
        if schema != str(SCHEMA):
            raise CopygenError(f"{path} is a tuning store of schema {schema}, this copygen "
                               f"reads {SCHEMA}", hint="give --db a new file name")
        self._add_later_columns()

    def _add_later_columns(self) -> None:
        for table, column, kind in LATER_COLUMNS:
            if column not in {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}:
                with self.db:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    @classmethod
    def open_existing(cls, path: str | Path, profile_key=None) -> "Store":
        if not Path(path).is_file():
            raise CopygenError("no tuning store here", Loc(str(path)),
                               hint="run `copygen tune FILE --db PATH` first")
        return cls(path, profile_key)

    def close(self) -> None:
        self.db.close()

    # --- runs and points ----------------------------------------------------
    def add_run(self, run: str, source: str, sweep: str, routine: str, kind: str, profile: str,
                workload: str, args: dict) -> None:
        """A run is its file, sweep, profile, workload and alignment mix; its
        args (baselines, guards) are the last command's, so `tune show`
        renders the ranking that command made."""
        with self.db:
            self.db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?) "
                            "ON CONFLICT(run) DO UPDATE SET args = excluded.args",
                            (run, source, sweep, routine, kind, profile, workload,
                             json.dumps(args, sort_keys=True), time.time()))

    def add_points(self, run: str, rows: list[tuple[str, str, str, str]]) -> None:
        """rows: (point json, label, code key, variant text).  A point seen
        before takes the code key it emits now: after a change to the
        generator, a rerun ranks the routine it builds, not the old one."""
        with self.db:
            self.db.executemany("INSERT INTO points VALUES (?,?,?,?,?) "
                                "ON CONFLICT(run, point) DO UPDATE SET label = excluded.label, "
                                "code = excluded.code, text = excluded.text",
                                [(run, *r) for r in rows])

    def runs(self) -> list[dict]:
        cols = ("run", "source", "sweep", "routine", "kind", "profile", "workload", "args", "created")
        return [dict(zip(cols, r)) for r in self.db.execute("SELECT * FROM runs ORDER BY created")]

    # --- evaluations ------------------------------------------------------------
    def evaluated(self, profile: str, workload: str) -> set[str]:
        return {r[0] for r in self.db.execute(
            "SELECT code FROM evals WHERE profile=? AND workload=?",
            (self._profile_key(profile), workload))}

    def add_eval(self, code: str, profile: str, workload: str, row: dict,
                 replace: bool = False) -> None:
        """Keep an evaluation; one already kept stays unless `replace` (an
        evaluation made again because its ELF was gone: tune.run)."""
        with self.db:
            self.db.execute(f"INSERT OR {'REPLACE' if replace else 'IGNORE'} INTO evals (code, profile, workload, expected, "
                            "mean_size, code_bytes, grid, seconds, extable_bytes, elf, "
                            "elf_sha256) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                            (code, self._profile_key(profile), workload, row["expected"],
                             row["mean_size"],
                             row["text_bytes"], json.dumps(row["grid"], sort_keys=True),
                             row["seconds"], row.get("extable_bytes"), row.get("elf"),
                             row.get("elf_sha256")))

    def eval_of(self, code: str, profile: str, workload: str) -> dict | None:
        r = self.db.execute("SELECT expected, mean_size, code_bytes, grid, seconds, extable_bytes "
                            "FROM evals WHERE code=? AND profile=? AND workload=?",
                            (code, self._profile_key(profile), workload)).fetchone()
        if r is None:
            return None
        return {"expected": r[0], "mean_size": r[1], "text_bytes": r[2], "grid": json.loads(r[3]),
                "seconds": r[4], "extable_bytes": r[5]}

    def results(self, run: str, prover: str | None = None) -> list[dict]:
        """Every point of `run` with its evaluation (None until evaluated)
        and proof (proof_fields), best expected cycles first, then by label.
        Given the current `prover`, an `unknown` another prover left is no
        verdict (the row says "stale"): this prover has not tried that code
        yet."""
        profile, workload, args = self.db.execute(
            "SELECT profile, workload, args FROM runs WHERE run=?", (run,)).fetchone()
        meta = (self._profile_key(profile), run_workload({"workload": workload, "args": args}))
        rows = self.db.execute(
            "SELECT p.point, p.label, p.code, p.text, e.expected, e.mean_size, e.code_bytes, e.grid, "
            "e.extable_bytes, e.elf, e.elf_sha256 FROM points p "
            "LEFT JOIN evals e ON e.code = p.code AND e.profile = ? AND e.workload = ? "
            "WHERE p.run = ?", (*meta, run)).fetchall()
        proofs = self._proofs({r[2] for r in rows}, prover)
        out = [{"point": json.loads(r[0]), "label": r[1], "code": r[2], "text": r[3],
                "expected": r[4], "mean_size": r[5], "text_bytes": r[6], "extable_bytes": r[8],
                "grid": json.loads(r[7]) if r[7] else None, "elf": r[9], "elf_sha256": r[10],
                **proofs.get(r[2], NO_PROOF)} for r in rows]
        return sorted(out, key=lambda r: (r["expected"] is None, r["expected"] or 0, r["label"]))

    # --- proofs -------------------------------------------------------------------
    def _proofs(self, codes: set[str], prover: str | None) -> dict[str, dict]:
        """code -> its proof fields (proof_fields) for each of `codes` with a
        proofs row."""
        tried: dict[str, list[tuple]] = {}
        for r in self.db.execute("SELECT code, symbol, kind, verdict, status, detail, seconds, "
                                 "prover, elf_sha256 FROM entry_proofs"):
            if r[0] in codes:
                tried.setdefault(r[0], []).append(r)
        out = {}
        for r in self.db.execute("SELECT code, verdict, status, detail, prover, elf_sha256, "
                                 "entries FROM proofs"):
            if r[0] in codes:
                out[r[0]] = _fields(r, tried.get(r[0], []), prover)
        return out

    def proof_fields(self, code: str, prover: str | None = None) -> dict:
        """What a row of results() says of a code's proof: `verdict` over
        its entry points (tune.store.overall; None: none tried), the
        `status` and `detail` of the entry point that decides it (the first
        not proved, else the first), `entries` (symbol -> its kind,
        verdict, status, detail, seconds, in the order they are proved),
        `entry_points` (the symbols to prove; None: not known yet, or a
        record from before entry points were kept, which is `legacy`: its
        one proof is the first entry point's, and its "proved" is read as
        "partial"), `stale` (an unknown another prover left, no verdict)
        and `proof_elf_sha256` (the ELF the entry points were listed in)."""
        return self._proofs({code}, prover).get(code, dict(NO_PROOF))

    def add_proof(self, code: str, verdict: str, status: dict, detail: dict, seconds: float,
                  prover: str, elf_sha256: str | None = None) -> None:
        """A record in the form stores had before entry points were kept:
        one proof per code, of the swept routine's first entry point (what
        results() reads as `legacy`).  The tuner writes set_entry_points
        and add_entry_proof; this stays for such records (and tests of
        them)."""
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO proofs (code, verdict, status, detail, "
                            "seconds, prover, elf_sha256) VALUES (?,?,?,?,?,?,?)",
                            (code, verdict, json.dumps(status), json.dumps(detail), seconds,
                             prover, elf_sha256))

    def set_entry_points(self, code: str, entries: list[tuple[str, str]], elf_sha256: str) -> None:
        """The entry points (symbol, kind) of the ELF `elf_sha256` a code's
        evaluation benched, each of which is to be proved.  A record from
        before entry points were kept is superseded (its verdict goes: the
        proof is made again entry by entry, through the proof cache)."""
        with self.db:
            self.db.execute("INSERT INTO proofs (code, entries, elf_sha256) VALUES (?,?,?) "
                            "ON CONFLICT(code) DO UPDATE SET entries = excluded.entries, "
                            "elf_sha256 = excluded.elf_sha256, verdict = NULL, status = NULL, "
                            "detail = NULL, seconds = NULL, prover = NULL",
                            (code, json.dumps([list(e) for e in entries]), elf_sha256))
        self._summarise(code)

    def entry_points(self, code: str) -> list[tuple[str, str]] | None:
        """(symbol, kind) of each entry point recorded for `code`, or None."""
        r = self.db.execute("SELECT entries FROM proofs WHERE code=?", (code,)).fetchone()
        return [tuple(e) for e in json.loads(r[0])] if r and r[0] else None

    def add_entry_proof(self, code: str, symbol: str, kind: str, verdict: str, status: dict,
                        detail: dict, seconds: float, prover: str, elf_sha256: str) -> None:
        """One entry point's proof, committed at once; the code's verdict
        over its entry points (the proofs row) follows."""
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO entry_proofs VALUES (?,?,?,?,?,?,?,?,?)",
                            (code, symbol, kind, verdict, json.dumps(status), json.dumps(detail),
                             seconds, prover, elf_sha256))
        self._summarise(code)

    def _summarise(self, code: str) -> None:
        """The proofs row's verdict, status, detail, seconds and prover:
        the verdict over the entry points proved so far (for readers of the
        table; results() computes it again under the current prover)."""
        f = self.proof_fields(code)
        if f.get("legacy"):
            return
        seconds = sum(e["seconds"] or 0 for e in f["entries"].values())
        provers = {r[0] for r in self.db.execute("SELECT prover FROM entry_proofs WHERE code=?",
                                                 (code,))}
        with self.db:
            self.db.execute("UPDATE proofs SET verdict=?, status=?, detail=?, seconds=?, prover=? "
                            "WHERE code=?",
                            (f["verdict"], json.dumps(f["status"]) if f["status"] is not None
                             else None, json.dumps(f["detail"]) if f["detail"] is not None
                             else None, seconds, provers.pop() if len(provers) == 1 else None,
                             code))

    def entry_proof(self, code: str, symbol: str) -> dict | None:
        """One entry point's proof row: verdict, prover, elf_sha256."""
        r = self.db.execute("SELECT verdict, prover, elf_sha256 FROM entry_proofs "
                            "WHERE code=? AND symbol=?", (code, symbol)).fetchone()
        return None if r is None else {"verdict": r[0], "prover": r[1], "elf_sha256": r[2]}

    def needs_entry_proof(self, code: str, symbol: str, prover: str, elf_sha256: str) -> bool:
        """No verdict yet for this entry point of the ELF `elf_sha256`: none
        kept, one of another ELF (the evaluation was made again since; the
        proof cache makes the same code's proof cheap), or an `unknown` that
        another prover gave up on (its limits or its invariants may not be
        this prover's)."""
        e = self.entry_proof(code, symbol)
        return (e is None or e["elf_sha256"] != elf_sha256
                or (e["verdict"] == "unknown" and e["prover"] != prover))

    def proof_of(self, code: str, prover: str | None = None) -> str | None:
        """The code's verdict over its entry points (proof_fields)."""
        return self.proof_fields(code, prover)["verdict"]


NO_PROOF = {"verdict": None, "status": None, "detail": None, "entries": {}, "entry_points": None,
            "proof_elf_sha256": None}


def _fields(row: tuple, tried: list[tuple], prover: str | None) -> dict:
    """proof_fields of a proofs row (code, verdict, status, detail, prover,
    elf_sha256, entries) and its entry_proofs rows."""
    _, verdict, status, detail, by, sha, entries = row
    out = {**NO_PROOF, "proof_elf_sha256": sha}
    if entries is None:                       # a record from before entry points were kept
        out.update(verdict=verdict, status=json.loads(status) if status else None,
                   detail=json.loads(detail) if detail else None)
        if verdict == "proved":
            out.update(verdict="partial", legacy=True)
        elif verdict == "unknown" and prover is not None and by != prover:
            out.update(verdict=None, status=None, detail=None, stale=True)
        return out
    order = [e[0] for e in json.loads(entries)]
    done = {}
    for _, sym, kind, v, st, det, sec, who, _sha in tried:
        if v == "unknown" and prover is not None and who != prover:
            out["stale"] = True
            continue
        done[sym] = {"kind": kind, "verdict": v, "status": json.loads(st) if st else {},
                     "detail": json.loads(det) if det else {}, "seconds": sec}
    rank = {s: i for i, s in enumerate(order)}
    done = dict(sorted(done.items(), key=lambda kv: rank.get(kv[0], len(rank))))
    out.update(entries=done, entry_points=order,
               verdict=overall(order, {s: e["verdict"] for s, e in done.items()}))
    if done:
        bad = [s for s, e in done.items() if e["verdict"] != "proved"]
        decide = min(bad, key=lambda s: ORDER.index(done[s]["verdict"])
                     if done[s]["verdict"] in ORDER else 0) if bad else next(iter(done))
        out.update(status=done[decide]["status"], detail=done[decide]["detail"], decided_by=decide)
    return out
