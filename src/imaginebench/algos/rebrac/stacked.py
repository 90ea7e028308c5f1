"""ReBRAC, stacked over seeds (Tarasov et al., "Revisiting the Minimalist Approach to Offline
Reinforcement Learning", NeurIPS 2023): TD3+BC's schedule with penalties in both critic target and
actor loss."""

from __future__ import annotations

import torch

from imaginebench.algos.td3bc.stacked import StackedTD3PlusBC
from imaginebench.algos.vectorised.base import StackedBatch


class StackedReBRAC(StackedTD3PlusBC):
    """d3rlpy ``ReBRAC`` (Tarasov et al., NeurIPS 2023): TD3 whose critic target subtracts
    ``β₂·‖a' − a'_data‖²`` (the smoothed target action against the dataset's next action) and whose
    actor minimises ``mean(−Q_min(s, π(s)) / mean|Q_min| + β₁·‖π(s) − a‖²)`` (squared error summed
    over the action); the same schedule of actor and target updates as TD3+BC."""

    algo_class = "ReBRAC"

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        cfg = self.config
        with torch.no_grad():
            next_action = self.target_action(batch)
            target = self.min_target_q(batch, next_action)
            penalty = ((next_action - batch.next_actions) ** 2).sum(dim=2, keepdim=True)
            y = batch.rewards + cfg.gamma * (target - cfg.critic_beta * penalty) * (1 - batch.terminals)
        out = self.critic_step(batch, y)
        if grad_step % cfg.update_actor_interval == 0:
            pi = self.policy("policy", batch.observations)
            frozen = self.detached("q_funcs")
            q_t = torch.stack([self.q(f"q_funcs.{i}", batch.observations, pi, params=frozen)
                               for i in range(self.n_critics)]).min(dim=0).values
            lam = 1.0 / q_t.abs().mean(dim=(1, 2)).detach()
            bc = ((batch.actions - pi) ** 2).sum(dim=2, keepdim=True)
            actor_loss = (lam.view(-1, 1, 1) * -q_t + cfg.actor_beta * bc).mean(dim=(1, 2))
            self.minimise("actor_optim", actor_loss)
            self.soft_update("targ_q_funcs", "q_funcs", cfg.tau)
            self.soft_update("targ_policy", "policy", cfg.tau)
            out.update(actor_loss=actor_loss.detach(), bc_loss=bc.mean(dim=(1, 2)).detach())
        return out
