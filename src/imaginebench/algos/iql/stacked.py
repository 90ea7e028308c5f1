"""Implicit Q-learning, stacked over seeds (Kostrikov et al., "Offline Reinforcement Learning
with Implicit Q-Learning", ICLR 2022).

Reproduces d3rlpy's ``IQLImpl``: the critic step regresses each Q on ``r + γ·(1 − terminal)·V(s')``
and V on the ``expectile`` of ``min_i Q'_i(s, a)`` (one optimiser over Qs and V); the actor step
maximises ``exp(β·(min_i Q'_i(s, a) − V(s)))``-weighted (clipped at ``max_weight``) log-likelihood
of the data's action under ``N(tanh(mu), std)`` with d3rlpy's state-independent, sigmoid-bounded
log-std; then the Q targets move by ``tau``.
"""

from __future__ import annotations

import math

import torch

from imaginebench.algos.vectorised.base import StackedBatch, StackedTrainer, linear

MIN_LOGSTD, MAX_LOGSTD = -5.0, 2.0
"""The bounds d3rlpy's IQL gives its policy's log-std."""


class StackedIQL(StackedTrainer):
    """d3rlpy ``IQL``."""

    algo_class = "IQL"

    def q(self, module: str, x: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return linear(self.params, f"{module}._fc", self.encode(f"{module}._encoder", x, action))

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return linear(self.params, "value_func._fc", self.encode("value_func._encoder", x))

    def min_target_q(self, batch: StackedBatch) -> torch.Tensor:
        return torch.stack([self.q(f"targ_q_funcs.{i}", batch.observations, batch.actions)
                            for i in range(self.n_critics)]).min(dim=0).values

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        cfg = self.config
        with torch.no_grad():
            y = batch.rewards + cfg.gamma * self.value(batch.next_observations) * (1 - batch.terminals)
            q_t = self.min_target_q(batch)
        q_loss = sum(((self.q(f"q_funcs.{i}", batch.observations, batch.actions) - y) ** 2).mean(dim=(1, 2))
                     for i in range(self.n_critics))
        diff = q_t - self.value(batch.observations)
        weight = (cfg.expectile - (diff < 0.0).float()).abs().detach()
        v_loss = (weight * diff ** 2).mean(dim=(1, 2))
        critic_loss = q_loss + v_loss
        self.minimise("critic_optim", critic_loss)

        mu = linear(self.params, "policy._mu", self.encode("policy._encoder", batch.observations))
        logstd = MIN_LOGSTD + torch.sigmoid(self.params["policy._logstd"]) * (MAX_LOGSTD - MIN_LOGSTD)
        log_prob = (-((batch.actions - torch.tanh(mu)) ** 2) / (2 * torch.exp(logstd) ** 2) - logstd
                    - math.log(math.sqrt(2 * math.pi))).sum(dim=2, keepdim=True)
        with torch.no_grad():
            adv = q_t - self.value(batch.observations)
            w = (cfg.weight_temp * adv).exp().clamp(max=cfg.max_weight)
        actor_loss = -(w * log_prob).mean(dim=(1, 2))
        self.minimise("actor_optim", actor_loss)
        self.soft_update("targ_q_funcs", "q_funcs", cfg.tau)
        return {"critic_loss": critic_loss.detach(), "q_loss": q_loss.detach(), "v_loss": v_loss.detach(),
                "actor_loss": actor_loss.detach()}
