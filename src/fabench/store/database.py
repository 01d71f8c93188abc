"""The result store: one SQLite file per results directory.

SQLite rather than DuckDB: it ships with Python (no extra dependency on a cluster login node),
its transactions make every finished run durable the moment it is committed (a crash or Ctrl-C
loses at most the run in flight), and the data are small (a campaign is megabytes). Samples are
stored as packed float64 blobs: one row per (result, series), not one row per iteration.

Layout, versions and migrations: store/schema.py. Checking a store: store/check.py. Rows are
read by column name, never by position, so a column added by a migration moves nothing.
"""

import datetime
import glob
import json
import sqlite3
import sys
import time
import weakref
import zlib
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FabenchError, StoreDamagedError, StoreError
from ..host.process_identity import ProcessOwner
from ..records import SERIES, ResultRecord
from ..util.interrupts import enter_critical, leave_critical
from . import postgres
from .schema import (
    SCHEMA_VERSION,
    MigrationDone,
    copy_database,
    prepare,
    schema_columns,
    table_columns,
)


class NoSuchRunError(FabenchError, KeyError):
    """A run id the store does not hold: the user's word, said as an error (a KeyError too,
    for the callers that look a run up and go on without it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "no such run"


__all__ = ["SCHEMA_VERSION", "CampaignRow", "RunRow", "Store", "backup_path",
           "damaged_message", "json_field", "pack_floats", "unpack_floats"]

RUN_STATUSES = ("running", "ok", "failed", "skipped", "interrupted")
# A campaign ends as its runs did; "finished with N failed" is the one status with a number.
CAMPAIGN_STATUSES = ("running", "finished", "interrupted", "failed", "skipped")

# SQLite's primary result codes (sqlite3.h) that mean the file itself is not sound.
_DAMAGE_CODES = {10: "I/O error", 11: "corrupt", 26: "not a database"}
_BUSY_CODES = {5, 6}


# Samples as packed float64 blobs (and JSON columns) for every table, the store's own and
# those a feature keeps in it (matrix/stored.py).
def pack_floats(values: list[float]) -> bytes:
    return array("d", values).tobytes()


def unpack_floats(blob: bytes) -> list[float]:
    a = array("d")
    a.frombytes(blob)
    return a.tolist()


def _samples(row: sqlite3.Row, where: str, path: Path) -> list[float]:
    """One stored series, refused when its bytes are not what was written: a report must not
    show numbers from a flipped bit. Blobs from before schema 2 carry no CRC."""
    blob = row["data"]
    crc = row["crc32"]
    if not isinstance(blob, bytes) or len(blob) % 8 or len(blob) // 8 != row["n"] or (
            crc is not None and zlib.crc32(blob) != crc):
        raise StoreDamagedError(damaged_message(
            path, f"the {row['series']} samples of {where} do not match the count or checksum "
                  "written with them"))
    return unpack_floats(blob)


def backup_path(store: Path) -> Path:
    """The copy fabench refreshes at the start of each campaign, once the store checks sound."""
    return store.with_name(store.name + ".bak")


def _backups(store: Path) -> list[Path]:
    found = [p for p in store.parent.glob(glob.escape(store.name) + ".*bak") if p.is_file()]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def damaged_message(store: Path | str, what: str) -> str:
    lines = [f"the store {store} is damaged: {what}.",
             f"  see what is wrong: fabench store check --store {store}"]
    if not isinstance(store, Path):  # a server's store: its own backups, not files beside it
        return "\n".join(lines)
    backups = _backups(store)
    for b in backups:
        when = datetime.datetime.fromtimestamp(b.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
        lines.append(f"  backup: {b} (written {when})")
    if backups:
        lines.append("  to go on from a backup: move the damaged file (and any -wal beside it) "
                     "aside, then copy the backup to its name; runs since the backup are lost")
    else:
        lines.append(f"  no backup of it exists (fabench writes {backup_path(store).name} at "
                     "the start of each campaign once the store checks sound)")
    return "\n".join(lines)


def _translate(exc: sqlite3.Error, path: Path) -> StoreError:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    text = str(exc) or type(exc).__name__
    if code in _DAMAGE_CODES or text in ("file is not a database",
                                         "database disk image is malformed"):
        return StoreDamagedError(damaged_message(path, text))
    if code in _BUSY_CODES:
        return StoreError(f"the store {path} is busy ({text}): another process holds it "
                          "locked; try again when it is done")
    return StoreError(f"the store {path}: {text}")


@contextmanager
def _guard(path: Path) -> Iterator[None]:
    """SQLite's errors as one message naming the file, not a traceback. Programming errors
    (wrong SQL, wrong parameters) stay exceptions: they are fabench's bugs, not the file's.
    A signal during the statement is raised after it (util.interrupts.enter_critical)."""
    enter_critical()
    try:
        yield
    except (sqlite3.ProgrammingError, sqlite3.NotSupportedError, sqlite3.InterfaceError):
        raise
    except sqlite3.Error as exc:
        raise _translate(exc, path) from exc
    finally:
        leave_critical()


class _Cursor(sqlite3.Cursor):
    """Fetching can meet a damaged page as well as executing: both go through the guard."""

    def _path(self) -> Path:
        return getattr(self.connection, "store_path", Path("?"))

    def execute(self, sql: str, parameters: Any = (), /) -> "_Cursor":
        with _guard(self._path()):
            super().execute(sql, parameters)
        return self

    def fetchone(self) -> Any:
        with _guard(self._path()):
            return super().fetchone()

    def fetchall(self) -> list[Any]:
        with _guard(self._path()):
            return super().fetchall()

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> "_Cursor":
        with _guard(self._path()):
            super().executemany(sql, seq_of_parameters)
        return self

    def fetchmany(self, size: int | None = None) -> list[Any]:
        with _guard(self._path()):
            return super().fetchmany(self.arraysize if size is None else size)

    def __next__(self) -> Any:
        with _guard(self._path()):
            return super().__next__()


class _Connection(sqlite3.Connection):
    store_path: Path
    deferred = False  # inside Store.transaction(): the writes commit together at its end

    def cursor(self, factory: Any = None) -> Any:
        c = super().cursor(factory or _Cursor)
        if not hasattr(self, "live_cursors"):
            self.live_cursors: weakref.WeakSet[Any] = weakref.WeakSet()
        self.live_cursors.add(c)
        return c

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> Any:
        return self.cursor().executemany(sql, seq_of_parameters)

    def executescript(self, script: str, /) -> Any:
        with _guard(self.store_path):
            return super().executescript(script)

    def commit(self) -> None:
        if self.deferred:
            return
        with _guard(self.store_path):
            try:
                super().commit()
            except sqlite3.OperationalError as exc:
                if "statements in progress" not in str(exc):
                    raise
                # A loop over rows left by an exception (a signal between two rows) keeps
                # its statement open while the traceback holds the cursor; nothing reads it
                # any more: close those, then commit (the run is marked interrupted, not a
                # store error).
                for c in list(getattr(self, "live_cursors", ())):
                    c.close()
                super().commit()


def json_field(value: Any, default: Any, what: str) -> Any:
    """A JSON column, its damage said as a store error naming `what`."""
    if value is None or value == "":
        return default
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        raise StoreError(f"{what} is not JSON ({str(value)[:60]!r}); `fabench store check` "
                         "lists every damaged row") from None


def _owner(value: Any) -> ProcessOwner | None:
    """Who wrote a row is bookkeeping: an unreadable owner is unknown, never an error."""
    try:
        return ProcessOwner.from_json(json.loads(value)) if value else None
    except (TypeError, ValueError):
        return None


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
    owner: ProcessOwner | None = None

    @property
    def label(self) -> str:
        return f"{self.kernel} {self.transport} np={self.ranks} ({self.mpi})"

    @classmethod
    def from_row(cls, r: sqlite3.Row) -> "RunRow":
        what = f"run {r['id']}"
        return cls(
            id=r["id"], campaign_id=r["campaign_id"], key=r["key"], kernel=r["kernel"],
            transport=r["transport"], mpi=r["mpi"], ranks=r["ranks"], launcher=r["launcher"],
            repeat=r["repeat"], settings=json_field(r["settings"], {}, f"{what} settings"),
            status=r["status"], reason=r["reason"], started=r["started"],
            finished=r["finished"], selected_transport=r["selected_transport"],
            oversubscribed=bool(r["oversubscribed"]),
            notes=json_field(r["notes"], [], f"{what} notes"), command=r["command"],
            stderr_tail=r["stderr_tail"],
            kernel_meta=json_field(r["kernel_meta"], {}, f"{what} kernel_meta"),
            provenance=json_field(r["provenance"], {}, f"{what} provenance"),
            flags=json_field(r["flags"], [], f"{what} flags"),
            owner=_owner(r["owner"]))


@dataclass
class CampaignRow:
    id: int
    name: str
    spec: dict[str, Any]
    started: float
    finished: float | None
    status: str
    provenance: dict[str, Any]
    owner: ProcessOwner | None

    @classmethod
    def from_row(cls, r: sqlite3.Row) -> "CampaignRow":
        what = f"campaign {r['id']}"
        return cls(id=r["id"], name=r["name"], spec=json_field(r["spec"], {}, f"{what} spec"),
                   started=r["started"], finished=r["finished"], status=r["status"],
                   provenance=json_field(r["provenance"], {}, f"{what} provenance"),
                   owner=_owner(r["owner"]))


class Store:
    """Campaigns, runs, results and samples in one file. Every write commits at once.

    Opening a store makes it if absent, migrates an older one (keeping a copy first), refuses
    a newer one, and marks `interrupted` the runs a dead fabench left `running`."""

    def __init__(self, path: str | Path) -> None:
        self.migration: MigrationDone | None = None
        self.recovered: list[str] = []
        self._owner = ProcessOwner.current()
        self.backend = "postgresql" if postgres.is_url(path) else "sqlite"
        if self.backend == "postgresql":
            self._open_postgresql(str(path))
            return
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot make the directory of the store {self.path}: "
                             f"{exc.strerror}") from None
        if self.path.is_dir():
            raise StoreError(f"the store {self.path} is a directory, not a file")
        with _guard(self.path):
            db = sqlite3.connect(str(self.path), factory=_Connection)
        assert isinstance(db, _Connection)
        db.store_path = self.path
        db.row_factory = sqlite3.Row
        self.db = db
        try:
            db.execute("PRAGMA foreign_keys = ON")
            # WAL: a crash mid-write leaves the last commit whole (the log is replayed or
            # dropped on the next open), and readers (a report on a live campaign) do not
            # block the writer. FULL: a committed run survives a power cut too.
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            self.wal = str(mode).lower() == "wal"
            db.execute("PRAGMA synchronous = FULL")
            db.execute("PRAGMA wal_autocheckpoint = 1000")
            with _guard(self.path):
                self.migration = prepare(db, self.path)
            self.recovered = self.recover_abandoned()
        except BaseException:
            db.close()
            raise
        # Said once, on stderr: a new file appeared beside the store, rows changed status.
        if self.migration is not None:
            m = self.migration
            print(f"fabench: migrated the store {self.path} from schema version "
                  f"{m.from_version} to {m.to_version}; the store as it was: {m.backup}",
                  file=sys.stderr)
        for line in self.recovered:
            print(f"fabench: {self.path}: marked {line}", file=sys.stderr)

    def _open_postgresql(self, url: str) -> None:
        """A store on a PostgreSQL server (store/postgres.py): same tables, same queries."""
        db = postgres.PgConnection(url)
        # Store's code is written once against the sqlite3 interface, which PgConnection
        # provides; the type says so rather than a second copy of every query.
        self.db = db  # type: ignore[assignment]
        self.path = db.store_path  # type: ignore[assignment]
        self.wal = False
        try:
            done = postgres.prepare(db)
            if done is not None:
                print(f"fabench: migrated the store {self.path} from schema version {done[0]} "
                      f"to {done[1]}", file=sys.stderr)
            self.recovered = self.recover_abandoned()
        except BaseException:
            db.close()
            raise
        for line in self.recovered:
            print(f"fabench: {self.path}: marked {line}", file=sys.stderr)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Every write inside commits at its end, or none does: an import that fails half
        way leaves the store as it was."""
        if self.db.deferred:
            yield
            return
        self.db.deferred = True
        try:
            yield
        except BaseException:
            self.db.deferred = False
            self.db.rollback()
            raise
        self.db.deferred = False
        self.db.commit()
        self.checkpoint()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- health ------------------------------------------------------------------------------
    def checkpoint(self) -> None:
        """Copy the write-ahead log into the database file. After each run, so the .sqlite
        alone holds every finished run (a copy made without its -wal loses only the run in
        flight), and the log stays short. PASSIVE: never waits for a reader."""
        if self.wal and not self.db.in_transaction:  # inside one, at its end (transaction())
            self.db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def check_health(self) -> None:
        """SQLite's quick structural check and the foreign keys; raises with the damaged-store
        message. Before anything is run into the store. PostgreSQL checks its own pages and
        enforces the foreign keys on every write: there, a query that answers is the check."""
        if self.backend == "postgresql":
            self.db.execute("SELECT count(*) FROM meta").fetchall()
            self.db.commit()
            return
        bad = [str(r[0]) for r in self.db.execute("PRAGMA quick_check(5)")]
        if bad != ["ok"]:
            raise StoreDamagedError(damaged_message(self.path, "; ".join(bad)[:300]))
        orphans = self.db.execute("PRAGMA foreign_key_check").fetchall()
        if orphans:
            r = orphans[0]
            raise StoreDamagedError(damaged_message(
                self.path, f"{len(orphans)} row(s) refer to rows that do not exist (first: "
                           f"{r[0]} row {r[1]} -> {r[2]})"))
        self._check_tables()
        self._check_blobs()

    def _check_tables(self) -> None:
        """Every table and column of the schema is there (a dropped `samples` table is
        found here, before a run measures anything it then cannot store)."""
        have = table_columns(self.db)
        for table, cols in schema_columns(SCHEMA_VERSION).items():
            if table not in have:
                raise StoreDamagedError(damaged_message(self.path,
                                                        f"table `{table}` is missing"))
            lacking = [c for c in cols if c not in have[table]]
            if lacking:
                raise StoreDamagedError(damaged_message(
                    self.path, f"table `{table}` lacks {', '.join(lacking)}"))

    def _check_blobs(self) -> None:
        """Each sample blob holds the count it claims and the bytes its CRC-32 was taken of:
        SQLite's own check cannot see a changed byte inside a value."""
        for r in self.db.execute("SELECT result_id, series, n, data, crc32 FROM samples"):
            data = r["data"]
            if (not isinstance(data, bytes) or len(data) != 8 * (r["n"] or 0)
                    or (r["crc32"] is not None and zlib.crc32(data) != r["crc32"])):
                raise StoreDamagedError(damaged_message(
                    self.path, f"the {r['series']} samples of result {r['result_id']} are "
                               "not the bytes that were written"))
        for r in self.db.execute("SELECT id, latency, latency_crc32, bandwidth, "
                                 "bandwidth_crc32 FROM matrix_pairs"):
            for col in ("latency", "bandwidth"):
                data = r[col]
                if not isinstance(data, bytes) or zlib.crc32(data) != r[f"{col}_crc32"]:
                    raise StoreDamagedError(damaged_message(
                        self.path, f"the {col} samples of matrix pair {r['id']} are not the "
                                   "bytes that were written"))

    def refresh_backup(self) -> Path | None:
        """Replace `<store>.bak` with a copy of the store as it is now; only a store that
        passed check_health() is copied, so a damaged file never replaces a sound backup.
        Inside a transaction with writes pending, the backup made before them stands."""
        if self.backend == "postgresql":  # the server's own backups (pg_dump, WAL archive)
            return None
        target = backup_path(self.path)
        if self.db.in_transaction:
            return target
        self.check_health()
        with _guard(self.path):
            copy_database(self.path, target)
        return target

    def recover_abandoned(self) -> list[str]:
        """Runs and campaigns left `running` by a fabench that is gone (its pid ended, or the
        pid now names another process, or the host rebooted) become `interrupted`. Rows from
        another host or PID namespace, or with no owner recorded, are left: nothing here can
        tell whether their writer still runs."""
        marked = []
        for table, what in (("runs", "run"), ("campaigns", "campaign")):
            rows = self.db.execute(
                f"SELECT id, owner FROM {table} WHERE status = 'running'").fetchall()
            for r in rows:
                owner = _owner(r["owner"])
                if owner is None or owner.alive() is not False:
                    continue
                reason = (f"fabench ({owner.describe()}) ended without finishing this {what} "
                          f"(killed, or its host went down); found by pid {self._owner.pid}")
                if table == "runs":
                    self.db.execute("UPDATE runs SET status = 'interrupted', reason = ? "
                                    "WHERE id = ? AND status = 'running'", (reason, r["id"]))
                else:
                    self.db.execute("UPDATE campaigns SET status = 'interrupted' "
                                    "WHERE id = ? AND status = 'running'", (r["id"],))
                marked.append(f"{what} {r['id']} interrupted: {reason}")
        if marked:
            self.db.commit()
        return marked

    # -- campaigns ---------------------------------------------------------------------------
    def begin_campaign(self, name: str, spec: dict[str, Any],
                       provenance: dict[str, Any] | None = None) -> int:
        self.refresh_backup()
        cur = self.db.execute(
            "INSERT INTO campaigns (name, spec, started, status, provenance, owner) "
            "VALUES (?, ?, ?, 'running', ?, ?)",
            (name, json.dumps(spec), time.time(), json.dumps(provenance or {}),
             json.dumps(self._owner.to_json())))
        self.db.commit()
        return int(cur.lastrowid or 0)

    def end_campaign(self, campaign_id: int, status: str) -> None:
        self.db.execute("UPDATE campaigns SET finished = ?, status = ? WHERE id = ?",
                        (time.time(), status, campaign_id))
        self.db.commit()
        self.checkpoint()

    def campaigns(self) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT * FROM campaigns ORDER BY id")
        out = []
        for r in rows:
            c = CampaignRow.from_row(r)
            out.append(dict(id=c.id, name=c.name, started=c.started, finished=c.finished,
                            status=c.status, spec=c.spec))
        return out

    def campaign(self, campaign_id: int) -> CampaignRow:
        r = self.db.execute("SELECT * FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
        if r is None:
            raise FabenchError(f"no campaign {campaign_id} in {self.path}")
        return CampaignRow.from_row(r)

    def latest_campaign(self) -> int | None:
        row = self.db.execute("SELECT max(id) AS id FROM campaigns").fetchone()
        return int(row["id"]) if row and row["id"] is not None else None

    def unfinished_campaign(self, *, id: int | None = None,
                            name: str | None = None) -> CampaignRow:
        """The campaign `run --resume` finishes: campaign `id`, or else the newest one named
        `name` (any name if None). Checks the store first, so nothing runs into a damaged
        one. Refuses a finished campaign and one a live fabench is still running."""
        self.check_health()
        if id is not None:
            c = self.campaign(id)
            if name is not None and c.name != name:
                raise FabenchError(f"campaign {id} in {self.path} is {c.name!r}, not "
                                   f"{name!r}: resume it with the spec it ran")
        else:
            # the newest one not finished: a later campaign of the same name that finished
            # does not hide an older one that was cut short
            where = " WHERE status NOT LIKE 'finished%'"
            rows = self.db.execute(
                "SELECT * FROM campaigns" + where + (" AND name = ?" if name is not None
                                                     else "")
                + " ORDER BY id DESC LIMIT 1", (() if name is None else (name,))).fetchone()
            if rows is None:
                rows = self.db.execute(
                    "SELECT * FROM campaigns" + (" WHERE name = ?" if name is not None else "")
                    + " ORDER BY id DESC LIMIT 1", (() if name is None else (name,))).fetchone()
            if rows is None:
                raise FabenchError(f"no campaign{f' named {name!r}' if name else ''} in "
                                   f"{self.path} to resume")
            c = CampaignRow.from_row(rows)
        if c.status.startswith("finished"):
            raise FabenchError(f"campaign {c.name!r} (#{c.id}) already finished; nothing to "
                               "resume")
        if c.status == "running" and c.owner is not None and c.owner.alive():
            raise FabenchError(f"campaign {c.name!r} (#{c.id}) is being run now by fabench "
                               f"{c.owner.describe()}; let it finish or stop it first")
        return c

    def reopen_campaign(self, campaign_id: int) -> None:
        """A resumed campaign is `running` again, owned by this process."""
        self.db.execute("UPDATE campaigns SET status = 'running', finished = NULL, owner = ? "
                        "WHERE id = ?", (json.dumps(self._owner.to_json()), campaign_id))
        self.db.commit()

    def completed_keys(self, campaign_id: int) -> set[str]:
        rows = self.db.execute(
            "SELECT key FROM runs WHERE campaign_id = ? AND status IN ('ok', 'skipped')",
            (campaign_id,))
        return {r["key"] for r in rows}

    # -- runs --------------------------------------------------------------------------------
    def begin_run(self, *, campaign_id: int | None, key: str, kernel: str, transport: str,
                  mpi: str, ranks: int, launcher: str, repeat: int,
                  settings: dict[str, Any]) -> int:
        cur = self.db.execute(
            "INSERT INTO runs (campaign_id, key, kernel, transport, mpi, ranks, launcher, repeat,"
            " settings, status, started, owner)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?)",
            (campaign_id, key, kernel, transport, mpi, ranks, launcher, repeat,
             json.dumps(settings), time.time(), json.dumps(self._owner.to_json())))
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
                blob = pack_floats(values)
                self.db.execute("INSERT INTO samples (result_id, series, n, data, crc32)"
                                " VALUES (?, ?, ?, ?, ?)",
                                (rid, series, len(values), blob, zlib.crc32(blob)))
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
        self.checkpoint()

    def add_flag(self, run_id: int, flag: str) -> None:
        row = self.db.execute("SELECT flags FROM runs WHERE id = ?", (run_id,)).fetchone()
        flags = json_field(row["flags"], [], f"run {run_id} flags") if row else []
        if flag not in flags:
            flags.append(flag)
        self.db.execute("UPDATE runs SET flags = ? WHERE id = ?", (json.dumps(flags), run_id))
        self.db.commit()

    def add_note(self, run_id: int, note: str) -> None:
        row = self.db.execute("SELECT notes FROM runs WHERE id = ?", (run_id,)).fetchone()
        notes = json_field(row["notes"], [], f"run {run_id} notes") if row else []
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
        rid = int(row["id"])
        for series in SERIES:
            values = getattr(rec, series)
            if not values:
                continue
            old = self.db.execute("SELECT * FROM samples WHERE result_id = ? AND series = ?",
                                  (rid, series)).fetchone()
            merged = (_samples(old, f"result {rid}", self.path) if old else []) + list(values)
            blob = pack_floats(merged)
            self.db.execute("INSERT OR REPLACE INTO samples (result_id, series, n, data, crc32)"
                            " VALUES (?, ?, ?, ?, ?)",
                            (rid, series, len(merged), blob, zlib.crc32(blob)))
        self.db.execute("UPDATE results SET iterations = iterations + ? WHERE id = ?",
                        (rec.iterations, rid))
        self.db.commit()

    def update_result_extra(self, run_id: int, size: int, extra: dict[str, Any]) -> None:
        row = self.db.execute("SELECT id, extra FROM results WHERE run_id = ? AND size = ?"
                              " ORDER BY id LIMIT 1", (run_id, size)).fetchone()
        if row is None:
            return
        merged = {**json_field(row["extra"], {}, f"result {row['id']} extra"), **extra}
        self.db.execute("UPDATE results SET extra = ? WHERE id = ?",
                        (json.dumps(merged), row["id"]))
        self.db.commit()

    def runs(self, campaign_id: int | None = None, status: str | None = None) -> list[RunRow]:
        sql = "SELECT * FROM runs"
        where, args = [], []
        if campaign_id is not None:
            where.append("campaign_id = ?")
            args.append(campaign_id)
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [RunRow.from_row(r) for r in self.db.execute(sql + " ORDER BY id", args)]

    def run(self, run_id: int) -> RunRow:
        r = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if r is None:
            raise NoSuchRunError(f"no run {run_id} in {self.path}")
        return RunRow.from_row(r)

    def results(self, run_id: int) -> Iterator[ResultRecord]:
        rows = self.db.execute("SELECT * FROM results WHERE run_id = ? ORDER BY size, id",
                               (run_id,)).fetchall()
        kernel = self.run(run_id).kernel
        for r in rows:
            series = {s["series"]: _samples(s, f"run {run_id} size {r['size']}",
                                               self.path)
                      for s in self.db.execute("SELECT * FROM samples WHERE result_id = ?",
                                               (r["id"],))}
            yield ResultRecord(
                kernel=kernel, size=r["size"], iterations=r["iterations"],
                warmup=r["warmup"], unit=r["unit"], datatype=r["datatype"] or "",
                count=r["count"] or 0,
                validated=None if r["validated"] is None else bool(r["validated"]),
                bytes_per_sample=r["bytes_per_sample"] or 0.0,
                messages_per_sample=r["messages_per_sample"] or 0.0,
                times=series.get("times", []), times_min=series.get("times_min"),
                times_mean=series.get("times_mean"),
                extra=json_field(r["extra"], {}, f"result {r['id']} extra"))
