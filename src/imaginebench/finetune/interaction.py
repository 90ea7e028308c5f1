"""Environment interaction of a fine-tune: one level's env copies in a ``gymnasium.vector`` env.

Every sub-env is wrapped in :class:`TaskCycle`, so episodes visit the level's tasks in turn
(sub-env ``i`` of ``N`` takes tasks ``i, i+N, i+2N, …`` modulo the task count): over the run
the tasks are balanced as in evaluation.  Finished episodes reset in the same step
(gymnasium's ``SAME_STEP`` autoreset), so every vector step is exactly ``N`` environment steps.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from imaginebench.envs.registry import make
from imaginebench.errors import choice_error


class TaskCycle(gym.Wrapper):
    """Resets without a ``task`` option take the next task of a fixed cycle over the level's tasks."""

    def __init__(self, env: gym.Env, slot: int, stride: int) -> None:
        super().__init__(env)
        self.slot, self.stride, self.episodes = int(slot), int(stride), 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        options = dict(options or {})
        if "task" not in options:
            tasks = self.env.unwrapped.tasks
            options["task"] = tasks[(self.slot + self.episodes * self.stride) % len(tasks)]
            self.episodes += 1
        return self.env.reset(seed=seed, options=options)

    def snapshot(self) -> dict[str, Any]:
        return {"episodes": self.episodes, "env": self.env.unwrapped.snapshot()}

    def restore_slot(self, snapshots: list[dict[str, Any]]) -> None:
        """Restore this sub-env from its entry of every sub-env's snapshots (``vector.call`` passes all)."""
        snap = snapshots[self.slot]
        self.env.unwrapped.restore(snap["env"])
        self.episodes = int(snap["episodes"])


def _make(env_id: str, level: str, slot: int, stride: int) -> gym.Env:
    return TaskCycle(make(env_id, level, encode_instruction=False), slot, stride)


@dataclass
class Step:
    """What one vector step returned, per sub-env.

    Attributes:
        next_states: the state each action led to (the final state of an episode that ended).
        rewards, terminated, truncated: as gymnasium returns them.
        states: the state the next action starts from (a new episode's first state where one ended).
        instructions: the phrasing of the episode each sub-env now runs.
        successes: ``is_success`` at the last step of the episodes that ended (NaN elsewhere).
    """

    next_states: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    states: np.ndarray
    instructions: list[str]
    successes: np.ndarray


class Interaction:
    """``num_envs`` copies of ``env_id`` at ``level`` (raw state vectors), seeded from ``seed``."""

    def __init__(self, env_id: str, level: str, num_envs: int, seed: int, mode: str = "sync") -> None:
        modes = {"sync": gym.vector.SyncVectorEnv, "async": gym.vector.AsyncVectorEnv}
        if mode not in modes:
            raise choice_error("vectorization mode", mode, tuple(modes))
        factories = [functools.partial(_make, env_id, level, i, num_envs) for i in range(num_envs)]
        self.vec = modes[mode](factories, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
        self.num_envs = int(num_envs)
        self.seeds = [int(s) for s in np.random.SeedSequence([int(seed), 0x0F1E]).generate_state(num_envs)]

    def reset(self) -> tuple[np.ndarray, list[str]]:
        """First states and phrasings of every sub-env."""
        states, info = self.vec.reset(seed=self.seeds)
        return np.asarray(states, dtype=np.float32), [str(s) for s in info["instruction"]]

    def step(self, actions: np.ndarray) -> Step:
        states, rewards, terminated, truncated, info = self.vec.step(actions)
        states = np.asarray(states, dtype=np.float32)
        done = np.logical_or(terminated, truncated)
        next_states = states.copy()
        successes = np.full(self.num_envs, np.nan)
        if done.any():
            final_info = info["final_info"]
            for i in np.flatnonzero(done):
                next_states[i] = np.asarray(info["final_obs"][i], dtype=np.float32)
                successes[i] = float(bool(final_info["is_success"][i]))
        return Step(next_states, np.asarray(rewards, dtype=np.float32), np.asarray(terminated, dtype=bool),
                    np.asarray(truncated, dtype=bool), states, [str(s) for s in info["instruction"]], successes)

    def snapshot(self) -> list[dict[str, Any]]:
        return list(self.vec.call("snapshot"))

    def restore(self, snapshots: list[dict[str, Any]]) -> tuple[np.ndarray, list[str]]:
        """Put every sub-env back where :meth:`snapshot` found it; returns their states and phrasings."""
        if len(snapshots) != self.num_envs:
            raise ValueError(f"checkpoint has {len(snapshots)} environments, this run {self.num_envs}")
        self.vec.reset(seed=self.seeds)
        self.vec.call("restore_slot", snapshots)
        return (np.asarray([s["env"]["state"] for s in snapshots], dtype=np.float32),
                [str(s["env"]["instruction"]) for s in snapshots])

    def close(self) -> None:
        self.vec.close()
