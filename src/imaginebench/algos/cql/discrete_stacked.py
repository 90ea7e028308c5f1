"""Discrete CQL, stacked over seeds (Kumar et al., "Conservative Q-Learning for Offline
Reinforcement Learning", NeurIPS 2020).

Reproduces d3rlpy's ``DiscreteCQLImpl`` (double DQN with a Huber TD loss summed over the
ensemble, plus ``alpha``·(logsumexp Q − Q(s, a_data)) on the ensemble-mean Q) and its hard
target copy every ``target_update_interval`` steps.
"""

from __future__ import annotations

import torch

from imaginebench.algos.vectorised.base import StackedBatch, StackedTrainer, huber, linear


class StackedDiscreteCQL(StackedTrainer):
    """d3rlpy ``DiscreteCQL``."""

    algo_class = "DiscreteCQL"

    def q(self, module: str, x: torch.Tensor) -> torch.Tensor:
        return linear(self.params, f"{module}._fc", self.encode(f"{module}._encoder", x))

    def phase(self, grad_step: int) -> bool:
        return grad_step % self.config.target_update_interval == 0

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        cfg = self.config
        actions = batch.actions.unsqueeze(2)
        with torch.no_grad():
            online = torch.stack([self.q(f"q_funcs.{i}", batch.next_observations)
                                  for i in range(self.n_critics)]).mean(dim=0)
            best = online.argmax(dim=2, keepdim=True)
            target = torch.stack([self.q(f"targ_q_funcs.{i}", batch.next_observations).gather(2, best)
                                  for i in range(self.n_critics)]).min(dim=0).values
            y = batch.rewards + cfg.gamma * target * (1 - batch.terminals)
        values = [self.q(f"q_funcs.{i}", batch.observations) for i in range(self.n_critics)]
        td_loss = sum(huber(y - v.gather(2, actions)).mean(dim=(1, 2)) for v in values)
        mean_q = torch.stack(values).mean(dim=0)
        conservative = (torch.logsumexp(mean_q, dim=2, keepdim=True) - mean_q.gather(2, actions)).mean(dim=(1, 2))
        loss = td_loss + cfg.alpha * conservative
        self.minimise("optim", loss)
        if grad_step % cfg.target_update_interval == 0:
            self.hard_update("targ_q_funcs", "q_funcs")
        return {"loss": loss.detach(), "td_loss": td_loss.detach(), "conservative_loss": conservative.detach()}
