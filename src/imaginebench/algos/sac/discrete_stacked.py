"""Discrete SAC, stacked over seeds (Christodoulou, "Soft Actor-Critic for Discrete Action
Settings", arXiv:1910.07207, 2019).

Reproduces d3rlpy's ``DiscreteSACImpl``: the critics regress (Huber, summed over the ensemble)
on ``r + γ·(1 − terminal)·Σ_a π(a|s')·(min_i Q'_i(s', a) − T·log π(a|s'))``; then the temperature
``T = exp(log_temp)`` steps towards 98% of the maximum entropy, and the actor minimises
``Σ_a π(a|s)·(T·log π(a|s) − min_i Q_i(s, a))`` with the updated temperature; the targets are
copied every ``target_update_interval`` steps.  Expectations over actions, no sampling.
"""

from __future__ import annotations

import math

import torch

from imaginebench.algos.vectorised.base import StackedBatch, StackedTrainer, linear
from imaginebench.algos.vectorised.base import huber


class StackedDiscreteSAC(StackedTrainer):
    """d3rlpy ``DiscreteSAC`` (with a learned temperature)."""

    algo_class = "DiscreteSAC"

    def __init__(self, algos, generators=None) -> None:
        super().__init__(algos, generators)
        if "temp_optim" not in self.optimizers:
            raise ValueError("Stacked discrete SAC needs a learned temperature (temp_learning_rate > 0); "
                             "train a fixed temperature seed by seed.")

    def phase(self, grad_step: int) -> bool:
        return grad_step % self.config.target_update_interval == 0

    def q(self, module: str, x: torch.Tensor) -> torch.Tensor:
        return linear(self.params, f"{module}._fc", self.encode(f"{module}._encoder", x))

    def log_probs(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(linear(self.params, "policy._fc", self.encode("policy._encoder", x)), dim=2)

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        cfg = self.config
        n_actions = self.impls[0].action_size
        with torch.no_grad():
            log_pi = self.log_probs(batch.next_observations)
            temp = self.params["log_temp._parameter"].exp()
            target_q = torch.stack([self.q(f"targ_q_funcs.{i}", batch.next_observations)
                                    for i in range(self.n_critics)]).min(dim=0).values
            target = (log_pi.exp() * (target_q - temp * log_pi)).sum(dim=2, keepdim=True)
            y = batch.rewards + cfg.gamma * target * (1 - batch.terminals)
        actions = batch.actions.unsqueeze(2)
        critic_loss = sum(huber(y - self.q(f"q_funcs.{i}", batch.observations).gather(2, actions)).mean(dim=(1, 2))
                          for i in range(self.n_critics))
        self.minimise("critic_optim", critic_loss)

        with torch.no_grad():
            q_t = torch.stack([self.q(f"q_funcs.{i}", batch.observations)
                               for i in range(self.n_critics)]).min(dim=0).values
        log_pi = self.log_probs(batch.observations)
        pi = log_pi.exp()
        with torch.no_grad():
            targ_temp = (pi * log_pi).sum(dim=2, keepdim=True) + 0.98 * (-math.log(1 / n_actions))
        temp_loss = -(self.params["log_temp._parameter"].exp() * targ_temp).mean(dim=(1, 2))
        self.minimise("temp_optim", temp_loss)
        temp = self.params["log_temp._parameter"].detach().exp()
        actor_loss = (pi * (temp * log_pi - q_t)).sum(dim=2).mean(dim=1)
        self.minimise("actor_optim", actor_loss)
        if grad_step % cfg.target_update_interval == 0:
            self.hard_update("targ_q_funcs", "q_funcs")
        return {"critic_loss": critic_loss.detach(), "temp_loss": temp_loss.detach(),
                "temp": temp.reshape(self.n), "actor_loss": actor_loss.detach()}
