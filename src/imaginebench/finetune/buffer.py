"""The online replay buffer of a fine-tune, and batches that mix it with the offline data.

Transitions are stored as state vectors and instruction ids (the embedding is looked up
in a table when a batch is built, as in :class:`~imaginebench.algos.sampler.MixedReplaySource`)::

    states, next_states (N, S)   instr (N,) -> table (K, E)   actions (N, A)   rewards, terminals (N, 1)
    returns (N, 1): discounted return to the end of the transition's episode, filled when the
                    episode ends (-inf until then: Cal-QL's lower bound ``max(Q, G)`` is then Q)

With ``offline_ratio = f > 0`` every batch takes ``round(f·B)`` transitions from the offline
source (the start run's real + imaginary data; real data for a scratch start) and the rest
from the online buffer — RLPD's symmetric sampling at ``f = 0.5``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from imaginebench.algos._d3rlpy import load as _load_d3rlpy

_load_d3rlpy()

from d3rlpy.dataset import TransitionMiniBatch  # noqa: E402


class OnlineBuffer:
    """Fixed-capacity store of the transitions a fine-tune collected (never overwritten: the
    capacity is the env-step budget).

    Args:
        capacity: most transitions it holds.
        state_dim: length of a state vector.
        action_shape: ``()`` for discrete actions, ``(A,)`` for continuous ones.
        slots: sub-environments feeding it (each has one running episode).
        gamma: discount of the Monte-Carlo returns.
    """

    def __init__(self, capacity: int, state_dim: int, action_shape: Sequence[int], slots: int, gamma: float) -> None:
        self.capacity = int(capacity)
        self.gamma = float(gamma)
        self.states = np.zeros((capacity, state_dim), dtype=np.float32)
        self.next_states = np.zeros((capacity, state_dim), dtype=np.float32)
        self.instr = np.zeros(capacity, dtype=np.int64)
        width = int(np.prod(action_shape)) if len(action_shape) else 1
        self.actions = np.zeros((capacity, width), dtype=np.float32)
        self.rewards = np.zeros((capacity, 1), dtype=np.float32)
        self.terminals = np.zeros((capacity, 1), dtype=np.float32)
        self.returns = np.full((capacity, 1), -np.inf, dtype=np.float32)
        self.size = 0
        self.running: list[list[int]] = [[] for _ in range(slots)]
        """Buffer rows of each slot's unfinished episode."""

    def __len__(self) -> int:
        return self.size

    def add(self, states: np.ndarray, instr: np.ndarray, actions: np.ndarray, rewards: np.ndarray,
            next_states: np.ndarray, terminated: np.ndarray, done: np.ndarray) -> None:
        """One transition per slot; ``done`` marks slots whose episode ended (terminated or truncated)."""
        n = len(states)
        if self.size + n > self.capacity:
            raise ValueError(f"The online buffer holds {self.capacity} transitions; adding {n} to {self.size} "
                             "would overflow it.")
        rows = np.arange(self.size, self.size + n)
        self.states[rows] = states
        self.next_states[rows] = next_states
        self.instr[rows] = instr
        self.actions[rows] = np.asarray(actions, dtype=np.float32).reshape(n, -1)
        self.rewards[rows, 0] = rewards
        self.terminals[rows, 0] = terminated
        self.size += n
        for slot, row in enumerate(rows.tolist()):
            self.running[slot].append(row)
            if done[slot]:
                self._close(slot)

    def _close(self, slot: int) -> None:
        g = 0.0
        for row in reversed(self.running[slot]):
            g = float(self.rewards[row, 0]) + self.gamma * g
            self.returns[row, 0] = g
        self.running[slot] = []

    def batch(self, indices: np.ndarray, table: np.ndarray) -> tuple[TransitionMiniBatch, np.ndarray]:
        """The d3rlpy mini-batch of ``indices`` (observations ``state ⊕ table[instr]``) and its returns."""
        emb = table[self.instr[indices]]
        obs = np.concatenate([self.states[indices], emb], axis=1)
        nxt = np.concatenate([self.next_states[indices], emb], axis=1)
        n = len(indices)
        return TransitionMiniBatch(
            observations=obs, actions=self.actions[indices], rewards=self.rewards[indices],
            next_observations=nxt, next_actions=np.zeros_like(self.actions[indices]),
            terminals=self.terminals[indices], intervals=np.ones((n, 1), dtype=np.float32), transitions=(),
        ), self.returns[indices]

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        import torch

        n = self.size
        arrays = {k: torch.from_numpy(getattr(self, k)[:n].copy()) for k in
                  ("states", "next_states", "instr", "actions", "rewards", "terminals", "returns")}
        return {"size": n, "arrays": arrays, "running": [list(r) for r in self.running]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        n = int(state["size"])
        if n > self.capacity:
            raise ValueError(f"checkpoint holds {n} transitions, more than the budget {self.capacity}")
        for k, v in state["arrays"].items():
            getattr(self, k)[:n] = v.numpy()
        self.size = n
        self.running = [list(map(int, r)) for r in state["running"]]


def concat_batches(parts: Sequence[TransitionMiniBatch]) -> TransitionMiniBatch:
    """One mini-batch of ``parts`` in order."""
    if len(parts) == 1:
        return parts[0]
    cat = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
    return TransitionMiniBatch(
        observations=cat("observations"), actions=cat("actions"), rewards=cat("rewards"),
        next_observations=cat("next_observations"), next_actions=cat("next_actions"), terminals=cat("terminals"),
        intervals=cat("intervals"), transitions=(),
    )
