"""The result store: one SQLite file per results directory.

SQLite rather than DuckDB: it ships with Python (no extra dependency on a cluster login node),
its transactions make every finished run durable the moment it is committed (a crash or Ctrl-C
loses at most the run in flight), and the data are small (a campaign is megabytes). Samples are
stored as packed float64 blobs: one row per (result, series), not one row per iteration.
"""

import json
import sqlite3
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .records import SERIES, ResultRecord

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS campaigns (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL, started REAL NOT NULL,
  finished REAL, status TEXT NOT NULL, provenance TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY, campaign_id INTEGER REFERENCES campaigns(id), key TEXT NOT NULL,
  kernel TEXT NOT NULL, transport TEXT NOT NULL, mpi TEXT NOT NULL, ranks INTEGER NOT NULL,
  launcher TEXT NOT NULL, repeat INTEGER NOT NULL DEFAULT 0, settings TEXT NOT NULL,
  status TEXT NOT NULL, reason TEXT, started REAL NOT NULL, finished REAL,
  selected_transport TEXT, oversubscribed INTEGER NOT NULL DEFAULT 0, notes TEXT,
  command TEXT, stderr_tail TEXT, kernel_meta TEXT, provenance TEXT, flags TEXT);
CREATE INDEX IF NOT EXISTS runs_campaign ON runs(campaign_id, key);
CREATE TABLE IF NOT EXISTS results (
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), size INTEGER NOT NULL,
  iterations INTEGER NOT NULL, warmup INTEGER NOT NULL, unit TEXT NOT NULL, datatype TEXT,
  count INTEGER, validated INTEGER, bytes_per_sample REAL, messages_per_sample REAL,
  extra TEXT);
CREATE INDEX IF NOT EXISTS results_run ON results(run_id, size);
CREATE TABLE IF NOT EXISTS samples (
  result_id INTEGER NOT NULL REFERENCES results(id), series TEXT NOT NULL, n INTEGER NOT NULL,
  data BLOB NOT NULL, PRIMARY KEY (result_id, series));
"""


def _pack(values: list[float]) -> bytes:
    return array("d", values).tobytes()


def _unpack(blob: bytes) -> list[float]:
    a = array("d")
    a.frombytes(blob)
    return a.tolist()


@dataclass
class RunRow:
    id: int
    campaign_id: int | None
    key: str
    kernel: str
    transport: str
    mpi: str
    ranks: int
    launcher: str
    repeat: int
    settings: dict[str, Any]
    status: str
    reason: str | None
    started: float
    finished: float | None
    selected_transport: str | None
    oversubscribed: bool
    notes: list[str]
    command: str | None
    stderr_tail: str | None
    kernel_meta: dict[str, Any]
    provenance: dict[str, Any]
    flags: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.kernel} {self.transport} np={self.ranks} ({self.mpi})"


class Store:
    """Campaigns, runs, results and samples in one file. Every write commits at once."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path))
        self.db.execute("PRAGMA foreign_keys = ON")
        # WAL keeps readers (a report being built) from blocking the writer of a live campaign.
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.executescript(_SCHEMA)
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                        (str(SCHEMA_VERSION),))
        self.db.commit()

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- campaigns ---------------------------------------------------------------------------
    def begin_campaign(self, name: str, spec: dict[str, Any],
                       provenance: dict[str, Any] | None = None) -> int:
        cur = self.db.execute(
            "INSERT INTO campaigns (name, spec, started, status, provenance) "
            "VALUES (?, ?, ?, 'running', ?)",
            (name, json.dumps(spec), time.time(), json.dumps(provenance or {})))
        self.db.commit()
        return int(cur.lastrowid or 0)

    def end_campaign(self, campaign_id: int, status: str) -> None:
        self.db.execute("UPDATE campaigns SET finished = ?, status = ? WHERE id = ?",
                        (time.time(), status, campaign_id))
        self.db.commit()

    def campaigns(self) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT id, name, started, finished, status, spec FROM campaigns ORDER BY id")
        return [dict(id=r[0], name=r[1], started=r[2], finished=r[3], status=r[4],
                     spec=json.loads(r[5])) for r in rows]

    def latest_campaign(self) -> int | None:
        row = self.db.execute("SELECT max(id) FROM campaigns").fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def completed_keys(self, campaign_id: int) -> set[str]:
        rows = self.db.execute(
            "SELECT key FROM runs WHERE campaign_id = ? AND status IN ('ok', 'skipped')",
            (campaign_id,))
        return {r[0] for r in rows}

    # -- runs --------------------------------------------------------------------------------
    def begin_run(self, *, campaign_id: int | None, key: str, kernel: str, transport: str,
                  mpi: str, ranks: int, launcher: str, repeat: int,
                  settings: dict[str, Any]) -> int:
        cur = self.db.execute(
            "INSERT INTO runs (campaign_id, key, kernel, transport, mpi, ranks, launcher, repeat,"
            " settings, status, started) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?)",
            (campaign_id, key, kernel, transport, mpi, ranks, launcher, repeat,
             json.dumps(settings), time.time()))
        self.db.commit()
        return int(cur.lastrowid or 0)

    def add_result(self, run_id: int, rec: ResultRecord) -> int:
        cur = self.db.execute(
            "INSERT INTO results (run_id, size, iterations, warmup, unit, datatype, count,"
            " validated, bytes_per_sample, messages_per_sample, extra)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, rec.size, rec.iterations, rec.warmup, rec.unit, rec.datatype, rec.count,
             None if rec.validated is None else int(rec.validated), rec.bytes_per_sample,
             rec.messages_per_sample, json.dumps(rec.extra)))
        rid = int(cur.lastrowid or 0)
        for series in SERIES:
            values = getattr(rec, series)
            if values:
                self.db.execute("INSERT INTO samples VALUES (?, ?, ?, ?)",
                                (rid, series, len(values), _pack(values)))
        self.db.commit()
        return rid

    def finish_run(self, run_id: int, *, status: str, reason: str | None = None,
                   selected_transport: str | None = None, oversubscribed: bool = False,
                   notes: list[str] | None = None, command: str | None = None,
                   stderr_tail: str | None = None, kernel_meta: dict[str, Any] | None = None,
                   provenance: dict[str, Any] | None = None,
                   flags: list[str] | None = None) -> None:
        self.db.execute(
            "UPDATE runs SET status = ?, reason = ?, finished = ?, selected_transport = ?,"
            " oversubscribed = ?, notes = ?, command = ?, stderr_tail = ?, kernel_meta = ?,"
            " provenance = ?, flags = ? WHERE id = ?",
            (status, reason, time.time(), selected_transport, int(oversubscribed),
             json.dumps(notes or []), command, stderr_tail, json.dumps(kernel_meta or {}),
             json.dumps(provenance or {}), json.dumps(flags or []), run_id))
        self.db.commit()

    def add_flag(self, run_id: int, flag: str) -> None:
        row = self.db.execute("SELECT flags FROM runs WHERE id = ?", (run_id,)).fetchone()
        flags = json.loads(row[0] or "[]") if row else []
        if flag not in flags:
            flags.append(flag)
        self.db.execute("UPDATE runs SET flags = ? WHERE id = ?", (json.dumps(flags), run_id))
        self.db.commit()

    def add_note(self, run_id: int, note: str) -> None:
        row = self.db.execute("SELECT notes FROM runs WHERE id = ?", (run_id,)).fetchone()
        notes = json.loads(row[0] or "[]") if row else []
        notes.append(note)
        self.db.execute("UPDATE runs SET notes = ? WHERE id = ?", (json.dumps(notes), run_id))
        self.db.commit()

    def append_samples(self, run_id: int, rec: ResultRecord) -> None:
        """A later batch of one size (adaptive repetition): its samples join the stored
        result of that size, or start one if the size is new."""
        row = self.db.execute("SELECT id FROM results WHERE run_id = ? AND size = ?"
                              " ORDER BY id LIMIT 1", (run_id, rec.size)).fetchone()
        if row is None:
            self.add_result(run_id, rec)
            return
        rid = int(row[0])
        for series in SERIES:
            values = getattr(rec, series)
            if not values:
                continue
            old = self.db.execute("SELECT data FROM samples WHERE result_id = ? AND series = ?",
                                  (rid, series)).fetchone()
            merged = (_unpack(old[0]) if old else []) + list(values)
            self.db.execute("INSERT OR REPLACE INTO samples VALUES (?, ?, ?, ?)",
                            (rid, series, len(merged), _pack(merged)))
        self.db.execute("UPDATE results SET iterations = iterations + ? WHERE id = ?",
                        (rec.iterations, rid))
        self.db.commit()

    def update_result_extra(self, run_id: int, size: int, extra: dict[str, Any]) -> None:
        row = self.db.execute("SELECT id, extra FROM results WHERE run_id = ? AND size = ?"
                              " ORDER BY id LIMIT 1", (run_id, size)).fetchone()
        if row is None:
            return
        merged = {**json.loads(row[1] or "{}"), **extra}
        self.db.execute("UPDATE results SET extra = ? WHERE id = ?",
                        (json.dumps(merged), row[0]))
        self.db.commit()

    _RUN_COLS = ("id, campaign_id, key, kernel, transport, mpi, ranks, launcher, repeat, settings,"
                 " status, reason, started, finished, selected_transport, oversubscribed, notes,"
                 " command, stderr_tail, kernel_meta, provenance, flags")

    def _run_row(self, r: tuple[Any, ...]) -> RunRow:
        return RunRow(
            id=r[0], campaign_id=r[1], key=r[2], kernel=r[3], transport=r[4], mpi=r[5],
            ranks=r[6], launcher=r[7], repeat=r[8], settings=json.loads(r[9]), status=r[10],
            reason=r[11], started=r[12], finished=r[13], selected_transport=r[14],
            oversubscribed=bool(r[15]), notes=json.loads(r[16] or "[]"), command=r[17],
            stderr_tail=r[18], kernel_meta=json.loads(r[19] or "{}"),
            provenance=json.loads(r[20] or "{}"), flags=json.loads(r[21] or "[]"))

    def runs(self, campaign_id: int | None = None, status: str | None = None) -> list[RunRow]:
        sql = f"SELECT {self._RUN_COLS} FROM runs"
        where, args = [], []
        if campaign_id is not None:
            where.append("campaign_id = ?")
            args.append(campaign_id)
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [self._run_row(r) for r in self.db.execute(sql + " ORDER BY id", args)]

    def run(self, run_id: int) -> RunRow:
        r = self.db.execute(f"SELECT {self._RUN_COLS} FROM runs WHERE id = ?",
                            (run_id,)).fetchone()
        if r is None:
            raise KeyError(f"no run {run_id} in {self.path}")
        return self._run_row(r)

    def results(self, run_id: int) -> Iterator[ResultRecord]:
        rows = self.db.execute(
            "SELECT id, size, iterations, warmup, unit, datatype, count, validated,"
            " bytes_per_sample, messages_per_sample, extra FROM results WHERE run_id = ?"
            " ORDER BY size, id", (run_id,)).fetchall()
        kernel = self.run(run_id).kernel
        for r in rows:
            series = {s: _unpack(b) for s, b in self.db.execute(
                "SELECT series, data FROM samples WHERE result_id = ?", (r[0],))}
            yield ResultRecord(
                kernel=kernel, size=r[1], iterations=r[2], warmup=r[3], unit=r[4],
                datatype=r[5] or "", count=r[6] or 0,
                validated=None if r[7] is None else bool(r[7]),
                bytes_per_sample=r[8] or 0.0, messages_per_sample=r[9] or 0.0,
                times=series.get("times", []), times_min=series.get("times_min"),
                times_mean=series.get("times_mean"), extra=json.loads(r[10] or "{}"))
