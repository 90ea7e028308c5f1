"""PRDC, stacked over seeds (Ran et al., "Policy Regularization with Dataset Constraint for Offline
Reinforcement Learning", ICML 2023): TD3+BC's update with the actor pulled toward the nearest
dataset point's action (:mod:`imaginebench.algos.prdc.index`)."""

from __future__ import annotations

import torch

from imaginebench.algos.td3bc.stacked import StackedTD3PlusBC
from imaginebench.algos.vectorised.base import StackedBatch


class StackedPRDC(StackedTD3PlusBC):
    """The package's ``IndexedPRDC`` (d3rlpy's ``PRDC``; Ran et al., ICML 2023): TD3+BC whose actor is
    pulled towards the action of the dataset point nearest to ``(β·s) ⊕ π(s)`` instead of the
    batch's action.  Each seed asks its own algorithm's :class:`~imaginebench.algos.prdc.index.NeighbourIndex`
    with its own policy's (detached) actions; seeds sharing one index are asked in one query."""

    algo_class = "IndexedPRDC"
    regulariser_loss = "dc_loss"

    def __init__(self, algos, generators=None) -> None:
        super().__init__(algos, generators)
        if any(getattr(impl, "index", None) is None for impl in self.impls):
            raise ValueError("Stacked PRDC needs every seed's neighbour index attached (prdc.index.attach_index).")

    def regulariser_target(self, batch: StackedBatch, pi: torch.Tensor) -> torch.Tensor:
        obs, actions = batch.observations, pi.detach()
        indexes = [impl.index for impl in self.impls]
        if all(index is indexes[0] for index in indexes):
            s, b = obs.shape[:2]
            nearest = indexes[0].neighbour_actions(obs.reshape(s * b, -1), actions.reshape(s * b, -1)).view(s, b, -1)
        else:
            nearest = torch.stack([index.neighbour_actions(obs[i], actions[i]) for i, index in enumerate(indexes)])
        return nearest.to(pi.dtype)
