"""Batch-constrained Q-learning (continuous actions), stacked over seeds (Fujimoto et al.,
"Off-Policy Deep Reinforcement Learning without Exploration", ICML 2019).

:class:`StackedBCQ` reproduces d3rlpy's ``BCQImpl`` step for step and draw for draw of each seed's
generator:

1. the conditional VAE (imitator): ``z = μ + σ·ε`` from the encoder on ``(s, a)`` (log σ clamped
   to [−4, 15]), the decoder's reconstruction of ``a`` from ``(s, z)``; loss
   ``mse(a', a) + β·mean KL(N(μ, σ) ‖ N(0, 1))``;
2. the critics regress on ``r + γ·(1 − terminal)·max_j [(1 − λ)·max_i Q'_i + λ·min_i Q'_i](s', a'_j)``
   with ``a'_j`` the target perturbation model applied to ``n`` decoder actions at ``s'`` (latents
   drawn from N(0, 1), clipped to ±0.5; the decoder just updated in step 1);
3. the perturbation actor maximises ``Q_1(s, ξ(s, decoder(s, z)))`` with one fresh latent per row;
4. soft target updates of critics and actor.

d3rlpy's decoder returns its linear head as it is (its ``with_squash=True`` default skips the
tanh); the perturbation clamps the sum to [−1, 1].  The ``n`` sampled actions per next state run
through :meth:`StackedTrainer.encode_repeated`: each next observation's part of a first layer once.
"""

from __future__ import annotations

import torch

from imaginebench.algos.vectorised.base import StackedBatch, StackedTrainer, linear


class StackedBCQ(StackedTrainer):
    """d3rlpy ``BCQ`` (continuous actions)."""

    algo_class = "BCQ"

    def __init__(self, algos, generators=None) -> None:
        super().__init__(algos, generators)
        modules = self.impls[0].modules
        self.action_size = int(self.impls[0].action_size)
        self.latent_size = int(modules.vae_encoder.latent_size)
        self.min_logstd = float(modules.vae_encoder._min_logstd)
        self.max_logstd = float(modules.vae_encoder._max_logstd)
        self.scale = float(modules.policy._scale)
        impl = self.impls[0]
        if int(impl._rl_start_step) > 0:
            raise ValueError("Stacked BCQ updates the critics and actor from the first step (rl_start_step 0); "
                             "train a delayed start seed by seed.")

    # ------------------------------------------------------------------ networks
    def decode(self, x: torch.Tensor, latent: torch.Tensor, repeat: int | None = None) -> torch.Tensor:
        """The VAE decoder's action (its linear head, no tanh) for ``latent``; with ``repeat``, every
        row of ``x (S, B, D)`` is taken ``repeat`` times in a row (``latent (S, B·repeat, L)``)."""
        if repeat is None:
            h = self.encode("vae_decoder._encoder", x, latent)
        else:
            h = self.encode_repeated("vae_decoder._encoder", x, repeat, latent)
        return linear(self.params, "vae_decoder._fc", h)

    def perturb(self, module: str, x: torch.Tensor, action: torch.Tensor, repeat: int | None = None) -> torch.Tensor:
        """``clamp(a + Φ·tanh(ξ(s, a)), ±1)`` of the perturbation model ``module``."""
        if repeat is None:
            h = self.encode(f"{module}._encoder", x, action)
        else:
            h = self.encode_repeated(f"{module}._encoder", x, repeat, action)
        residual = self.scale * torch.tanh(linear(self.params, f"{module}._fc", h))
        return (action + residual).clamp(-1.0, 1.0)

    def q(self, module: str, x: torch.Tensor, action: torch.Tensor, params=None) -> torch.Tensor:
        p = self.params if params is None else params
        return linear(p, f"{module}._fc", self.encode(f"{module}._encoder", x, action, params=p))

    def latent(self, rows: int) -> torch.Tensor:
        """``(S, rows, L)`` latents as d3rlpy draws them for sampling: N(0, 1) clipped to ±0.5."""
        return self.randn((rows, self.latent_size)).clamp(-0.5, 0.5)

    # ------------------------------------------------------------------ the update
    def imitator_step(self, batch: StackedBatch) -> torch.Tensor:
        obs, actions = batch.observations, batch.actions
        h = self.encode("vae_encoder._encoder", obs, actions)
        mu = linear(self.params, "vae_encoder._mu", h)
        std = linear(self.params, "vae_encoder._logstd", h).clamp(self.min_logstd, self.max_logstd).exp()
        kl = 0.5 * (std**2 + mu**2 - 1 - torch.log(std**2))  # torch's Normal-Normal KL against N(0, 1)
        z = mu + std * self.randn(mu.shape[1:])
        reconstruction = self.decode(obs, z)
        loss = ((reconstruction - actions) ** 2).mean(dim=(1, 2)) + self.config.beta * kl.mean(dim=(1, 2))
        self.minimise("vae_optim", loss)
        return loss.detach()

    def target(self, batch: StackedBatch) -> torch.Tensor:
        cfg = self.config
        n = cfg.n_action_samples
        next_obs = batch.next_observations
        s, b = next_obs.shape[:2]
        with torch.no_grad():
            sampled = self.decode(next_obs, self.latent(b * n), repeat=n)
            actions = self.perturb("targ_policy", next_obs, sampled, repeat=n)
            values = torch.stack([
                linear(self.params, f"targ_q_funcs.{i}._fc",
                       self.encode_repeated(f"targ_q_funcs.{i}._encoder", next_obs, n, actions))
                for i in range(self.n_critics)]).view(self.n_critics, s, b, n)
            mixed = (1.0 - cfg.lam) * values.max(dim=0).values + cfg.lam * values.min(dim=0).values
            best = mixed.max(dim=2, keepdim=True).values  # (S, B, 1)
            return batch.rewards + cfg.gamma * best * (1 - batch.terminals)

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        obs = batch.observations
        out = {"vae_loss": self.imitator_step(batch)}
        y = self.target(batch)
        critic_loss = sum(((self.q(f"q_funcs.{i}", obs, batch.actions) - y) ** 2).mean(dim=(1, 2))
                          for i in range(self.n_critics))
        self.minimise("critic_optim", critic_loss)
        with torch.no_grad():
            sampled = self.decode(obs, self.latent(obs.shape[1]))
        action = self.perturb("policy", obs, sampled)
        actor_loss = -self.q("q_funcs.0", obs, action, params=self.detached("q_funcs.0")).mean(dim=(1, 2))
        self.minimise("actor_optim", actor_loss)
        self.soft_update("targ_q_funcs", "q_funcs", self.config.tau)
        self.soft_update("targ_policy", "policy", self.config.tau)
        out.update(critic_loss=critic_loss.detach(), actor_loss=actor_loss.detach())
        return out


__all__ = ["StackedBCQ"]
