"""The CLEVR-Robot domain: state layout, tasks and the pure success/reward/legality functions."""

from __future__ import annotations

from types import MappingProxyType
from typing import ClassVar, Mapping, Sequence

import numpy as np

from imaginebench.domains.base import BatchOutcome, Domain, StepOutcome, Task
from imaginebench.domains.clevr.batch import outcome_arrays
from imaginebench.domains.clevr.layout import (
    BALL_RADIUS,
    COLOURS,
    N_ACTIONS,
    N_BALLS,
    TABLE_X,
    TABLE_Y,
    positions,
)
from imaginebench.domains.clevr.success import success_and_distance, task_distance, task_success, terms_from
from imaginebench.domains.clevr.tasks import build_tasks

LEGAL_BOUND_TOLERANCE = 0.01
"""A legal ball centre may lie at most this far outside the table's centre range."""
LEGAL_OVERLAP_TOLERANCE = 0.01
"""Two legal balls' centres are at least ``2 * BALL_RADIUS`` minus this apart."""


class ClevrDomain(Domain):
    """Five balls on a table; 10-dim state of ball centres, 40 discrete pushes.

    The progress record is the episode's initial state (the default of
    :meth:`Domain.initial_progress`); only the one-step move tasks read it.
    :meth:`outcome_batch` and :meth:`is_legal_batch` are array versions of :meth:`outcome`
    and :meth:`is_legal` (see :mod:`.batch`).
    """

    env_id: ClassVar[str] = "CLEVR-v0"
    state_dim: ClassVar[int] = 2 * N_BALLS
    horizon: ClassVar[int] = 50
    discrete_actions: ClassVar[bool] = True
    action_dim: ClassVar[int] = N_ACTIONS
    state_layout: ClassVar[tuple[str, ...]] = tuple(f"{c}_{axis}" for c in COLOURS for axis in "xy")
    transition_tolerance: ClassVar[float] = 0.05
    """One ball radius (a push moves a ball 0.15); re-simulation of real data is exact (a push is a
    pure function of the state)."""
    paper_episodes: ClassVar[Mapping[str, int]] = MappingProxyType(
        {"real": 100_000, "rephrase": 72_400, "easy": 5_600, "hard": 1_680})
    """The paper's dataset sizes (docs/benchmark.md §3.6): real rollouts and imaginary rollouts per level."""

    def _build_tasks(self) -> Mapping[str, Sequence[Task]]:
        return build_tasks()

    def state_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The table's range of ball centres, widened by the legality tolerance (the walls' joint
        limits let a ball overshoot by ~1e-4)."""
        tol = LEGAL_BOUND_TOLERANCE
        low = np.tile([TABLE_X[0] - tol, TABLE_Y[0] - tol], N_BALLS)
        high = np.tile([TABLE_X[1] + tol, TABLE_Y[1] + tol], N_BALLS)
        return low, high

    def success(self, task: Task, state: np.ndarray, start: np.ndarray | None = None) -> bool:
        """Whether ``task`` holds in ``state`` (``start``: the episode's first state)."""
        return task_success(task.family, task.params, state, state if start is None else start)

    def holds(self, task: Task, state: np.ndarray) -> bool:
        """Whether ``task`` holds in ``state`` taken as the episode's first state (one-step moves
        never hold there)."""
        return self.success(task, state)

    def distance(self, task: Task, state: np.ndarray, progress: np.ndarray | None = None) -> float:
        """The task distance of ``state`` (0 on the success set); ``progress`` is the episode's
        first state (:meth:`initial_progress`)."""
        return task_distance(task.family, task.params, state, state if progress is None else progress)

    _last_distance: tuple[tuple[str, bytes, bytes], float] | None = None
    """(task, next state, start) of the last :meth:`outcome` call and that state's task distance."""

    def outcome(
        self,
        task: Task,
        state: np.ndarray,
        action: np.ndarray | int,
        next_state: np.ndarray,
        progress: np.ndarray,
    ) -> StepOutcome:
        # :func:`reward_terms`, with the distance of ``state`` reused from the previous call when
        # that call's ``next_state`` is this ``state`` (a rollout): a one-entry memo of a pure
        # function keyed by its exact inputs, so the result never depends on the call order.
        s = np.asarray(state, dtype=np.float64)
        ns = np.asarray(next_state, dtype=np.float64)
        start = np.asarray(progress, dtype=np.float64)
        key = (task.name, s.tobytes(), start.tobytes())
        memo = self._last_distance
        before = memo[1] if memo is not None and memo[0] == key else task_distance(task.family, task.params, s, start)
        success, after = success_and_distance(task.family, task.params, ns, start)
        self._last_distance = ((task.name, ns.tobytes(), key[2]), after)
        terms = terms_from(before, after, success)
        return StepOutcome(success=success, reward=terms["shaping"] + terms["success_bonus"], progress=progress,
                           terms=terms)

    def legality_errors(self, state: np.ndarray) -> list[str]:
        """Why ``state`` is not a legal table: wrong shape, non-finite, a centre off the table, two
        balls overlapping (empty when legal)."""
        s = np.asarray(state, dtype=np.float64)
        if s.shape != (self.state_dim,):
            return [f"expected {self.state_dim} values, got shape {s.shape}"]
        if not np.all(np.isfinite(s)):
            return ["non-finite values"]
        errors = []
        tol = LEGAL_BOUND_TOLERANCE
        for colour, (x, y) in zip(COLOURS, positions(s)):
            if not (TABLE_X[0] - tol <= x <= TABLE_X[1] + tol and TABLE_Y[0] - tol <= y <= TABLE_Y[1] + tol):
                errors.append(f"{colour} ball at ({x:.3f}, {y:.3f}) is off the table")
        p = positions(s)
        for i, j in zip(*np.triu_indices(N_BALLS, k=1)):
            if np.linalg.norm(p[i] - p[j]) < 2 * BALL_RADIUS - LEGAL_OVERLAP_TOLERANCE:
                errors.append(f"{COLOURS[i]} and {COLOURS[j]} balls overlap")
        return errors

    def is_legal(self, state: np.ndarray) -> bool:
        """Right shape, finite, every centre on the table and no two balls overlapping (the same
        answer as :meth:`legality_errors`, faster)."""
        s = np.asarray(state, dtype=np.float64)
        if s.shape != (self.state_dim,) or not np.all(np.isfinite(s)):
            return False
        p = positions(s)
        tol = LEGAL_BOUND_TOLERANCE
        if np.any(p[:, 0] < TABLE_X[0] - tol) or np.any(p[:, 0] > TABLE_X[1] + tol):
            return False
        if np.any(p[:, 1] < TABLE_Y[0] - tol) or np.any(p[:, 1] > TABLE_Y[1] + tol):
            return False
        gaps = np.linalg.norm(p[:, None, :] - p[None, :, :], axis=-1)
        upper = gaps[np.triu_indices(N_BALLS, k=1)]
        return bool(np.all(upper >= 2 * BALL_RADIUS - LEGAL_OVERLAP_TOLERANCE))

    def outcome_batch(
        self,
        tasks: Sequence[Task],
        states: np.ndarray,
        actions: np.ndarray,
        next_states: np.ndarray,
        progress: Sequence[np.ndarray],
    ) -> BatchOutcome:
        """:meth:`outcome` of every row, vectorised per task family (no per-row fallback)."""
        states, _, next_states = self._check_batch(tasks, states, actions, next_states, progress)
        starts = np.asarray(progress, dtype=np.float64)
        if len(tasks) == 0:
            starts = starts.reshape(0, self.state_dim)
        if starts.shape != states.shape:
            raise ValueError(f"{self.env_id}: expected progress of shape {states.shape}, got {starts.shape}")
        success, reward = outcome_arrays(tasks, states, next_states, starts)
        return BatchOutcome(success=success, reward=reward, progress=list(progress))

    def is_legal_batch(self, states: np.ndarray) -> np.ndarray:
        """:meth:`is_legal` of every row of an ``(N, 10)`` array, as array code."""
        s = self._check_states("states", states, None)
        legal = np.isfinite(s).all(axis=1)
        p = np.where(legal[:, None], s, 0.0).reshape(len(s), N_BALLS, 2)
        tol = LEGAL_BOUND_TOLERANCE
        legal &= np.all((p[..., 0] >= TABLE_X[0] - tol) & (p[..., 0] <= TABLE_X[1] + tol), axis=1)
        legal &= np.all((p[..., 1] >= TABLE_Y[0] - tol) & (p[..., 1] <= TABLE_Y[1] + tol), axis=1)
        gaps = np.linalg.norm(p[:, :, None, :] - p[:, None, :, :], axis=-1)
        first, second = np.triu_indices(N_BALLS, k=1)
        upper = gaps[:, first, second]
        legal &= np.all(upper >= 2 * BALL_RADIUS - LEGAL_OVERLAP_TOLERANCE, axis=1)
        return legal
