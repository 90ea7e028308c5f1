"""Discrete BCQ, stacked over seeds (Fujimoto et al., "Benchmarking Batch Deep Reinforcement
Learning Algorithms", arXiv:1910.01708, 2019).

Reproduces d3rlpy's ``DiscreteBCQImpl``: double DQN whose next action is the argmax of the
online ensemble-mean Q over the actions the imitator finds likely (log-probability within
``log(action_flexibility)`` of the most likely action), a Huber TD loss summed over the
ensemble, plus the imitator's loss (cross-entropy + ``beta``·mean squared log-probability, as
in :class:`~imaginebench.algos.bc.stacked.StackedDiscreteBC`), one optimiser for both, and
a hard target copy every ``target_update_interval`` steps.  With ``share_encoder`` (the
default) the imitator reads the Q-function's encoder: the stacked trainer keeps one tensor for
it under both names, and each update computes its features once per batch for both heads
(d3rlpy computes them twice), so the step does ~40% fewer matmul FLOPs for the same maths.
"""

from __future__ import annotations

import math

import torch

from imaginebench.algos.vectorised.base import StackedBatch, StackedTrainer, linear
from imaginebench.algos.vectorised.base import huber


class StackedDiscreteBCQ(StackedTrainer):
    """d3rlpy ``DiscreteBCQ``."""

    algo_class = "DiscreteBCQ"

    def __init__(self, algos, generators=None) -> None:
        super().__init__(algos, generators)
        first = "._encoder.mlp.0.weight"
        self.shared = self.params["imitator" + first] is self.params["q_funcs.0" + first]

    def heads(self, x: torch.Tensor, imitator: bool = True) -> tuple[list[torch.Tensor], torch.Tensor | None]:
        """The online Q values of every critic on ``x`` and the imitator's logits; with a shared
        encoder its features are computed once and read by both heads (d3rlpy runs it twice)."""
        features = [self.encode(f"q_funcs.{i}._encoder", x) for i in range(self.n_critics)]
        values = [linear(self.params, f"q_funcs.{i}._fc", h) for i, h in enumerate(features)]
        if not imitator:
            return values, None
        h = features[0] if self.shared else self.encode("imitator._encoder", x)
        return values, linear(self.params, "imitator._fc", h)

    def phase(self, grad_step: int) -> bool:
        return grad_step % self.config.target_update_interval == 0

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        cfg = self.config
        actions = batch.actions.unsqueeze(2)
        with torch.no_grad():
            values, logits = self.heads(batch.next_observations)
            log_probs = torch.log_softmax(logits, dim=2)
            mask = (log_probs - log_probs.max(dim=2, keepdim=True).values > math.log(cfg.action_flexibility)).float()
            online = torch.stack(values).mean(dim=0)
            best = ((online - online.min(dim=2, keepdim=True).values + 1e-5) * mask).argmax(dim=2, keepdim=True)
            target = torch.stack([self.q_target(i, batch.next_observations).gather(2, best)
                                  for i in range(self.n_critics)]).min(dim=0).values
            y = batch.rewards + cfg.gamma * target * (1 - batch.terminals)
        values, logits = self.heads(batch.observations)
        td_loss = sum(huber(y - v.gather(2, actions)).mean(dim=(1, 2)) for v in values)
        # d3rlpy penalises ``Categorical(logits=…).logits``, i.e. log-probabilities
        log_pi = torch.log_softmax(logits, dim=2)
        imitation = -log_pi.gather(2, actions).mean(dim=(1, 2))
        regularization = cfg.beta * (log_pi ** 2).mean(dim=(1, 2))
        imitator_loss = imitation + regularization
        loss = td_loss + imitator_loss
        self.minimise("optim", loss)
        if grad_step % cfg.target_update_interval == 0:
            self.hard_update("targ_q_funcs", "q_funcs")
        return {"loss": loss.detach(), "td_loss": td_loss.detach(), "imitator_loss": imitator_loss.detach()}

    def q_target(self, i: int, x: torch.Tensor) -> torch.Tensor:
        return linear(self.params, f"targ_q_funcs.{i}._fc", self.encode(f"targ_q_funcs.{i}._encoder", x))
