"""The results store: one SQLite file with one row per run of a grid.

Default file ``<data home>/results/results.sqlite``.  Row columns::

    run_id       stable hash of the run's config (see :func:`imaginebench.sweep.grid.run_id`)
    env, algo, level, data, seed, profile    copied from the config, for filtering
    config       the config as JSON
    status       running | done | failed
    attempts     times the run was started (over every grid that ran it)
    score        JSON: level -> score of the finished run (mean of its last checkpoints)
    normalised   JSON: level -> normalised score, where the record has one
    record_path  the run's record.json
    error        the last failure: one line, then the traceback
    started_at, finished_at   ISO 8601, UTC: start of the last attempt, end of the run
    wall_time_s  the run's wall time as its record gives it (``timing.wall_time_s``)
    host         the machine of the last attempt
    owner        the grid running it now (``host:pid:token``), while it is running
    heartbeat_at when that grid last said it is still running it (Unix time)

The file is opened in WAL mode with a busy timeout and every write is one ``BEGIN IMMEDIATE``
transaction, so several grids (processes) may write to one store at once.  A file that is not
a results store is never changed: opening it raises ``ValueError`` naming it.

Two grids that share runs do not both train them: a grid claims a run with its owner id and
renews the claim (:meth:`ResultsStore.heartbeat`) while the run trains; another grid's claim
of that run is refused while the lease is alive — until ``lease_s`` passes without a heartbeat,
or at once when the owner is a process of this machine that no longer exists (a killed grid).
"""

from __future__ import annotations

import json
import os
import socket
import time
import sqlite3
import traceback
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping

from imaginebench.config import data_home

STORE_SCHEMA_VERSION = 2
LEASE_S = 60.0
"""Seconds a claim stays alive without a heartbeat (grids renew it every few seconds)."""
STATUSES = ("running", "done", "failed")
BUSY_TIMEOUT_S = 30.0
CONFIG_COLUMNS = ("env", "algo", "level", "data", "seed", "profile")
JSON_COLUMNS = ("config", "score", "normalised")
COLUMNS = ("run_id", *CONFIG_COLUMNS, "config", "status", "attempts", "score", "normalised", "record_path", "error",
           "started_at", "finished_at", "wall_time_s", "host", "owner", "heartbeat_at")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY,
        env TEXT NOT NULL, algo TEXT NOT NULL, level TEXT NOT NULL, data TEXT NOT NULL,
        seed INTEGER NOT NULL, profile TEXT NOT NULL,
        config TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        score TEXT, normalised TEXT, record_path TEXT, error TEXT,
        started_at TEXT, finished_at TEXT, wall_time_s REAL, host TEXT, owner TEXT, heartbeat_at REAL)""",
    "CREATE INDEX IF NOT EXISTS runs_status ON runs (status)",
)


def default_store_path() -> Path:
    """``<data home>/results/results.sqlite``."""
    return data_home() / "results" / "results.sqlite"


def now() -> str:
    """The current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def owner_id() -> str:
    """An id for one grid (driver process): ``host:pid:token``."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


def lease_alive(owner: str | None, heartbeat_at: float | None, lease_s: float = LEASE_S) -> bool:
    """Whether the grid ``owner`` still holds its run: a heartbeat within ``lease_s`` seconds, and,
    when the owner is a process of this machine, that process still exists."""
    if owner is None or heartbeat_at is None or time.time() - float(heartbeat_at) > lease_s:
        return False
    host, _, rest = owner.partition(":")
    if host == socket.gethostname():
        try:
            os.kill(int(rest.partition(":")[0]), 0)
        except ProcessLookupError:
            return False
        except (PermissionError, ValueError):
            return True
    return True


def error_text(exc: BaseException) -> str:
    """``"Type: message"`` on the first line, then the traceback."""
    first = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    return first + "\n" + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


class ResultsStore:
    """Status and scores of every run of the benchmark grid, in one SQLite file.

    Args:
        path: the database file (default :func:`default_store_path`); created if absent.
        timeout_s: how long a write waits for another writer before giving up.
    """

    def __init__(self, path: str | Path | None = None, *, timeout_s: float = BUSY_TIMEOUT_S) -> None:
        self.path = Path(path).expanduser() if path is not None else default_store_path()
        if self.path.is_dir():
            raise ValueError(f"Results store {self.path} is a folder; give the path of a file (e.g. "
                             f"{self.path / 'results.sqlite'}).")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(str(self.path), timeout=timeout_s, isolation_level=None)
        except sqlite3.Error as exc:
            raise ValueError(f"Cannot open results store {self.path} ({exc}).") from None
        try:
            self._open(timeout_s)
        except BaseException:
            self._conn.close()
            raise

    def _open(self, timeout_s: float) -> None:
        # read before anything writes: a file that is not a database fails here, untouched
        with self._guard():
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and not {"meta", "runs"} <= tables:
            raise ValueError(f"{self.path} is an SQLite database but not an imaginebench results store (its tables: "
                             f"{', '.join(sorted(tables))}); it was left as it is. Pass another --store path.")
        with self._guard():
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
        with self._write() as db:
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                       (str(STORE_SCHEMA_VERSION),))
            found = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
            if found == "1":  # schema 1 had no leases: add their columns
                db.execute("ALTER TABLE runs ADD COLUMN owner TEXT")
                db.execute("ALTER TABLE runs ADD COLUMN heartbeat_at REAL")
                db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(STORE_SCHEMA_VERSION),))
                found = str(STORE_SCHEMA_VERSION)
        if found != str(STORE_SCHEMA_VERSION):
            raise ValueError(f"{self.path} is a results store of schema {found}; this version of imaginebench reads "
                             f"schema {STORE_SCHEMA_VERSION}. Pass another --store path.")

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Turn SQLite errors into one-line ``ValueError``s naming the file."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise ValueError(f"Results store {self.path} stayed locked by another writer ({exc}); try again.") \
                    from None
            raise self._damaged(exc) from None
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None

    def _damaged(self, exc: Exception) -> ValueError:
        return ValueError(f"Results store {self.path} is not a readable SQLite results store ({exc}); it was left "
                          f"as it is. Move it aside (or restore a backup) and run again, or pass another --store path.")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: takes the write lock up front)."""
        with self._guard():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.path)!r})"

    # ------------------------------------------------------------------ writes
    def claim(self, run_id: str, config: Mapping[str, Any], host: str | None = None, owner: str | None = None,
              lease_s: float = LEASE_S) -> bool:
        """Mark ``run_id`` running (one more attempt) unless it is done or another grid holds it.

        Returns ``False`` (and changes nothing) for a run that is ``done``, or that is
        ``running`` under another ``owner`` whose lease is alive (see :meth:`lease_alive`);
        :meth:`get` tells which.  Without ``owner`` the claim takes no lease (and respects none).
        ``config`` must hold ``env, algo, level, data, seed, profile``.
        """
        missing = [c for c in CONFIG_COLUMNS if c not in config]
        if missing:
            raise ValueError(f"A run config needs {', '.join(missing)}; got keys {', '.join(sorted(config))}.")
        with self._write() as db:
            row = db.execute("SELECT status, owner, heartbeat_at FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is not None and row[0] == "done":
                return False
            if (owner is not None and row is not None and row[0] == "running" and row[1] not in (None, owner)
                    and lease_alive(row[1], row[2], lease_s)):
                return False
            values = (now(), host or socket.gethostname(), owner, time.time() if owner else None)
            if row is None:
                db.execute(f"INSERT INTO runs (run_id, {', '.join(CONFIG_COLUMNS)}, config, status, attempts, "
                           f"started_at, host, owner, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', 1, "
                           f"?, ?, ?, ?)",
                           (run_id, *(config[c] for c in CONFIG_COLUMNS), json.dumps(config, sort_keys=True),
                            *values))
            else:
                db.execute("UPDATE runs SET status = 'running', attempts = attempts + 1, started_at = ?, host = ?, "
                           "owner = ?, heartbeat_at = ?, finished_at = NULL, wall_time_s = NULL WHERE run_id = ?",
                           (*values, run_id))
        return True

    def heartbeat(self, run_ids: Any, owner: str) -> int:
        """Renew ``owner``'s lease on ``run_ids`` (those it still holds); returns how many."""
        ids = list(run_ids)
        if not ids:
            return 0
        with self._write() as db:
            cur = db.execute(f"UPDATE runs SET heartbeat_at = ? WHERE status = 'running' AND owner = ? AND run_id IN "
                             f"({', '.join('?' * len(ids))})", (time.time(), owner, *ids))
        return int(cur.rowcount)

    def finish(self, run_id: str, record: Mapping[str, Any], *, record_path: str | Path | None = None,
               host: str | None = None, started_at: str | None = None) -> None:
        """Mark ``run_id`` done with ``record``'s scores (``score``, ``normalised``, ``timing``)."""
        timing = record.get("timing") or {}
        normalised = record.get("normalised")
        self._update(run_id, status="done", score=json.dumps(record["score"]), owner=None, heartbeat_at=None,
                     normalised=None if normalised is None else json.dumps(normalised),
                     record_path=None if record_path is None else str(record_path), error=None,
                     finished_at=now(), wall_time_s=timing.get("wall_time_s"),
                     **({"host": host} if host else {}), **({"started_at": started_at} if started_at else {}))

    def fail(self, run_id: str, error: str | BaseException, *, host: str | None = None) -> None:
        """Mark ``run_id`` failed with ``error`` (text, or an exception: its line and traceback)."""
        text = error_text(error) if isinstance(error, BaseException) else str(error)
        self._update(run_id, status="failed", error=text, finished_at=now(), owner=None, heartbeat_at=None,
                     **({"host": host} if host else {}))

    def _update(self, run_id: str, **values: Any) -> None:
        sets = ", ".join(f"{k} = ?" for k in values)
        with self._write() as db:
            cur = db.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", (*values.values(), run_id))
            if cur.rowcount != 1:
                raise KeyError(f"No run {run_id!r} in results store {self.path}; claim it first.")

    # ------------------------------------------------------------------ reads
    def get(self, run_id: str) -> dict[str, Any] | None:
        """The row of ``run_id`` (JSON columns decoded), or ``None``."""
        rows = self._select("WHERE run_id = ?", (run_id,))
        return rows[0] if rows else None

    def rows(self, **filters: Any) -> list[dict[str, Any]]:
        """Rows whose columns equal ``filters`` (a list or tuple value matches any of its items),
        e.g. ``rows(status="done", env="CLEVR-v0")``; sorted by env, algo, level, data, seed."""
        unknown = sorted(set(filters) - set(COLUMNS) - set(JSON_COLUMNS))
        if unknown or set(filters) & set(JSON_COLUMNS):
            bad = unknown or sorted(set(filters) & set(JSON_COLUMNS))
            raise ValueError(f"Cannot filter results on {', '.join(bad)}; filter on: "
                             f"{', '.join(c for c in COLUMNS if c not in JSON_COLUMNS)}.")
        clauses, params = [], []
        for key, value in filters.items():
            if isinstance(value, (list, tuple, set, frozenset)):
                values = list(value)
                clauses.append(f"{key} IN ({', '.join('?' * len(values))})" if values else "0")
                params.extend(values)
            else:
                clauses.append(f"{key} = ?")
                params.append(value)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        return self._select(where + " ORDER BY env, algo, level, data, seed, run_id", tuple(params))

    def done_ids(self) -> set[str]:
        """Ids of the finished runs."""
        with self._guard():
            return {r[0] for r in self._conn.execute("SELECT run_id FROM runs WHERE status = 'done'")}

    def counts(self) -> dict[str, int]:
        """Rows per status."""
        with self._guard():
            found = dict(self._conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
        return {s: int(found.get(s, 0)) for s in STATUSES}

    def _select(self, tail: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        with self._guard():
            cursor = self._conn.execute(f"SELECT {', '.join(COLUMNS)} FROM runs {tail}", params)
            rows = cursor.fetchall()
        out = []
        for values in rows:
            row = dict(zip(COLUMNS, values))
            for key in JSON_COLUMNS:
                if row[key] is not None:
                    row[key] = json.loads(row[key])
            out.append(row)
        return out
