"""Calibrated Q-learning (continuous actions only).

Nakamoto et al., "Cal-QL: Calibrated Offline RL Pre-Training for Efficient Online
Fine-Tuning", NeurIPS 2023.  CQL whose push-down term never pushes the policy's Q-values below
the Monte-Carlo return of the data (``max(Q(s, π(s)), G(s))``), so the critic stays calibrated
for online fine-tuning.  The implementation is d3rlpy's ``CalQL``; its hyperparameters are
CQL's, and so are our defaults (:class:`~imaginebench.algos.cql.config.CQLConfig`, d3rlpy's
values).  The paper's Adroit/Kitchen runs use the conservative weight 1–5; we keep CQL's 5 so
that Cal-QL and CQL differ only in the calibration.

d3rlpy computes each transition's return with a Python loop over the batch; we compute every
transition's discounted return once per run (:meth:`MixedReplaySource.returns_to_go`, same
formula) and hand the batch's rows to the update.  No discrete version exists (d3rlpy has none,
and the paper is about continuous control).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.algos.algo_config import BuildContext
from imaginebench.algos.cql.config import CQLConfig


@dataclass(frozen=True)
class CalQLConfig(CQLConfig):
    """Cal-QL: CQL with the policy's Q-values in the conservative term floored at the data's
    Monte-Carlo return.  Attributes: those of :class:`CQLConfig`."""

    paper: ClassVar[str] = "Nakamoto et al., NeurIPS 2023"

    def d3rlpy_config(self, ctx: BuildContext):
        cql = super().d3rlpy_config(ctx)
        return load_d3rlpy().algos.CalQLConfig(**{f: getattr(cql, f) for f in cql.__dataclass_fields__})

    def update(self, algo, source, batch_size: int) -> dict[str, float]:
        from imaginebench.algos.sampler import fast_update

        idx = source.sample_indices(batch_size)
        returns = source.returns_to_go(self.gamma)[idx]
        return fast_update(algo, source.batch_from_indices(idx), returns)
