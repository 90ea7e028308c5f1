"""Stacked batches for S seeds, gathered from data resident on the training device.

:class:`StackedSampler` copies a :class:`~imaginebench.algos.sampler.MixedReplaySource`'s
flat arrays to the device once.  Each step, seed s draws its batch indices from its own numpy
generator — the very draws :meth:`MixedReplaySource.sample_indices` makes for a lone run with
that seed — and the ``(S, B)`` index array is the only thing sent to the device; states,
embeddings, actions and rewards are gathered there::

    idx (S, B) -> rows = obs_rows[idx] -> obs = [states[rows] | embeddings[instr[idx]]]   (S, B, D)
                                          next = [states[rows + 1] | embeddings[instr[idx]]]

So a seed sees the same batches whether it trains alone, stacked, on a CPU or on a GPU.  The
observation scaler is per column, so the state and embedding tables are standardised once when
they are copied: a gathered row is already standardised (a per-step division of the batch cost
a fifth of a BC step).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from imaginebench.algos.sampler import MixedReplaySource
from imaginebench.algos.vectorised.base import StackedBatch


class StackedSampler:
    """Batches of S seeds from one source (see the module docstring).

    Args:
        source: the flattened real/imaginary data.
        rngs: one numpy generator per seed (``np.random.default_rng(seed)`` for a fresh run,
            restored from the checkpoint when resuming).
        device: torch device of the trainer.
        observation_scaler: the algorithm's fitted d3rlpy observation scaler, or ``None``.
        action_scaler: the algorithm's fitted d3rlpy action scaler, or ``None`` (applied to the
            action tables once, as ``torch_batch`` applies it to every batch).
    """

    def __init__(self, source: MixedReplaySource, rngs: Sequence[np.random.Generator], device: str | torch.device,
                 observation_scaler: Any = None, action_scaler: Any = None) -> None:
        self.source = source
        self.rngs = list(rngs)
        self.device = torch.device(device)
        dev = self.device
        states = torch.from_numpy(source._states).to(dev)
        embeddings = torch.from_numpy(source.embeddings).to(dev)
        if observation_scaler is not None:
            mean = torch.as_tensor(np.asarray(observation_scaler.mean), dtype=torch.float32, device=dev)
            std = torch.as_tensor(np.asarray(observation_scaler.std), dtype=torch.float32, device=dev) + float(
                observation_scaler.eps)
            d = source.state_dim
            states = (states - mean[:d]) / std[:d]
            embeddings = (embeddings - mean[d:]) / std[d:]
        self.states, self.embeddings = states.contiguous(), embeddings.contiguous()
        self.obs_rows = torch.from_numpy(source._obs_rows).to(dev)
        self.instr = torch.from_numpy(source._instr.astype(np.int64)).to(dev)
        actions, next_actions = torch.from_numpy(source._actions), torch.from_numpy(source._next_actions)
        self.actions = (actions[:, 0].long() if source.discrete else actions).to(dev)
        self.next_actions = (next_actions[:, 0].long() if source.discrete else next_actions).to(dev)
        if action_scaler is not None:
            self.actions = action_scaler.transform(self.actions).contiguous()
            self.next_actions = action_scaler.transform(self.next_actions).contiguous()
        self.rewards = torch.from_numpy(source._rewards).to(dev)
        self.terminals = torch.from_numpy(source._terminals).to(dev)
        self._returns: dict[float, torch.Tensor] = {}
        self._ring: list[tuple[torch.Tensor, Any]] = []
        self._slot = 0

    def indices(self, batch_size: int) -> np.ndarray:
        """``(S, B)`` flat transition indices, row s drawn from seed s's generator."""
        return np.stack([self.source.sample_indices(batch_size, rng) for rng in self.rngs])

    def batch(self, indices: np.ndarray | torch.Tensor) -> StackedBatch:
        """The stacked batch of ``indices (S, B)`` (observations standardised); a tensor of
        indices already on the device is used as it is (a CUDA graph's static input)."""
        idx = indices if isinstance(indices, torch.Tensor) else torch.from_numpy(indices)
        if self.device.type == "cuda" and idx.device.type != "cuda":
            idx = self.upload(idx)
        rows = self.obs_rows[idx]
        emb = self.embeddings[self.instr[idx]]
        obs = torch.cat([self.states[rows], emb], dim=2)
        return StackedBatch(observations=obs, actions=self.actions[idx], rewards=self.rewards[idx],
                            terminals=self.terminals[idx],
                            next_observations=lambda: torch.cat([self.states[rows + 1], emb], dim=2),
                            next_actions=lambda: self.next_actions[idx],
                            returns=lambda gamma: self._returns_table(gamma)[idx])

    def _returns_table(self, gamma: float) -> torch.Tensor:
        """Every transition's Monte-Carlo return-to-go (:meth:`MixedReplaySource.returns_to_go`), on
        the device, once per ``gamma``."""
        gamma = float(gamma)
        if gamma not in self._returns:
            self._returns[gamma] = torch.from_numpy(self.source.returns_to_go(gamma)).to(self.device)
        return self._returns[gamma]

    def upload(self, idx: torch.Tensor) -> torch.Tensor:
        """Copy indices to the GPU without blocking the host: through a ring of pinned buffers,
        each reused only after the copy that last read it has finished."""
        if not self._ring or self._ring[0][0].shape != idx.shape:
            self._ring = [(torch.empty(idx.shape, dtype=idx.dtype).pin_memory(), None) for _ in range(8)]
        buffer, event = self._ring[self._slot]
        if event is not None:
            event.synchronize()
        buffer.copy_(idx)
        out = buffer.to(self.device, non_blocking=True)
        event = torch.cuda.Event()
        event.record()
        self._ring[self._slot] = (buffer, event)
        self._slot = (self._slot + 1) % len(self._ring)
        return out

    def sample(self, batch_size: int) -> StackedBatch:
        return self.batch(self.indices(batch_size))
