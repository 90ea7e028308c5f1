"""Behaviour cloning, stacked over seeds (Pomerleau, Neural Computation 1991).

Reproduces d3rlpy's ``BCImpl`` (deterministic policy: MSE between ``tanh(mu)`` and the data's
action) and ``DiscreteBCImpl`` (cross-entropy plus ``beta``·mean squared log-probability: d3rlpy reads the
"logits" of a torch ``Categorical``, which torch has already normalised).
"""

from __future__ import annotations

import torch

from imaginebench.algos.vectorised.base import StackedBatch, StackedTrainer, linear


class StackedBC(StackedTrainer):
    """d3rlpy ``BC`` with ``policy_type="deterministic"``."""

    algo_class = "BC"

    def __init__(self, algos, generators=None) -> None:
        super().__init__(algos, generators)
        if self.config.policy_type != "deterministic":
            raise ValueError("Stacked BC supports the deterministic policy only; train stochastic BC seed by seed.")

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        mu = linear(self.params, "imitator._fc", self.encode("imitator._encoder", batch.observations))
        loss = ((torch.tanh(mu) - batch.actions) ** 2).mean(dim=(1, 2))
        self.minimise("optim", loss)
        return {"loss": loss.detach()}


class StackedDiscreteBC(StackedTrainer):
    """d3rlpy ``DiscreteBC``."""

    algo_class = "DiscreteBC"

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        logits = linear(self.params, "imitator._fc", self.encode("imitator._encoder", batch.observations))
        # d3rlpy penalises ``Categorical(logits=…).logits``, which torch normalises to log-probabilities
        log_probs = torch.log_softmax(logits, dim=2)
        penalty = (log_probs ** 2).mean(dim=(1, 2))
        imitation = -log_probs.gather(2, batch.actions.unsqueeze(2)).mean(dim=(1, 2))
        regularization = self.config.beta * penalty
        loss = imitation + regularization
        self.minimise("optim", loss)
        return {"loss": loss.detach(), "imitation_loss": imitation.detach(),
                "regularization_loss": regularization.detach()}
