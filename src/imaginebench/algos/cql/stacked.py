"""Conservative Q-learning (continuous), stacked over seeds (Kumar et al., "Conservative Q-Learning
for Offline Reinforcement Learning", NeurIPS 2020).

:class:`StackedCQL` reproduces d3rlpy's ``CQLImpl`` (a SAC actor with a tanh-squashed Gaussian policy), step for
step and draw for draw of each seed's generator:

1. critic target ``r + γ·(1 − terminal)·min_i Q'_i(s', tanh μ(s'))`` (d3rlpy's default
   deterministic backup);
2. the conservative term per critic, ``w·(mean_b logsumexp[Q(s, a~π(s)) − log π, Q(s, a~π(s')) −
   log π, Q(s, a~U(−1, 1)) − log 0.5^|A|] − mean_b Q(s, a_data) − threshold)`` with ``n`` samples of
   each (policy samples detached);
3. the Lagrange multiplier ``α = exp(log α)`` steps on ``−α·conservative`` (if it learns), then the
   critics minimise the TD error (summed over the ensemble) ``+ Σ_i α·conservative_i`` with the
   updated ``α``;
4. the temperature ``T`` steps on ``−T·(log π + |A|)`` (if it learns), then the actor minimises
   ``mean(T·log π(a|s) − min_i Q_i(s, a))`` with one reparameterised sample and the updated ``T``;
5. soft target update of the critics.
"""

from __future__ import annotations

import math

import torch

from imaginebench.algos.sac.stacked import StackedSAC
from imaginebench.algos.vectorised.base import StackedBatch


class StackedCQL(StackedSAC):
    """d3rlpy ``CQL`` (continuous actions)."""

    algo_class = "CQL"

    def __init__(self, algos, generators=None) -> None:
        super().__init__(algos, generators)
        cfg = self.config
        if cfg.soft_q_backup or cfg.max_q_backup:
            raise ValueError("Stacked CQL reproduces the deterministic backup only (soft_q_backup and max_q_backup "
                             "off); train other backups seed by seed.")

    # ------------------------------------------------------------------ the update
    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        cfg = self.config
        obs, next_obs = batch.observations, batch.next_observations
        with torch.no_grad():
            next_mu, _ = self.policy(next_obs)
            target = self.qs("targ_q_funcs", next_obs, torch.tanh(next_mu)).min(dim=0).values
            y = batch.rewards + cfg.gamma * target * (1 - batch.terminals)

        data_values = self.qs("q_funcs", obs, batch.actions)  # (C, S, B, 1)
        conservative = self.conservative(batch, data_values)  # (S, C)

        out: dict[str, torch.Tensor] = {}
        log_alpha = "log_alpha._parameter"
        if "alpha_optim" in self.optimizers:
            alpha_loss = -(self.params[log_alpha].exp().clamp(0, 1e6) * conservative.detach().unsqueeze(1)).mean(
                dim=(1, 2))
            self.minimise("alpha_optim", alpha_loss)
        alpha = self.params[log_alpha].detach().exp().clamp(0, 1e6).reshape(self.n, 1)
        td = sum(((data_values[i] - y) ** 2).mean(dim=(1, 2)) for i in range(self.n_critics))
        scaled = (alpha * conservative).sum(dim=1)
        critic_loss = td + scaled
        self.minimise("critic_optim", critic_loss)
        out.update(critic_loss=critic_loss.detach(), conservative_loss=scaled.detach(), alpha=alpha.reshape(self.n))

        self.actor_step(obs, out)
        self.soft_update("targ_q_funcs", "q_funcs", cfg.tau)
        return out

    def logsumexp(self, obs: torch.Tensor, next_obs: torch.Tensor, batch: StackedBatch) -> torch.Tensor:
        """CQL's importance-sampled ``log Σ_a exp Q(s, a)`` at ``obs (S, B, D)``: ``(C, S, B, 1)``
        (policy samples at ``obs`` and at ``next_obs``, and uniform actions)."""
        n = self.config.n_action_samples
        values_t, log_probs_t = self.policy_values(obs, obs, n)
        values_tp1, log_probs_tp1 = self.policy_values(next_obs, obs, n)
        values_t, values_tp1 = self.floor(values_t, batch), self.floor(values_tp1, batch)
        s, b = obs.shape[:2]
        random_actions = self.rand_symmetric((b * n, self.action_size))
        random_values = self.qs_repeated("q_funcs", obs, n, random_actions).view(self.n_critics, s, b, n)
        random_log_prob = math.log(0.5**self.action_size)
        stacked = torch.cat([values_t - log_probs_t, values_tp1 - log_probs_tp1, random_values - random_log_prob],
                            dim=3)
        return torch.logsumexp(stacked, dim=3, keepdim=True)

    def conservative(self, batch: StackedBatch, data_values: torch.Tensor) -> torch.Tensor:
        """The conservative term per seed and critic, ``(S, C)``, before the multiplier α."""
        cfg = self.config
        logsumexp = self.logsumexp(batch.observations, batch.next_observations, batch)
        return (cfg.conservative_weight * ((logsumexp - data_values).mean(dim=(2, 3)) - cfg.alpha_threshold)).t()

    def floor(self, values: torch.Tensor, batch: StackedBatch) -> torch.Tensor:
        """The policy's sampled Q-values in the conservative term (CQL: as they are)."""
        return values
