"""The Gymnasium environment shared by every domain.

A domain's env subclasses :class:`InstructionEnv` and implements the simulator hooks
(``_sample_start``, ``_simulate``, ``set_state``, ``_expert``, ``render_state``); episode
bookkeeping, task/instruction sampling, the start-state loop, success, reward, termination and
truncation live here once and call the domain's pure state functions.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from typing import Any, Callable, ClassVar

import gymnasium as gym
import numpy as np

from imaginebench.domains.base import Domain, Task, check_level

DatasetLoader = Callable[..., Any]
_dataset_loader: list[DatasetLoader] = []
"""What :meth:`InstructionEnv.get_dataset` calls: the data layer's ``get_dataset``, handed in by
:func:`provide_datasets` when ``imaginebench.data`` is imported (the data layer sits above the
envs: it collects with them), so this module never imports it."""


def provide_datasets(loader: DatasetLoader) -> None:
    """Let every env's ``get_dataset`` call ``loader(env_id, level, **kwargs)`` (the data layer does
    this once, on import)."""
    _dataset_loader[:] = [loader]


class InstructionEnv(gym.Env, abc.ABC):
    """An instruction-conditioned environment at one level.

    Observations are the domain's raw state vector; the instruction is in ``info``.
    (``imaginebench.make`` adds the wrapper that appends the instruction embedding.)
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}
    domain_cls: ClassVar[type[Domain]]
    reset_tries: ClassVar[int] = 100
    """Start states drawn per reset until one where the task does not already hold."""

    def __init__(self, level: str = "train", render_mode: str | None = None) -> None:
        self.level = check_level(level)
        self.domain = self.domain_cls()
        self.render_mode = render_mode
        d = self.domain
        low, high = d.state_bounds()
        self.observation_space = gym.spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)
        if d.discrete_actions:
            self.action_space = gym.spaces.Discrete(d.action_dim)
        else:
            self.action_space = gym.spaces.Box(-1.0, 1.0, (d.action_dim,), dtype=np.float32)
        self.task: Task | None = None
        self.instruction: str = ""
        self.state: np.ndarray = np.zeros(d.state_dim)
        self.progress: np.ndarray = np.zeros(0)
        self.elapsed_steps = 0
        self.is_success = False

    # ------------------------------------------------------------------ public API
    @property
    def tasks(self) -> tuple[str, ...]:
        """Names of this level's tasks."""
        return tuple(t.name for t in self.domain.tasks(self.level))

    @property
    def horizon(self) -> int:
        return self.domain.task_horizon(self.task) if self.task else self.domain.horizon

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if options is not None and not isinstance(options, Mapping):
            raise ValueError(f"reset options must be a dict (task, instruction, state), got {type(options).__name__}.")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}.")
        super().reset(seed=seed)
        options = dict(options or {})
        for key in ("task", "instruction"):
            if options.get(key) is not None and not isinstance(options[key], str):
                raise ValueError(f"reset option {key!r} must be a string, got {type(options[key]).__name__}.")
        level_tasks = self.domain.tasks(self.level)
        name = options.pop("task", None)
        if name is None:
            self.task = level_tasks[int(self.np_random.integers(len(level_tasks)))]
        else:
            self.task = self.domain.task(str(name), level=self.level)
        bank = self.task.bank(self.level)
        instruction = options.pop("instruction", None)
        self.instruction = str(instruction) if instruction is not None else bank[
            int(self.np_random.integers(len(bank)))
        ]
        start = options.pop("state", None)
        if options:
            raise ValueError(
                f"Unknown reset option(s) {sorted(options)}; valid options: task, instruction, state."
            )
        self.state = np.asarray(self._reset_simulation(self.task), dtype=np.float64)
        if start is not None:  # start from a given state vector (e.g. an imagined rollout's first state)
            self.set_state(self._check_state(start))
        self.progress = self.domain.initial_progress(self.task, self.state)
        self.elapsed_steps = 0
        self.is_success = False
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self.task is None:
            raise RuntimeError("Call reset() before step().")
        action = self._check_action(action)
        previous = self.state
        self.state = np.asarray(self._simulate(action), dtype=np.float64)
        out = self.domain.outcome(self.task, previous, action, self.state, self.progress)
        self.progress = out.progress
        self.elapsed_steps += 1
        self.is_success = bool(out.success)
        terminated = self.is_success
        truncated = (not terminated) and self.elapsed_steps >= self.horizon
        info = self._info()
        info["reward_terms"] = dict(out.terms)
        return self._obs(), float(out.reward), terminated, truncated, info

    def snapshot(self) -> dict[str, Any]:
        """The running episode as plain data (task, phrasing, state vector, progress, step count,
        random stream): :meth:`restore` continues it.  Exact where the state vector is the whole
        simulator state (CLEVR, BabyAI); MuJoCo domains restore positions from the state vector."""
        if self.task is None:
            raise RuntimeError("Call reset() before snapshot().")
        return {"task": self.task.name, "instruction": self.instruction, "state": self.state.tolist(),
                "progress": np.asarray(self.progress).tolist(), "elapsed_steps": int(self.elapsed_steps),
                "is_success": bool(self.is_success), "rng": self.np_random.bit_generator.state}

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Continue the episode a :meth:`snapshot` recorded."""
        self.reset(options={"task": snapshot["task"], "instruction": snapshot["instruction"],
                            "state": np.asarray(snapshot["state"], dtype=np.float64)})
        self.progress = np.asarray(snapshot["progress"], dtype=np.asarray(self.progress).dtype)
        self.elapsed_steps = int(snapshot["elapsed_steps"])
        self.is_success = bool(snapshot["is_success"])
        self.np_random.bit_generator.state = snapshot["rng"]

    def expert_action(self) -> Any:
        """The expert's action for the current state and task."""
        if self.task is None:
            raise RuntimeError("Call reset() before expert_action().")
        return self._expert()

    def get_dataset(self, level: str | None = None, **kwargs: Any):
        """``(real, imaginary)`` datasets for ``level`` (default: this env's level).

        See :func:`imaginebench.data.get_dataset` for the keyword arguments.
        """
        if not _dataset_loader:  # only reachable by importing this module around the package
            raise RuntimeError("env.get_dataset needs the data layer: import imaginebench first.")
        return _dataset_loader[0](self.domain.env_id, level or self.level, **kwargs)

    def _reset_simulation(self, task: Task) -> np.ndarray:
        """The episode's start: the first drawn start state where ``task`` does not already hold
        (:meth:`Domain.holds`), passed through :meth:`_begin`."""
        for _ in range(self.reset_tries):
            state = self._sample_start(task)
            if state is not None and not self.domain.holds(task, state):
                return self._begin(task, state)
        raise RuntimeError(f"Could not draw a start state for {self.domain.env_id} task {task.name!r} where it "
                           f"does not already hold in {self.reset_tries} tries.")

    # ------------------------------------------------------------------ hooks
    @abc.abstractmethod
    def _sample_start(self, task: Task) -> np.ndarray | None:
        """Draw one candidate start for ``task`` into the simulator and return its state (use
        ``self.np_random``); ``None`` when this draw cannot start the task (it is drawn again)."""

    def _begin(self, task: Task, state: np.ndarray) -> np.ndarray:
        """Set up the episode from the accepted start ``state``; the state the episode starts in."""
        return state

    @abc.abstractmethod
    def _simulate(self, action: Any) -> np.ndarray:
        """Apply ``action`` to the simulator and return the next state vector."""

    @abc.abstractmethod
    def set_state(self, state: np.ndarray) -> None:
        """Put the simulator into ``state`` (used to re-simulate imagined transitions)."""

    @abc.abstractmethod
    def _expert(self) -> Any:
        """Expert action for ``self.state``, ``self.task``, ``self.progress``."""

    # ------------------------------------------------------------------ helpers
    def _check_action(self, action: Any) -> Any:
        """The action as the simulator takes it; anything else is a one-line ``ValueError``."""
        n = self.domain.action_dim
        if self.domain.discrete_actions:
            if type(action) is int or type(action) is np.int64:  # the common case, without numpy calls
                if not 0 <= action < n:
                    raise ValueError(f"Action {action} out of range: valid actions are 0..{n - 1}.")
                return int(action)
            try:
                a = np.asarray(action)
            except Exception:  # noqa: BLE001  (ragged sequences and other objects numpy refuses)
                a = None
            value = a.reshape(()).item() if a is not None and a.size == 1 and a.dtype.kind in "iuf" else None
            if value is None or a.dtype.kind == "f" and not (math.isfinite(value) and value == int(value)):
                raise ValueError(f"Expected one integer action in 0..{n - 1}, got {action!r}.")
            if not 0 <= int(value) < n:
                raise ValueError(f"Action {int(value)} out of range: valid actions are 0..{n - 1}.")
            return int(value)
        try:
            a = np.asarray(action, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise ValueError(f"Expected an action of {n} numbers in [-1, 1], got {action!r}.") from None
        if a.shape != (n,):
            raise ValueError(f"Expected an action of shape ({n},), got {a.shape}.")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"Action contains NaN or inf: {a}.")
        return np.clip(a, -1.0, 1.0)

    def _check_state(self, state: Any) -> np.ndarray:
        """A state vector for ``reset(options={"state": ...})``: ``state_dim`` finite numbers."""
        dim = self.domain.state_dim
        try:
            s = np.asarray(state, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"reset option 'state' must be {dim} numbers, got {type(state).__name__}.") from None
        if s.shape != (dim,):
            raise ValueError(f"reset option 'state' must have shape ({dim},), got {s.shape}.")
        if not np.all(np.isfinite(s)):
            raise ValueError("reset option 'state' holds NaN or inf.")
        return s

    def _obs(self) -> np.ndarray:
        return self.state.astype(np.float32)

    def _info(self) -> dict[str, Any]:
        assert self.task is not None
        return {
            "task": self.task.name,
            "instruction": self.instruction,
            "is_success": self.is_success,
            "level": self.level,
            "state": self.state.copy(),
        }
