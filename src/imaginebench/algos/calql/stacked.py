"""Cal-QL, stacked over seeds (Nakamoto et al., "Cal-QL: Calibrated Offline RL Pre-Training for
Efficient Online Fine-Tuning", NeurIPS 2023): :class:`StackedCQL` with the policy's sampled
Q-values in the conservative term floored at each row's Monte-Carlo return-to-go (d3rlpy's
``CalQLImpl``)."""

from __future__ import annotations

import torch

from imaginebench.algos.cql.stacked import StackedCQL
from imaginebench.algos.vectorised.base import StackedBatch


class StackedCalQL(StackedCQL):
    """d3rlpy ``CalQL`` (Nakamoto et al., NeurIPS 2023): CQL whose policy Q-values in the
    conservative term are floored at the row's Monte-Carlo return-to-go."""

    algo_class = "CalQL"

    def floor(self, values: torch.Tensor, batch: StackedBatch) -> torch.Tensor:
        return torch.maximum(values, batch.returns_to_go(self.config.gamma).unsqueeze(0))
