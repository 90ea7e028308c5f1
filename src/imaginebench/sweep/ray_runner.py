"""Run a benchmark grid on Ray, keeping each run's status and scores in a :class:`ResultsStore`.

The driver (this process) owns the store: it claims a run (status ``running``, one more
attempt), submits it as a Ray task, and records the task's outcome (``done`` with the scores,
or ``failed`` with the error).  No more tasks are in flight than the cluster has room for, so
``running`` in the store means running.  Runs the store already has as ``done`` are not
submitted again, so a grid that was stopped (even killed) resumes where it was: unfinished
runs continue from their last checkpoint (:func:`imaginebench.training.train`).

Workers must see the driver's data home (a shared folder on a multi-node cluster):
``$IMAGINEBENCH_HOME`` and a few other variables travel with every task in its
``runtime_env``.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from imaginebench import limits
from imaginebench.config import HOME_ENV_VAR, PROFILE_ENV_VAR, data_home
from imaginebench.errors import UsageError
from imaginebench.raycluster import ray_session
from imaginebench.sweep.grid import GridSpec, PlannedRun
from imaginebench.sweep.store import LEASE_S, ResultsStore, error_text, now, owner_id

DETERMINISTIC_ERRORS: tuple[type[BaseException], ...] = (FileNotFoundError, FileExistsError, ValueError, KeyError,
                                                         ImportError, NotImplementedError, TypeError)
"""Errors that a second attempt would meet again (missing data, bad settings, a missing extra):
a run failing with one is recorded and not retried."""
HEARTBEAT_S = 5.0
"""How often a grid renews the leases of the runs it is running."""

FORWARDED_ENV_VARS = (PROFILE_ENV_VAR, "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "MUJOCO_GL", "PYOPENGL_PLATFORM")
"""Variables passed on to the workers when set here (``$IMAGINEBENCH_HOME`` always is)."""


@dataclass
class GridSummary:
    """What :func:`run_grid` did.

    Attributes:
        total: runs in the grid.
        done: runs finished by this call (trained, resumed, or found finished on disk).
        failed: runs that failed every attempt of this call.
        skipped: runs already ``done`` in the store: not submitted.
        resumed: of ``done``, runs that continued from a checkpoint.
        wall_time_s: wall time of the call.
        store_path: the results store.
        failures: ``(run label, first line of the error)`` of each failed run.
        excluded: grid combinations left out, ``(description, reason)``.
    """

    total: int
    done: int = 0
    failed: int = 0
    skipped: int = 0
    resumed: int = 0
    wall_time_s: float = 0.0
    store_path: Path | None = None
    failures: list[tuple[str, str]] = field(default_factory=list)
    excluded: list[tuple[str, str]] = field(default_factory=list)


def worker_env() -> dict[str, str]:
    """Environment variables every task runs with: the data home and :data:`FORWARDED_ENV_VARS`."""
    env = {HOME_ENV_VAR: str(data_home().resolve())}
    env.update({k: os.environ[k] for k in FORWARDED_ENV_VARS if k in os.environ})
    return env


def finished_scores(record: dict[str, Any]) -> str:
    """``rephrase 85.8%, train 79.8%, 312 s``: a finished run's success per evaluated level, target first."""
    score = record.get("score") or {}
    levels = sorted(score, key=lambda level: level == "train")
    parts = [f"{level} {100 * score[level]:.1f}%" for level in levels]
    wall = (record.get("timing") or {}).get("wall_time_s")
    if wall is not None:
        parts.append(f"{wall:.0f} s")
    return ", ".join(parts)


def run_one(spec: Any, threads: int = 1, setup: Callable[[], None] | None = None) -> dict[str, Any]:
    """Train one run (the body of a Ray task); never raises: failures come back as ``ok=False``."""
    started_at, t0, host = now(), time.perf_counter(), socket.gethostname()
    try:
        if setup is not None:
            setup()
        import torch

        from imaginebench.evaluation.records import RECORD_NAME
        from imaginebench.training import train

        torch.set_num_threads(max(1, int(threads)))
        result = train(spec, progress=False)
        rec = result.record
        timing = dict(rec.get("timing") or {"wall_time_s": round(time.perf_counter() - t0, 3)})
        return {"ok": True, "record_path": str(result.path / RECORD_NAME), "host": host, "started_at": started_at,
                "record": {"score": rec["score"], "normalised": rec.get("normalised"), "timing": timing},
                "skipped": result.skipped, "resumed_from": result.resumed_from}
    except Exception as exc:  # the driver records it and decides on a retry
        return {"ok": False, "error": error_text(exc), "host": host, "started_at": started_at,
                "retryable": not isinstance(exc, DETERMINISTIC_ERRORS)}


def run_grid(grid: GridSpec, store: ResultsStore, address: str | None = None, num_cpus: int | None = None,
             cpus_per_run: float = 1, gpus_per_run: float = 0, retries: int = 1, progress: bool = True,
             setup: Callable[[], None] | None = None, lease_s: float = LEASE_S) -> GridSummary:
    """Run every run of ``grid`` that ``store`` does not have as ``done``, as Ray tasks.

    A run that fails is recorded ``failed`` with its error and started again up to ``retries``
    times (after the runs already waiting), unless the error is one a second attempt would meet
    again (:data:`DETERMINISTIC_ERRORS`: missing data, bad settings); the other runs go on.  A
    ``done`` run whose record file has gone missing is run again.  A run that another grid is
    running (its lease alive in the store) waits until that grid finishes it (then it is
    skipped) or its lease lapses (then this grid takes it over).

    Args:
        grid: the grid.
        store: where statuses and scores go (this process writes it).
        address: an existing Ray cluster (``"auto"``, ``"ray://host:10001"``, ...); ``None``
            starts a local Ray instance for this call (or uses the one this process already has).
        num_cpus: CPUs of the local Ray instance (default: all of this machine's; unused when
            this process is already connected to Ray).
        cpus_per_run: CPUs each run reserves; also its torch thread count.
        gpus_per_run: GPUs each run reserves (the offline RL runs themselves train on CPU).
        retries: how many more times a failed run is started in this call.
        progress: live progress on stderr (runs done / running / failed / total, ETA).
        setup: a picklable function each task calls before training (e.g. to register a plugin
            environment or encoder in the worker process).
        lease_s: seconds another grid's claim on a run stays alive without its heartbeat.
    """
    check_grid_options(address=address, num_cpus=num_cpus, cpus_per_run=cpus_per_run, gpus_per_run=gpus_per_run,
                       retries=retries, lease_s=lease_s)
    started = time.perf_counter()
    plan = grid.plan()
    summary = GridSummary(total=len(plan.runs), store_path=store.path, excluded=list(plan.excluded))
    done_before = store.done_ids()
    todo = deque(run for run in plan.runs if not _is_done(run, done_before, store))
    summary.skipped = summary.total - len(todo)
    if todo:
        with ray_session(address, num_cpus) as ray:
            _drive(ray, todo, store, summary, cpus_per_run, gpus_per_run, retries, progress, setup, lease_s)
    summary.wall_time_s = round(time.perf_counter() - started, 3)
    return summary


def check_grid_options(*, address: str | None = None, num_cpus: int | None = None, cpus_per_run: float = 1,
                       gpus_per_run: float = 0, retries: int = 1, lease_s: float = LEASE_S) -> None:
    """Every option of a grid, checked before anything is made (store, Ray instance): counts in range, a
    local instance no larger than the CPUs this process may use, and a cluster address that answers
    (:func:`imaginebench.limits.cluster_answers`, within its stated timeout)."""
    limits.positive("--cpus-per-run", cpus_per_run)
    limits.number("--gpus-per-run", gpus_per_run, low=0.0)
    limits.count("--retries", retries, low=0)
    limits.positive("--lease", lease_s)
    if num_cpus is not None and address is not None:
        raise UsageError("--cpus sizes a local Ray instance; with --address the cluster's own CPUs are used.")
    if num_cpus is not None:
        limits.workers("--cpus", num_cpus)
        if cpus_per_run > num_cpus:
            raise UsageError(f"--cpus-per-run {cpus_per_run:g} is more than the local instance's --cpus {num_cpus}.")
    elif address is None and cpus_per_run > limits.available_cpus():
        raise UsageError(f"--cpus-per-run {cpus_per_run:g} is more than the {limits.available_cpus()} CPUs this "
                         "process may use.")
    if address is not None:
        limits.cluster_answers(address)


def _is_done(run: PlannedRun, done_ids: set[str], store: ResultsStore) -> bool:
    """Done in the store, and its record still there (a lost record is made again)."""
    if run.run_id not in done_ids:
        return False
    path = (store.get(run.run_id) or {}).get("record_path")
    return path is None or Path(path).exists()


def _slots(ray: Any, cpus_per_run: float, gpus_per_run: float) -> int:
    resources = ray.cluster_resources()
    slots = int(resources.get("CPU", 0) // cpus_per_run)
    if gpus_per_run:
        slots = min(slots, int(resources.get("GPU", 0) // gpus_per_run))
    if slots < 1:
        raise ValueError(f"Each run needs {cpus_per_run} CPU(s) and {gpus_per_run} GPU(s), but the Ray cluster has "
                         f"{resources.get('CPU', 0):g} CPU(s) and {resources.get('GPU', 0):g} GPU(s).")
    return slots


def _drive(ray: Any, todo: deque[PlannedRun], store: ResultsStore, summary: GridSummary, cpus_per_run: float,
           gpus_per_run: float, retries: int, progress: bool, setup: Callable[[], None] | None,
           lease_s: float = LEASE_S) -> None:
    from tqdm.auto import tqdm

    slots = _slots(ray, cpus_per_run, gpus_per_run)
    task = ray.remote(max_retries=0)(run_one).options(
        num_cpus=cpus_per_run, num_gpus=gpus_per_run, runtime_env={"env_vars": worker_env()})
    threads = max(1, int(cpus_per_run))
    owner = owner_id()
    pending: dict[Any, PlannedRun] = {}
    waiting: deque[PlannedRun] = deque()  # held by another grid
    attempts: Counter[str] = Counter()
    beat = time.monotonic()
    bar = tqdm(total=len(todo), desc="grid", unit="run", file=sys.stderr, disable=not progress, dynamic_ncols=True)

    def show() -> None:
        held = f", held by another grid {len(waiting)}" if waiting else ""
        bar.set_postfix_str(f"done {summary.done}, running {len(pending)}, failed {summary.failed}, "
                            f"already done {summary.skipped}{held}", refresh=True)

    def start(run: PlannedRun) -> bool:
        """Claim and submit ``run``; ``False`` if another grid holds it (it goes to ``waiting``)."""
        if not store.claim(run.run_id, run.config, owner=owner, lease_s=lease_s):
            if (store.get(run.run_id) or {}).get("status") == "done":  # finished meanwhile by another grid
                summary.skipped += 1
                bar.update(1)
            else:
                waiting.append(run)
            return False
        attempts[run.run_id] += 1
        pending[task.remote(run.spec, threads, setup)] = run
        return True

    try:
        while todo or pending or waiting:
            while todo and len(pending) < slots:
                start(todo.popleft())
            if not todo and waiting and len(pending) < slots:
                for _ in range(len(waiting)):  # try each held run once per pass
                    if len(pending) >= slots:
                        break
                    start(waiting.popleft())
            show()
            if time.monotonic() - beat >= HEARTBEAT_S:
                store.heartbeat([run.run_id for run in pending.values()], owner)
                beat = time.monotonic()
            if not pending:
                if waiting:
                    time.sleep(1.0)
                continue
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            for ref in ready:
                run = pending.pop(ref)
                try:
                    out = ray.get(ref)
                except ray.exceptions.RayError as exc:  # the worker died (killed, out of memory, ...)
                    out = {"ok": False, "error": error_text(exc), "retryable": True}
                if out["ok"]:
                    store.finish(run.run_id, out["record"], record_path=out["record_path"], host=out["host"],
                                 started_at=out["started_at"])
                    summary.done += 1
                    summary.resumed += bool(out.get("resumed_from"))
                    if progress:  # a line per finished run: a log that is not a terminal shows the grid move
                        bar.write(f"finished {run.label}: {finished_scores(out['record'])}", file=sys.stderr)
                    bar.update(1)
                    continue
                store.fail(run.run_id, out["error"], host=out.get("host"))
                first = out["error"].splitlines()[0]
                if attempts[run.run_id] <= retries and out.get("retryable", True):
                    todo.append(run)  # retried after the others already waiting
                    if progress:
                        bar.write(f"retrying {run.label} (attempt {attempts[run.run_id]} failed: {first})",
                                  file=sys.stderr)
                    continue
                summary.failed += 1
                summary.failures.append((run.label, first))
                bar.update(1)
                if progress:
                    why = "" if out.get("retryable", True) else " (not retried: the same error would recur)"
                    bar.write(f"failed{why}: {run.label}: {first}", file=sys.stderr)
        show()
    finally:
        bar.close()
