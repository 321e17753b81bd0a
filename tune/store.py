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
  proofs   one row per code key: the verdict and each clause's status, the
           fingerprint of the prover that gave it (an `unknown` from
           another prover is proved again: verify.solver.cache.prover_fingerprint)
           and the SHA-256 of the ELF proved

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
    detail TEXT, seconds REAL, prover TEXT, elf_sha256 TEXT);
"""
# (table, column, type) added to schema 1 after stores of it were written
LATER_COLUMNS = (("proofs", "prover", "TEXT"), ("evals", "extable_bytes", "INTEGER"),
                 ("evals", "elf", "TEXT"), ("evals", "elf_sha256", "TEXT"),
                 ("proofs", "elf_sha256", "TEXT"))


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
        and proof, best expected cycles first, then by label.  Given the
        current `prover`, an `unknown` another prover left is no verdict
        (the row says "stale"): this prover has not tried that code yet."""
        profile, workload, args = self.db.execute(
            "SELECT profile, workload, args FROM runs WHERE run=?", (run,)).fetchone()
        meta = (self._profile_key(profile), run_workload({"workload": workload, "args": args}))
        rows = self.db.execute(
            "SELECT p.point, p.label, p.code, p.text, e.expected, e.mean_size, e.code_bytes, e.grid, "
            "pr.verdict, pr.status, pr.detail, pr.prover, e.extable_bytes, e.elf, e.elf_sha256, "
            "pr.elf_sha256 FROM points p "
            "LEFT JOIN evals e ON e.code = p.code AND e.profile = ? AND e.workload = ? "
            "LEFT JOIN proofs pr ON pr.code = p.code WHERE p.run = ?", (*meta, run)).fetchall()
        out = [{"point": json.loads(r[0]), "label": r[1], "code": r[2], "text": r[3],
                "expected": r[4], "mean_size": r[5], "text_bytes": r[6], "extable_bytes": r[12],
                "grid": json.loads(r[7]) if r[7] else None, "verdict": r[8],
                "status": json.loads(r[9]) if r[9] else None,
                "detail": json.loads(r[10]) if r[10] else None, "elf": r[13],
                "elf_sha256": r[14], "proof_elf_sha256": r[15]} for r in rows]
        if prover is not None:
            for r, raw in zip(out, rows):
                if r["verdict"] == "unknown" and raw[11] != prover:
                    r.update(verdict=None, status=None, detail=None, stale=True)
        return sorted(out, key=lambda r: (r["expected"] is None, r["expected"] or 0, r["label"]))

    # --- proofs -------------------------------------------------------------------
    def add_proof(self, code: str, verdict: str, status: dict, detail: dict, seconds: float,
                  prover: str, elf_sha256: str | None = None) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO proofs (code, verdict, status, detail, "
                            "seconds, prover, elf_sha256) VALUES (?,?,?,?,?,?,?)",
                            (code, verdict, json.dumps(status), json.dumps(detail), seconds,
                             prover, elf_sha256))

    def proof_of(self, code: str) -> str | None:
        r = self.db.execute("SELECT verdict FROM proofs WHERE code=?", (code,)).fetchone()
        return r[0] if r else None

    def needs_proof(self, code: str, prover: str) -> bool:
        """No verdict yet, or an `unknown` that another prover gave up on
        (its limits or its invariants may not be this prover's)."""
        r = self.db.execute("SELECT verdict, prover FROM proofs WHERE code=?", (code,)).fetchone()
        return r is None or (r[0] == "unknown" and r[1] != prover)
