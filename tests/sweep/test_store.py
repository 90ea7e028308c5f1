"""The results store: round trip, resume bookkeeping, concurrent writers, damaged files."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from imaginebench.sweep.store import ResultsStore, default_store_path
from tests.sweep.store_writer import write_runs

CONFIG = {"env": "Toy-v0", "algo": "discrete_bc", "level": "easy", "data": "real", "seed": 3, "profile": "tiny",
          "settings": {"steps": 40}}
RECORD = {"score": {"train": 0.5, "easy": 0.25}, "normalised": {"train": 40.0, "easy": None},
          "timing": {"wall_time_s": 1.5}}


def test_round_trip(data_home):
    store = ResultsStore()
    assert store.path == default_store_path() == data_home / "results/results.sqlite"
    assert store.get("abc") is None and store.rows() == [] and store.done_ids() == set()
    assert store.claim("abc", CONFIG, host="node1")
    row = store.get("abc")
    assert row["status"] == "running" and row["attempts"] == 1 and row["host"] == "node1"
    assert row["config"] == CONFIG and row["seed"] == 3 and row["started_at"] and row["finished_at"] is None
    store.finish("abc", RECORD, record_path="/runs/abc/record.json", started_at="2026-01-01T00:00:00+00:00")
    store.close()

    with ResultsStore(data_home / "results/results.sqlite") as again:  # persisted
        row = again.get("abc")
        assert row["status"] == "done" and row["score"] == RECORD["score"] and row["normalised"] == RECORD["normalised"]
        assert row["record_path"] == "/runs/abc/record.json" and row["wall_time_s"] == 1.5 and row["error"] is None
        assert row["started_at"] == "2026-01-01T00:00:00+00:00" and row["finished_at"] > row["started_at"]
        assert again.done_ids() == {"abc"} and again.counts() == {"running": 0, "done": 1, "failed": 0}
        assert again.claim("xyz", {**CONFIG, "env": "ToyCont-v0"})
        again.fail("xyz", "FileNotFoundError: no data\nTraceback ...")
        assert [r["run_id"] for r in again.rows(status="done")] == ["abc"]
        assert [r["run_id"] for r in again.rows(env=["Toy-v0", "ToyCont-v0"])] == ["abc", "xyz"]
        assert again.get("xyz")["error"].splitlines()[0] == "FileNotFoundError: no data"
        with pytest.raises(ValueError, match="Cannot filter results on bogus"):
            again.rows(bogus=1)
        with pytest.raises(KeyError, match="No run 'nope'"):
            again.finish("nope", RECORD)


def test_exception_is_stored_with_its_traceback(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        store.claim("a", CONFIG)
        try:
            raise RuntimeError("boom\n  in two lines")
        except RuntimeError as exc:
            store.fail("a", exc)
        error = store.get("a")["error"]
        assert error.splitlines()[0] == "RuntimeError: boom in two lines" and "Traceback" in error


def test_resume_bookkeeping(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.claim("a", CONFIG)
        store.fail("a", "ValueError: first try")
        assert store.claim("a", CONFIG)  # a failed run is started again: one more attempt
        row = store.get("a")
        assert row["status"] == "running" and row["attempts"] == 2 and row["finished_at"] is None
        assert row["error"] == "ValueError: first try"  # kept until the run finishes
        assert store.claim("a", CONFIG)  # a stale "running" row (its grid was killed) is taken over
        store.finish("a", RECORD)
        done = store.get("a")
        assert done["attempts"] == 3 and done["error"] is None
        assert not store.claim("a", CONFIG)  # done: nothing changes
        assert store.get("a") == done
        with pytest.raises(ValueError, match="needs profile"):
            store.claim("b", {k: v for k, v in CONFIG.items() if k != "profile"})


def test_two_processes_write_at_once(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    ResultsStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=write_runs, args=(path, w, 50, barrier)) for w in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    with ResultsStore(path) as store:
        rows = store.rows()
        assert len(rows) == 100 and {r["status"] for r in rows} == {"done"} and {r["attempts"] for r in rows} == {1}
        assert {r["config"]["writer"] for r in rows} == {0, 1}
        order = [r["config"]["writer"] for r in sorted(rows, key=lambda r: r["finished_at"])]
        assert sum(a != b for a, b in zip(order, order[1:])) > 5  # the writers took turns: they overlapped
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


@pytest.mark.parametrize("content", [b"seed,score\n0,0.5\n" * 300, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_a_file_that_is_not_a_store_is_left_untouched(tmp_path, content):
    path = tmp_path / "results.sqlite"
    path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        ResultsStore(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "left as it is" in message and "--store" in message
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite"]


def test_another_sqlite_database_is_not_taken_over(tmp_path):
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE papers (title TEXT)")
    db.commit()
    db.close()
    before = path.read_bytes()
    with pytest.raises(ValueError, match="not an imaginebench results store .its tables: papers"):
        ResultsStore(path)
    assert path.read_bytes() == before
    with pytest.raises(ValueError, match="is a folder"):
        ResultsStore(tmp_path)


def test_a_live_lease_keeps_other_grids_off_a_run(tmp_path):
    import os
    import time

    from imaginebench.sweep.store import lease_alive, owner_id

    me, other = owner_id(), owner_id()
    assert me != other and me.split(":")[1] == str(os.getpid())
    with ResultsStore(tmp_path / "r.sqlite") as store:
        assert store.claim("a", CONFIG, owner=me)
        assert not store.claim("a", CONFIG, owner=other)  # this process is alive, its heartbeat fresh
        assert store.get("a")["owner"] == me and store.get("a")["attempts"] == 1
        assert store.claim("a", CONFIG, owner=me)  # its own grid may claim it again
        # a heartbeat renews the lease; a lapsed one lets another grid take the run over
        time.sleep(0.3)
        before = store.get("a")["heartbeat_at"]
        assert store.heartbeat(["a", "unknown"], me) == 1 and store.get("a")["heartbeat_at"] > before
        assert store.heartbeat(["a"], other) == 0
        time.sleep(0.3)
        assert store.claim("a", CONFIG, owner=other, lease_s=0.2)
        assert store.get("a")["owner"] == other and store.get("a")["attempts"] == 3
        # a grid of this machine whose process is gone holds nothing, whatever its heartbeat
        dead = subprocess_pid()
        store.claim("b", CONFIG, owner=f"{me.split(':')[0]}:{dead}:0000")
        assert not lease_alive(store.get("b")["owner"], store.get("b")["heartbeat_at"])
        assert store.claim("b", CONFIG, owner=me)
        # another machine's grid is trusted until its lease lapses
        store.claim("c", CONFIG, owner="elsewhere:1:ffff")
        assert not store.claim("c", CONFIG, owner=me)
        store.finish("c", RECORD)
        row = store.get("c")
        assert row["status"] == "done" and row["owner"] is None and row["heartbeat_at"] is None
        assert not store.claim("c", CONFIG, owner=me)


def subprocess_pid() -> int:
    """The pid of a process that has exited."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_schema_1_store_gains_the_lease_columns(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    db.execute("""CREATE TABLE runs (run_id TEXT PRIMARY KEY, env TEXT NOT NULL, algo TEXT NOT NULL,
        level TEXT NOT NULL, data TEXT NOT NULL, seed INTEGER NOT NULL, profile TEXT NOT NULL, config TEXT NOT NULL,
        status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, score TEXT, normalised TEXT, record_path TEXT,
        error TEXT, started_at TEXT, finished_at TEXT, wall_time_s REAL, host TEXT)""")
    db.execute("INSERT INTO runs (run_id, env, algo, level, data, seed, profile, config, status, attempts, score) "
               "VALUES ('old', 'Toy-v0', 'bc', 'easy', 'real', 0, 'tiny', '{}', 'done', 1, '{\"easy\": 0.5}')")
    db.commit()
    db.close()
    with ResultsStore(path) as store:
        assert store.get("old")["score"] == {"easy": 0.5} and store.get("old")["owner"] is None
        assert store.claim("new", CONFIG, owner="elsewhere:1:0")
    with ResultsStore(path) as again:
        assert again.get("new")["owner"] == "elsewhere:1:0"
