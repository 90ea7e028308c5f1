"""COMBO's critic and actor, stacked over seeds (Yu et al., NeurIPS 2021; the package's
:mod:`imaginebench.algos.combo.algorithm`).

Each seed keeps what is its own in a lone run — its fitted dynamics ensemble (loaded from the
shared cache: the fit depends on the data alone), its FIFO model buffer and its rollouts, run by
its own d3rlpy algorithm with its current policy — and the critic and actor updates are stacked:
:class:`StackedCQL`'s update with the conservative term of COMBO (log-sum-exp over the batch's
model rows, data values over its source rows).

A lone run draws its rollouts' and model batch's randomness from torch's global generator before
the update's own draws.  Here each seed's host-side work runs with the global generator swapped
for that seed's generator, so every seed consumes exactly its lone run's random stream (tested
against :meth:`COMBO.combo_update`).
"""

from __future__ import annotations

from typing import Callable, TypeVar

import torch

from imaginebench.algos.combo.config import split_batch
from imaginebench.algos.vectorised.base import StackedBatch
from imaginebench.algos.cql.stacked import StackedCQL, StackedSAC

T = TypeVar("T")


class StackedCOMBO(StackedCQL):
    """The package's ``COMBO``."""

    algo_class = "COMBO"
    skip_modules = ("dynamics", "model_buffer")
    graphable_update = False

    def __init__(self, algos, generators=None) -> None:
        StackedSAC.__init__(self, algos, generators)  # COMBO has no soft or max backup to refuse
        if "alpha_optim" in self.optimizers:
            raise ValueError("Stacked COMBO reproduces the fixed multiplier (no Lagrangian).")
        self.n_real = self.n_model = 0

    def source_rows(self, batch_size: int) -> int:
        """The source share of a batch of ``batch_size``; the model share is remembered for :meth:`step`."""
        n_real, self.n_model = split_batch(batch_size, self.config.real_ratio)
        return n_real

    def _as_seed(self, seed: int, work: Callable[[], T]) -> T:
        """``work()`` with torch's global generator standing in for seed ``seed``'s generator."""
        outer = torch.get_rng_state()
        torch.set_rng_state(self.generators[seed].get_state())
        try:
            return work()
        finally:
            self.generators[seed].set_state(torch.get_rng_state())
            torch.set_rng_state(outer)

    def step(self, batch: StackedBatch) -> None:
        """``batch`` holds the seeds' source rows; each seed's model rows are appended (after its
        rollout round when one is due, as :meth:`COMBO.combo_update` does)."""
        if not self.n_model:
            raise RuntimeError("Ask source_rows(batch_size) for the batch's source share before stepping COMBO.")
        n_real, n_model = batch.observations.shape[1], self.n_model
        parts = []
        for s, algo in enumerate(self.algos):
            parts.append(self._as_seed(s, lambda algo=algo, s=s: algo.model_rows(
                n_model, self.grad_step, before_rollout=lambda: self.write_back_module("policy", s))))
        obs, next_obs, actions, rewards, terminals = (torch.stack(p).to(self.device) for p in zip(*parts))
        mixed = StackedBatch(observations=torch.cat([batch.observations, obs], dim=1),
                             actions=torch.cat([batch.actions, actions], dim=1),
                             rewards=torch.cat([batch.rewards, rewards], dim=1),
                             terminals=torch.cat([batch.terminals, terminals], dim=1),
                             next_observations=torch.cat([batch.next_observations, next_obs], dim=1))
        self.n_real = n_real
        super().step(mixed)

    def conservative(self, batch: StackedBatch, data_values: torch.Tensor) -> torch.Tensor:
        """``β·(mean over model rows of log Σ_a exp Q − mean over source rows of Q(s, a))``."""
        n = self.n_real
        obs, next_obs = batch.observations, batch.next_observations
        logsumexp = self.logsumexp(obs[:, n:], next_obs[:, n:], batch)  # (C, S, model rows, 1)
        gap = logsumexp.mean(dim=(2, 3)) - data_values[:, :, :n].mean(dim=(2, 3))
        return (self.config.conservative_weight * gap).t()


__all__ = ["StackedCOMBO"]
