"""TD3+BC, stacked over seeds (Fujimoto & Gu, "A Minimalist Approach to Offline Reinforcement
Learning", NeurIPS 2021).

Reproduces d3rlpy's ``TD3PlusBCImpl``: a clipped double-Q critic regressed every step on
``r + γ·(1 − terminal)·min_i Q'_i(s', clip(π'(s') + clip(σ·ε, ±c), ±1))``, and every
``update_actor_interval`` steps the actor loss ``−λ·Q_1(s, π(s)) + ‖π(s) − a‖²`` with
``λ = α / mean|Q_1|``, followed by soft target updates of critics and actor.  The target noise
``ε`` comes from each seed's own generator.
"""

from __future__ import annotations

import torch

from imaginebench.algos.vectorised.base import StackedBatch, StackedTrainer, linear


class StackedTD3PlusBC(StackedTrainer):
    """d3rlpy ``TD3PlusBC``."""

    algo_class = "TD3PlusBC"
    regulariser_loss = "bc_loss"
    """The name d3rlpy reports the actor's regulariser under."""

    def policy(self, module: str, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(linear(self.params, f"{module}._fc", self.encode(f"{module}._encoder", x)))

    def q(self, module: str, x: torch.Tensor, action: torch.Tensor, params=None) -> torch.Tensor:
        p = self.params if params is None else params
        return linear(p, f"{module}._fc", self.encode(f"{module}._encoder", x, action, params=p))

    def phase(self, grad_step: int) -> bool:
        return grad_step % self.config.update_actor_interval == 0

    def target_action(self, batch: StackedBatch) -> torch.Tensor:
        """The target policy's action at the next observation with TD3's clipped smoothing noise."""
        cfg = self.config
        action = self.policy("targ_policy", batch.next_observations)
        noise = (cfg.target_smoothing_sigma * self.randn(action.shape[1:])).clamp(
            -cfg.target_smoothing_clip, cfg.target_smoothing_clip)
        return (action + noise).clamp(-1.0, 1.0)

    def critic_step(self, batch: StackedBatch, y: torch.Tensor) -> dict[str, torch.Tensor]:
        """The critics regressed on ``y`` (squared error, summed over the ensemble)."""
        critic_loss = sum(((self.q(f"q_funcs.{i}", batch.observations, batch.actions) - y) ** 2).mean(dim=(1, 2))
                          for i in range(self.n_critics))
        self.minimise("critic_optim", critic_loss)
        return {"critic_loss": critic_loss.detach()}

    def min_target_q(self, batch: StackedBatch, next_action: torch.Tensor) -> torch.Tensor:
        return torch.stack([self.q(f"targ_q_funcs.{i}", batch.next_observations, next_action)
                            for i in range(self.n_critics)]).min(dim=0).values

    def regulariser_target(self, batch: StackedBatch, pi: torch.Tensor) -> torch.Tensor:
        """The action the actor is pulled towards (TD3+BC: the batch's own action)."""
        return batch.actions

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        cfg = self.config
        with torch.no_grad():
            target = self.min_target_q(batch, self.target_action(batch))
            y = batch.rewards + cfg.gamma * target * (1 - batch.terminals)
        out = self.critic_step(batch, y)
        if grad_step % cfg.update_actor_interval == 0:
            pi = self.policy("policy", batch.observations)
            q_t = self.q("q_funcs.0", batch.observations, pi, params=self.detached("q_funcs.0"))
            lam = cfg.alpha / q_t.abs().mean(dim=(1, 2)).detach()
            bc_loss = ((self.regulariser_target(batch, pi) - pi) ** 2).mean(dim=(1, 2))
            actor_loss = lam * -q_t.mean(dim=(1, 2)) + bc_loss
            self.minimise("actor_optim", actor_loss)
            self.soft_update("targ_q_funcs", "q_funcs", cfg.tau)
            self.soft_update("targ_policy", "policy", cfg.tau)
            out.update({"actor_loss": actor_loss.detach(), self.regulariser_loss: bc_loss.detach()})
        return out
