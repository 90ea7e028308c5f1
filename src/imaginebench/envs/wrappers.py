"""Wrappers returned by :func:`imaginebench.make`."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from imaginebench.language import get_encoder


class BenchmarkEnv(gym.Wrapper):
    """Forwards the benchmark API (tasks, expert, datasets, set-state) of the inner env."""

    @property
    def tasks(self) -> tuple[str, ...]:
        return self.env.unwrapped.tasks

    @property
    def domain(self):
        return self.env.unwrapped.domain

    def expert_action(self) -> Any:
        return self.env.unwrapped.expert_action()

    def set_state(self, state: np.ndarray) -> None:
        self.env.unwrapped.set_state(state)

    def get_dataset(self, level: str | None = None, **kwargs: Any):
        return self.env.unwrapped.get_dataset(level, **kwargs)


class InstructionEmbedding(BenchmarkEnv):
    """Appends the sentence embedding of the episode's instruction to the state vector.

    Observation: ``state (D) ⊕ embedding (E)`` as float32.  The embedding is computed once
    per episode from the encoder's store; the first time a level is made, every phrasing of
    the level is embedded in one batched call and stored.
    """

    def __init__(self, env: gym.Env, encoder: str | None = None) -> None:
        super().__init__(env)

        self.encoder = get_encoder(encoder)
        unwrapped = env.unwrapped
        if hasattr(unwrapped, "domain") and hasattr(unwrapped, "level") and hasattr(self.encoder, "prepare"):
            # the level's whole bank in one batched call now, not one string per reset later
            self.encoder.prepare(unwrapped.domain.instruction_bank(unwrapped.level),
                                 what=f"{unwrapped.domain.env_id} {unwrapped.level}", progress=True)
        inner = env.observation_space
        dim = inner.shape[0] + self.encoder.dim
        high = np.full(dim, np.inf, dtype=np.float32)
        self.observation_space = gym.spaces.Box(-high, high, dtype=np.float32)
        self._state_dim = inner.shape[0]
        self._template = np.zeros(dim, dtype=np.float32)
        """The episode's observation with its embedding in place; each step copies it and writes the state."""

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self._template[self._state_dim:] = self.encoder.encode([info["instruction"]])[0]
        return self._append(obs), info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._append(obs), reward, terminated, truncated, info

    def _append(self, obs: np.ndarray) -> np.ndarray:
        out = self._template.copy()
        out[: self._state_dim] = obs
        return out


class VectorInstructionEmbedding(gym.vector.VectorWrapper):
    """The vector-env form of :class:`InstructionEmbedding`: sub-envs return raw states and their
    ``info["instruction"]``; this wrapper looks the embeddings of all sub-envs up in one batched
    call (the encoder's store) and appends them, so observations equal the single env's."""

    def __init__(self, env: gym.vector.VectorEnv, encoder: str | None = None, banks: tuple[str, ...] = ()) -> None:
        super().__init__(env)

        self.encoder = get_encoder(encoder)
        if banks and hasattr(self.encoder, "prepare"):
            self.encoder.prepare(banks, progress=True)
        inner = env.single_observation_space
        dim = inner.shape[0] + self.encoder.dim
        high = np.full(dim, np.inf, dtype=np.float32)
        self.single_observation_space = gym.spaces.Box(-high, high, dtype=np.float32)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, env.num_envs)
        self._embeddings = np.zeros((env.num_envs, self.encoder.dim), dtype=np.float32)
        self._texts: list[str | None] = [None] * env.num_envs

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return self._append(obs, info), info

    def step(self, actions: Any):
        obs, rewards, terminations, truncations, info = self.env.step(actions)
        return self._append(obs, info), rewards, terminations, truncations, info

    def _append(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        texts = info.get("instruction")
        if texts is not None:
            present = info.get("_instruction")
            rows = [i for i in range(len(texts)) if (present is None or present[i]) and texts[i] != self._texts[i]]
            if rows:  # only sub-envs whose instruction changed (a new episode with another phrasing)
                self._embeddings[rows] = self.encoder.encode([str(texts[i]) for i in rows])
                for i in rows:
                    self._texts[i] = texts[i]
        return np.concatenate([np.asarray(obs, dtype=np.float32), self._embeddings], axis=1)
