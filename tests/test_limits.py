"""Counts, sizes and addresses checked before work: the machine's bounds, NaN never in JSON."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from imaginebench import limits
from imaginebench.errors import UsageError
from imaginebench.fileio import finite_json, read_json, write_json
from tests.algos.helpers import toy_envs  # noqa: F401 (fixture)


def test_counts_and_numbers():
    assert limits.count("--n", 3) == 3 and limits.count("--n", None, allow_none=True) is None
    assert limits.count("--n", np.int64(4)) == 4 and limits.count("--n", 5.0) == 5
    assert limits.number("--x", np.float32(0.25), low=0.0) == 0.25
    for bad in (0, -1, 2.5, float("nan"), "3", True):
        with pytest.raises(UsageError, match="--n must"):
            limits.count("--n", bad)
    assert limits.number("--x", 0.5, low=0.0, high=1.0) == 0.5
    for bad in (float("nan"), float("inf"), -0.1, 1.5, None, "1"):
        with pytest.raises(UsageError, match="--x must"):
            limits.number("--x", bad, low=0.0, high=1.0)
    with pytest.raises(UsageError, match="> 0"):
        limits.positive("--tolerance", 0.0)


def test_workers_are_capped_by_the_cpus_unless_a_cluster_runs_them():
    cap = limits.available_cpus()
    assert limits.workers("--workers", cap) == cap
    with pytest.raises(UsageError, match=f"give at most --workers {cap}"):
        limits.workers("--workers", cap + 1)
    assert limits.workers("--workers", cap + 100, cluster=True) == cap + 100


def test_a_large_worker_count_never_starts_more_processes_than_the_cap(monkeypatch, toy_envs, data_home):
    """The pool is never built with more processes than the cap, nor than there are jobs."""
    import importlib

    collect_module = importlib.import_module("imaginebench.data.collect")  # the package re-exports a function

    started: list[int] = []
    pool = collect_module.worker_pool

    def counting_pool(workers):
        started.append(workers)
        return pool(workers)

    monkeypatch.setattr(collect_module, "worker_pool", counting_pool)
    cap = limits.available_cpus()
    with pytest.raises(UsageError, match="more worker processes"):
        collect_module.collect("Toy-v0", "train", 4, workers=10_000, progress=False)
    assert started == []  # refused before any process started
    if cap >= 2:
        ds = collect_module.collect("Toy-v0", "train", 4, workers=cap, progress=False)
        assert len(ds.lengths) == 4 and started and max(started) <= min(cap, 1)  # 4 episodes = one chunk: one process


def test_an_address_where_nothing_answers_fails_fast():
    start = time.perf_counter()
    with pytest.raises(ValueError, match="No Ray cluster answered at 127.0.0.1:1 within"):
        limits.cluster_answers("127.0.0.1:1", timeout_s=2.0)
    assert time.perf_counter() - start < 5.0
    with pytest.raises(UsageError, match="is not HOST:PORT"):
        limits.cluster_answers("no-port-here")
    limits.cluster_answers("auto")  # left to Ray


def test_a_grid_refused_for_its_address_leaves_no_store(tmp_path):
    from imaginebench.sweep.ray_runner import check_grid_options

    with pytest.raises(ValueError, match="No Ray cluster answered"):
        check_grid_options(address="127.0.0.1:1")
    assert list(tmp_path.iterdir()) == []


def test_training_memory_estimate_refuses_only_the_impossible():
    limits.check_training_memory(observation_dim=1200, action_size=6, hidden_units=(256, 256), batch_size=256)
    with pytest.raises(UsageError, match="GiB of memory"):
        limits.check_training_memory(observation_dim=1200, action_size=6, hidden_units=(10**9,), batch_size=256)
    with pytest.raises(UsageError, match="--batch-size"):
        limits.check_training_memory(observation_dim=1200, action_size=6, hidden_units=(256,), batch_size=10**12)


def test_nan_is_never_written_as_json_and_is_refused_when_read(tmp_path):
    obj = {"a": float("nan"), "b": [1.0, float("inf"), np.float32("nan"), np.float64(2.5)], "c": "x"}
    assert finite_json(obj) == {"a": None, "b": [1.0, None, None, 2.5], "c": "x"}
    path = write_json(tmp_path / "r.json", obj)
    assert json.loads(path.read_text(), parse_constant=lambda t: pytest.fail(t))["b"][3] == 2.5
    (tmp_path / "nan.json").write_text(json.dumps({"score": math.nan}))
    with pytest.raises(ValueError, match="holds NaN"):
        read_json(tmp_path / "nan.json")
