"""Grids of tiny toy runs on a local Ray instance: results in the store, retries, and a grid
killed half-way (SIGKILL) that resumes without re-running what it had finished.

Ray starts once for the module (a few seconds), and every test uses one data home so the
workers (which import torch and d3rlpy) are reused; tests use different seeds or envs so
their runs never share a run folder.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from imaginebench.training import run_dir
from imaginebench.evaluation.records import read_record
from imaginebench.run_folder import CHECKPOINT_NAME
from imaginebench.sweep import GridSpec, ResultsStore, run_grid
from tests.algos.helpers import build_toy_data, register_toy_envs
from tests.sweep.helpers import FAST, flaky_setup, kill_grid, register_toys, toy_data, toy_grid

pytestmark = pytest.mark.xdist_group("ray")  # one local Ray instance at a time under pytest-xdist

ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory):
    """One data home with toy data for every test of the module."""
    home = tmp_path_factory.mktemp("grid_home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IMAGINEBENCH_HOME", str(home))
        register_toy_envs(mp)
        toy_data()
        build_toy_data("ToyCont-v0", ("train",), episodes=20)
    return home


@pytest.fixture(scope="module")
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    yield
    ray.shutdown()


@pytest.fixture
def home(shared_home, local_ray, toy_envs, monkeypatch):
    monkeypatch.setenv("IMAGINEBENCH_HOME", str(shared_home))
    return shared_home


def test_grid_runs_on_local_ray(home, tmp_path, capsys):
    grid = toy_grid(seeds=(0, 1), levels=("train", "easy"), data=("real", "real-upper-bound"))
    store = ResultsStore(tmp_path / "results.sqlite")
    summary = run_grid(grid, store, cpus_per_run=1, setup=register_toys)
    assert (summary.total, summary.done, summary.failed, summary.skipped) == (6, 6, 0, 0)
    assert summary.excluded == [("Toy-v0 discrete_bc train/real-upper-bound",
                                 "the Real upper bound needs a novel level")]
    err = capsys.readouterr().err
    assert "done 6, running 0, failed 0" in err
    finished = [line for line in err.splitlines() if line.startswith("finished ")]
    assert len(finished) == 6  # one line per run, so a log that is not a terminal shows the grid move
    assert any(line.startswith("finished Toy-v0 discrete_bc easy/real seed 1: easy ") and ", train " in line
               for line in finished)
    rows = store.rows()
    assert len(rows) == 6 and {r["status"] for r in rows} == {"done"} and {r["attempts"] for r in rows} == {1}
    for row in rows:
        record = read_record(row["record_path"])
        assert row["score"] == record["score"] and row["normalised"] == record["normalised"]
        assert set(row["score"]) == ({"train"} if row["level"] == "train" else {"train", "easy"})
        assert record["seed"] == row["seed"] and record["data"] == row["data"] and record["steps"] == 40
        assert row["wall_time_s"] > 0 and row["host"] and row["finished_at"] > row["started_at"]
        assert Path(row["record_path"]).is_relative_to(home / "runs")  # the workers saw the data home
    assert ray.is_initialized()  # a Ray instance it did not start is left running

    again = run_grid(grid, store, progress=False, setup=register_toys)
    assert (again.done, again.skipped, again.failed) == (0, 6, 0)
    assert store.rows() == rows


def test_a_failing_run_is_recorded_not_retried_when_the_error_would_recur(home, tmp_path):
    # ToyCont-v0 has real data for the train level only: its easy upper bound cannot load its data
    grid = GridSpec(envs=("ToyCont-v0",), algos=("bc",), levels=("train", "easy"), data=("real", "real-upper-bound"),
                    seeds=(0,), **FAST)
    with ResultsStore(tmp_path / "results.sqlite") as store:
        summary = run_grid(grid, store, retries=1, progress=False, setup=register_toys)
        assert (summary.total, summary.done, summary.failed) == (3, 2, 1)
        (failed,) = store.rows(status="failed")
        # a missing dataset (FileNotFoundError) would fail again: one attempt only
        assert failed["level"] == "easy" and failed["data"] == "real-upper-bound" and failed["attempts"] == 1
        first, *trace = failed["error"].splitlines()
        assert first.startswith("FileNotFoundError: ") and "data collect --env ToyCont-v0 --level easy" in first
        assert any("Traceback" in line for line in trace)
        assert summary.failures == [("ToyCont-v0 bc easy/real-upper-bound seed 0", first)]
        assert {(r["level"], r["data"]) for r in store.rows(status="done")} == {("train", "real"), ("easy", "real")}
        assert {r["attempts"] for r in store.rows(status="done")} == {1}


def _session(sid: int) -> list[int]:
    """Live processes of session ``sid`` (the killed grid's driver, Ray's daemons and workers)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return pids


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to watch the killed processes")
def test_a_killed_grid_resumes_without_rerunning_finished_runs(home, tmp_path):
    path = tmp_path / "results.sqlite"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["IMAGINEBENCH_HOME"] = str(home)
    log = open(tmp_path / "grid.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from tests.sweep.helpers import run_kill_grid; run_kill_grid(sys.argv[1])",
         str(path)], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    total = len(kill_grid().plan().runs)
    try:
        deadline = time.monotonic() + 240
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the grid ended (exit {proc.returncode}) before it could be killed half-way:\n"
                            + (tmp_path / "grid.log").read_text()[-3000:])
            if time.monotonic() > deadline:
                pytest.fail("no run finished in time:\n" + (tmp_path / "grid.log").read_text()[-3000:])
            if path.exists():
                with ResultsStore(path) as store:
                    if 1 <= len(store.done_ids()) < total:
                        break
            time.sleep(0.1)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        log.close()
    # SIGKILL took the driver's process group (driver, gcs, raylet); Ray's workers have process groups
    # of their own and exit once their raylet is gone. Wait for them: one may still finish its run.
    for _ in range(300):
        if not _session(proc.pid):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"processes of the killed grid are still alive: {_session(proc.pid)}")

    with ResultsStore(path) as store:
        before = {r["run_id"]: r for r in store.rows()}
        finished = {rid: Path(r["record_path"]).read_bytes() for rid, r in before.items() if r["status"] == "done"}
        interrupted = {rid for rid, r in before.items() if r["status"] == "running"}
        assert 1 <= len(finished) < total and interrupted
        plan = {run.run_id: run for run in kill_grid().plan().runs}
        checkpointed = {rid for rid in interrupted if (run_dir(plan[rid].spec) / CHECKPOINT_NAME).exists()}

        summary = run_grid(kill_grid(), store, progress=False, setup=register_toys)
        assert (summary.skipped, summary.done, summary.failed) == (len(finished), total - len(finished), 0)
        assert summary.resumed >= len(checkpointed)
        after = {r["run_id"]: r for r in store.rows()}
        assert set(after) == set(plan) and {r["status"] for r in after.values()} == {"done"}
        for rid, record_bytes in finished.items():  # not run again: row and record as they were
            assert after[rid] == before[rid] and Path(after[rid]["record_path"]).read_bytes() == record_bytes
        for rid in interrupted:
            assert after[rid]["attempts"] == 2
        for rid, row in after.items():
            record = read_record(row["record_path"])
            assert row["score"] == record["score"] and [c["step"] for c in record["curve"]] == [500, 1000, 1500]
            if rid in checkpointed:
                assert record["timing"]["resumed_from_step"] > 0


def test_a_transient_failure_is_retried_once(home, tmp_path):
    (home / "flaky-once").unlink(missing_ok=True)
    grid = toy_grid(seeds=(11,), levels=("train",), data=("real",))
    with ResultsStore(tmp_path / "results.sqlite") as store:
        summary = run_grid(grid, store, retries=1, progress=False, setup=flaky_setup)
        assert (summary.total, summary.done, summary.failed) == (1, 1, 0)
        (row,) = store.rows()
        assert row["status"] == "done" and row["attempts"] == 2 and row["error"] is None


def _hold(store_path, run, owner, finish_after_s=None):
    """Another grid's claim on ``run`` (a live lease), finished by it after ``finish_after_s``."""
    import threading

    with ResultsStore(store_path) as other:
        assert other.claim(run.run_id, run.config, owner=owner)
    if finish_after_s is None:
        return None

    def finish():
        time.sleep(finish_after_s)
        with ResultsStore(store_path) as other:
            other.finish(run.run_id, {"score": {"train": 0.75}, "timing": {"wall_time_s": 1.0}},
                         record_path=None)

    thread = threading.Thread(target=finish)
    thread.start()
    return thread


def test_a_run_another_grid_is_running_is_not_trained_twice(home, tmp_path):
    grid = toy_grid(seeds=(12, 13), levels=("train",), data=("real",))
    held, free = grid.plan().runs
    path = tmp_path / "results.sqlite"
    thread = _hold(path, held, "elsewhere:1:abcd", finish_after_s=3.0)
    with ResultsStore(path) as store:
        summary = run_grid(grid, store, progress=False, setup=register_toys)
    thread.join()
    assert (summary.done, summary.skipped, summary.failed) == (1, 1, 0)
    with ResultsStore(path) as store:
        assert store.get(held.run_id)["score"] == {"train": 0.75} and store.get(held.run_id)["attempts"] == 1
        assert store.get(free.run_id)["status"] == "done"
    assert not (run_dir(held.spec) / "record.json").exists()  # this grid never trained it


def test_a_lapsed_lease_is_taken_over(home, tmp_path):
    grid = toy_grid(seeds=(14,), levels=("train",), data=("real",))
    (run,) = grid.plan().runs
    path = tmp_path / "results.sqlite"
    _hold(path, run, "elsewhere:1:dead")  # its grid never beats again
    with ResultsStore(path) as store:
        started = time.monotonic()
        summary = run_grid(grid, store, progress=False, setup=register_toys, lease_s=2.0)
        assert time.monotonic() - started >= 2.0
        assert (summary.done, summary.failed) == (1, 0)
        row = store.get(run.run_id)
        assert row["status"] == "done" and row["attempts"] == 2 and row["owner"] is None
