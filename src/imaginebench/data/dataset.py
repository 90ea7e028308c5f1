"""Episodes and episodic datasets.

An :class:`EpisodeDataset` stores N episodes column-wise (concatenated arrays plus
episode lengths), which makes saving, checksumming and the two loader views cheap::

    states      (sum_i (T_i + 1), D)   every episode's T_i + 1 states, one after another
    actions     (sum_i T_i,) or (sum_i T_i, A)
    rewards, terminals, truncations, successes   (sum_i T_i,)
    lengths     (N,)                   T_i
    task_ids, instruction_ids (N,)     indices into ``tasks`` / ``instructions`` tables

Views:

* :meth:`EpisodeDataset.padded` -> ``(N, T, D)`` arrays + a ``(N, T)`` mask (the original
  benchmark's layout; ``T`` = the longest episode);
* :meth:`EpisodeDataset.transitions` -> flat ``(M, D)`` transition arrays (M = sum T_i).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from imaginebench.language.encoders import as_encoder

SOURCES = ("real", "imaginary")


@dataclass(frozen=True, repr=False)
class Episode:
    """One rollout: ``T`` actions and ``T + 1`` states.

    Terminations (the task succeeded) and truncations (the horizon ran out) are kept apart.
    """

    task: str
    instruction: str
    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminals: np.ndarray
    truncations: np.ndarray
    successes: np.ndarray

    def __post_init__(self) -> None:
        t = len(self.actions)
        if self.states.shape[0] != t + 1:
            raise ValueError(f"Episode {self.task!r}: {self.states.shape[0]} states for {t} actions; need T+1.")
        for name in ("rewards", "terminals", "truncations", "successes"):
            if len(getattr(self, name)) != t:
                raise ValueError(f"Episode {self.task!r}: {name} has length {len(getattr(self, name))}, need {t}.")

    def __len__(self) -> int:
        return len(self.actions)

    @property
    def is_success(self) -> bool:
        return bool(self.successes.any())

    def __repr__(self) -> str:
        return (f"Episode(task={self.task!r}, T={len(self)}, states={self.states.shape}, "
                f"actions={self.actions.shape}, success={self.is_success})")


@dataclass(frozen=True)
class Transitions:
    """Flat transitions; ``episode_ids`` maps each row to its episode (and so its instruction)."""

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_observations: np.ndarray
    terminals: np.ndarray
    truncations: np.ndarray
    episode_ids: np.ndarray

    def __len__(self) -> int:
        return len(self.rewards)


@dataclass(frozen=True)
class Padded:
    """``(N, T, ...)`` view: ``states`` is ``(N, T + 1, D)``; ``mask[i, t]`` marks real steps."""

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminals: np.ndarray
    truncations: np.ndarray
    successes: np.ndarray
    mask: np.ndarray
    lengths: np.ndarray


@dataclass(frozen=True, repr=False)
class EpisodeDataset:
    """A set of episodes of one domain, level and source, stored column-wise.

    Attributes:
        metadata: domain, level, source, generator, seed, profile, ... (JSON-serialisable).
        tasks / instructions: string tables indexed by ``task_ids`` / ``instruction_ids``.
    """

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminals: np.ndarray
    truncations: np.ndarray
    successes: np.ndarray
    lengths: np.ndarray
    task_ids: np.ndarray
    instruction_ids: np.ndarray
    tasks: tuple[str, ...]
    instructions: tuple[str, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)

    ARRAYS = ("states", "actions", "rewards", "terminals", "truncations", "successes",
              "lengths", "task_ids", "instruction_ids")

    def __post_init__(self) -> None:
        n, total = len(self.lengths), int(np.sum(self.lengths))
        checks = {
            "states": (self.states.shape[0], total + n),
            "actions": (self.actions.shape[0], total),
            "rewards": (len(self.rewards), total),
            "terminals": (len(self.terminals), total),
            "truncations": (len(self.truncations), total),
            "successes": (len(self.successes), total),
            "task_ids": (len(self.task_ids), n),
            "instruction_ids": (len(self.instruction_ids), n),
        }
        for name, (got, want) in checks.items():
            if got != want:
                raise ValueError(f"Dataset column {name!r} has {got} rows; expected {want}.")
        if self.states.ndim != 2:
            raise ValueError(f"states must be 2-D (rows, state_dim); got shape {self.states.shape}.")
        if n and (self.task_ids.max() >= len(self.tasks) or self.instruction_ids.max() >= len(self.instructions)):
            raise ValueError("task_ids / instruction_ids point outside the string tables.")
        if np.any(self.lengths < 0):
            raise ValueError("Episode lengths must be non-negative.")

    # ------------------------------------------------------------------ building
    @classmethod
    def from_episodes(cls, episodes: Sequence[Episode], metadata: Mapping[str, Any] | None = None,
                      state_dim: int | None = None, action_shape: tuple[int, ...] = ()) -> "EpisodeDataset":
        """Pack ``episodes`` (in order) into one dataset."""
        task_table: dict[str, int] = {}
        instr_table: dict[str, int] = {}
        for ep in episodes:
            task_table.setdefault(ep.task, len(task_table))
            instr_table.setdefault(ep.instruction, len(instr_table))

        def cat(name: str, empty_shape: tuple[int, ...], dtype: Any) -> np.ndarray:
            parts = [np.asarray(getattr(ep, name), dtype=dtype) for ep in episodes]
            return np.concatenate(parts) if parts else np.zeros(empty_shape, dtype=dtype)

        dim = state_dim if state_dim is not None else (episodes[0].states.shape[1] if episodes else 0)
        if episodes:
            action_shape = tuple(np.asarray(episodes[0].actions).shape[1:])
        discrete = not action_shape
        return cls(
            states=cat("states", (0, dim), np.float32),
            actions=cat("actions", (0, *action_shape), np.int64 if discrete else np.float32),
            rewards=cat("rewards", (0,), np.float32),
            terminals=cat("terminals", (0,), bool),
            truncations=cat("truncations", (0,), bool),
            successes=cat("successes", (0,), bool),
            lengths=np.array([len(ep) for ep in episodes], dtype=np.int64),
            task_ids=np.array([task_table[ep.task] for ep in episodes], dtype=np.int32),
            instruction_ids=np.array([instr_table[ep.instruction] for ep in episodes], dtype=np.int32),
            tasks=tuple(task_table),
            instructions=tuple(instr_table),
            metadata=dict(metadata or {}),
        )

    @classmethod
    def concatenate(cls, parts: Iterable["EpisodeDataset"], metadata: Mapping[str, Any] | None = None) -> "EpisodeDataset":
        """Join datasets (string tables are merged)."""
        parts = list(parts)
        if not parts:
            raise ValueError("Nothing to concatenate.")
        tasks: dict[str, int] = {}
        instrs: dict[str, int] = {}
        task_ids, instr_ids = [], []
        for p in parts:
            tmap = np.array([tasks.setdefault(t, len(tasks)) for t in p.tasks] or [0], dtype=np.int32)
            imap = np.array([instrs.setdefault(s, len(instrs)) for s in p.instructions] or [0], dtype=np.int32)
            task_ids.append(tmap[p.task_ids])
            instr_ids.append(imap[p.instruction_ids])
        return cls(
            **{name: np.concatenate([getattr(p, name) for p in parts])
               for name in ("states", "actions", "rewards", "terminals", "truncations", "successes", "lengths")},
            task_ids=np.concatenate(task_ids).astype(np.int32),
            instruction_ids=np.concatenate(instr_ids).astype(np.int32),
            tasks=tuple(tasks), instructions=tuple(instrs),
            metadata=dict(metadata if metadata is not None else parts[0].metadata),
        )

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def num_transitions(self) -> int:
        return int(self.lengths.sum())

    @property
    def state_dim(self) -> int:
        return int(self.states.shape[1])

    @property
    def discrete_actions(self) -> bool:
        return self.actions.ndim == 1

    @property
    def action_starts(self) -> np.ndarray:
        """Index of each episode's first action in the flat action arrays."""
        return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64) if len(self) else np.zeros(0, np.int64)

    @property
    def state_starts(self) -> np.ndarray:
        """Index of each episode's first state in ``states``."""
        return self.action_starts + np.arange(len(self), dtype=np.int64)

    def episode(self, i: int) -> Episode:
        """Episode ``i`` as an :class:`Episode` (views, not copies)."""
        if not -len(self) <= i < len(self):
            raise IndexError(f"Episode index {i} out of range for {len(self)} episodes.")
        i = i % len(self)
        a0, s0, t = int(self.action_starts[i]), int(self.state_starts[i]), int(self.lengths[i])
        sl = slice(a0, a0 + t)
        return Episode(
            task=self.tasks[self.task_ids[i]], instruction=self.instructions[self.instruction_ids[i]],
            states=self.states[s0:s0 + t + 1], actions=self.actions[sl], rewards=self.rewards[sl],
            terminals=self.terminals[sl], truncations=self.truncations[sl], successes=self.successes[sl],
        )

    def __iter__(self) -> Iterator[Episode]:
        return (self.episode(i) for i in range(len(self)))

    def episode_success(self) -> np.ndarray:
        """``(N,)`` bool: whether each episode succeeded at some step."""
        ep, _ = self._positions()
        return np.bincount(ep[self.successes], minlength=len(self)) > 0

    def episode_instructions(self) -> list[str]:
        return [self.instructions[i] for i in self.instruction_ids]

    def episode_tasks(self) -> list[str]:
        return [self.tasks[i] for i in self.task_ids]

    # ------------------------------------------------------------------ views
    def _positions(self) -> tuple[np.ndarray, np.ndarray]:
        """(episode index, step index) of every flat action row."""
        ep = np.repeat(np.arange(len(self), dtype=np.int64), self.lengths)
        step = np.arange(self.num_transitions, dtype=np.int64) - np.repeat(self.action_starts, self.lengths)
        return ep, step

    def padded(self, horizon: int | None = None) -> Padded:
        """The ``(N, T, ...)`` view; ``T`` defaults to the longest episode."""
        n, t_max = len(self), int(self.lengths.max(initial=0))
        t = t_max if horizon is None else int(horizon)
        if t < t_max:
            raise ValueError(f"horizon {t} is shorter than the longest episode ({t_max}).")
        ep, step = self._positions()

        def scatter(values: np.ndarray, steps: int) -> np.ndarray:
            out = np.zeros((n, steps, *values.shape[1:]), dtype=values.dtype)
            out[ep, step] = values
            return out

        states = np.zeros((n, t + 1, self.state_dim), dtype=self.states.dtype)
        s_ep = np.repeat(np.arange(n, dtype=np.int64), self.lengths + 1)
        s_step = np.arange(len(self.states), dtype=np.int64) - np.repeat(self.state_starts, self.lengths + 1)
        states[s_ep, s_step] = self.states
        mask = np.zeros((n, t), dtype=bool)
        mask[ep, step] = True
        return Padded(states=states, actions=scatter(self.actions, t), rewards=scatter(self.rewards, t),
                      terminals=scatter(self.terminals, t), truncations=scatter(self.truncations, t),
                      successes=scatter(self.successes, t), mask=mask, lengths=self.lengths.copy())

    def transitions(self) -> Transitions:
        """Flat ``(s, a, r, s', terminal, truncation)`` rows plus each row's episode index."""
        ep, _ = self._positions()
        obs_idx = np.arange(self.num_transitions, dtype=np.int64) + ep
        return Transitions(observations=self.states[obs_idx], actions=self.actions, rewards=self.rewards,
                           next_observations=self.states[obs_idx + 1], terminals=self.terminals,
                           truncations=self.truncations, episode_ids=ep)

    def arrays(self, encoder: Any = None, *, raw: bool = False) -> dict[str, np.ndarray]:
        """Flat per-transition arrays with D4RL/Minari names, for any framework.

        ``observations``/``next_observations``: float32 ``state ⊕ instruction embedding`` rows, as
        ``imaginebench.make`` and ``imaginebench.evaluate`` build them (``encoder``: a name, an
        encoder object, or ``None`` for the package's default; ``raw=True``: the state vectors
        alone).  ``actions``: int64 ``(n,)`` for a discrete domain, float32 ``(n, action_dim)``
        for a continuous one.  ``rewards`` float32; ``terminals``/``timeouts`` bool;
        ``episode_ends`` bool (each episode's last transition: an imagined rollout may end without
        a flag); ``instructions``: each row's instruction string; ``source``: ``real`` or ``imaginary``.
        """
        t = self.transitions()
        states, next_states = t.observations.astype(np.float32), t.next_observations.astype(np.float32)
        ids = self.instruction_ids[t.episode_ids]
        if raw:
            observations, next_observations = states, next_states
        else:
            table = np.asarray(as_encoder(encoder).encode(list(self.instructions)), dtype=np.float32)
            observations = np.concatenate([states, table[ids]], axis=1)
            next_observations = np.concatenate([next_states, table[ids]], axis=1)
        actions = (self.actions.astype(np.int64) if self.discrete_actions else self.actions.astype(np.float32))
        source = str(self.metadata.get("source", "real"))
        ends = np.zeros(len(ids), dtype=bool)  # the last transition of each episode (an imagined one may end unflagged)
        ends[np.cumsum(self.lengths)[self.lengths > 0] - 1] = True
        return {"observations": observations, "actions": actions, "rewards": self.rewards.astype(np.float32),
                "next_observations": next_observations, "terminals": self.terminals.astype(bool),
                "timeouts": self.truncations.astype(bool), "episode_ends": ends,
                "instructions": np.asarray(self.instructions, dtype=str)[ids] if len(ids) else np.zeros(0, str),
                "source": np.full(len(ids), source)}

    def summary(self) -> dict[str, Any]:
        """Counts and rates for ``data info``."""
        succ = self.episode_success()
        return {
            **dict(self.metadata),
            "episodes": len(self),
            "transitions": self.num_transitions,
            "tasks": len(self.tasks),
            "instructions": len(self.instructions),
            "success_rate": float(succ.mean()) if len(self) else 0.0,
            "mean_length": float(self.lengths.mean()) if len(self) else 0.0,
            "state_dim": self.state_dim,
            "action_shape": list(self.actions.shape[1:]) or "discrete",
        }

    def __repr__(self) -> str:
        md = self.metadata
        return (f"EpisodeDataset({md.get('domain', '?')}/{md.get('level', '?')}/{md.get('source', '?')}: "
                f"{len(self)} episodes, {self.num_transitions} transitions, states={self.states.shape}, "
                f"actions={self.actions.shape})")
