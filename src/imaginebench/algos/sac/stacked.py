"""Soft actor-critic (continuous actions), stacked over seeds (Haarnoja et al., "Soft Actor-Critic",
ICML 2018).

:class:`StackedSAC` reproduces d3rlpy's ``SACImpl``: critics regress (summed over the ensemble) on
``r + γ·(1 − terminal)·(min_i Q'_i(s', a') − T·log π(a'|s'))`` with one sample ``a' ~ π(s')``, then the
temperature and actor steps of :class:`~imaginebench.algos.cql.stacked.StackedCQL` (its steps 4–5),
then the soft target update.  CQL, Cal-QL and COMBO build on its squashed-Gaussian actor.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from imaginebench.algos.vectorised.base import StackedBatch, StackedTrainer, linear

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


class StackedSAC(StackedTrainer):
    """d3rlpy ``SAC`` (continuous actions); the squashed-Gaussian actor and its temperature that
    :class:`StackedCQL` shares."""

    algo_class = "SAC"

    def __init__(self, algos, generators=None) -> None:
        super().__init__(algos, generators)
        policy = self.impls[0].modules.policy
        if getattr(policy, "_use_std_parameter", False):
            raise ValueError("Stacked CQL needs the policy's log-std head (use_std_parameter off).")
        self.min_logstd, self.max_logstd = float(policy._min_logstd), float(policy._max_logstd)
        self.action_size = int(self.impls[0].action_size)

    # ------------------------------------------------------------------ networks
    def policy(self, x: torch.Tensor, params=None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(μ, log σ)`` of the policy on ``x (S, B, D)``."""
        p = self.params if params is None else params
        h = self.encode("policy._encoder", x, params=p)
        logstd = linear(p, "policy._logstd", h).clamp(self.min_logstd, self.max_logstd)
        return linear(p, "policy._mu", h), logstd

    def q(self, module: str, x: torch.Tensor, action: torch.Tensor, params=None) -> torch.Tensor:
        p = self.params if params is None else params
        return linear(p, f"{module}._fc", self.encode(f"{module}._encoder", x, action, params=p))

    def qs(self, prefix: str, x: torch.Tensor, action: torch.Tensor, params=None) -> torch.Tensor:
        """Every critic of ensemble ``prefix``: ``(C, S, B, 1)``."""
        return torch.stack([self.q(f"{prefix}.{i}", x, action, params) for i in range(self.n_critics)])

    def qs_repeated(self, prefix: str, x: torch.Tensor, n: int, action: torch.Tensor) -> torch.Tensor:
        """Every critic on each row of ``x (S, B, D)`` repeated ``n`` times with ``action (S, B·n, A)``:
        ``(C, S, B·n, 1)`` (the observation part of the first layer once per row)."""
        return torch.stack([linear(self.params, f"{prefix}.{i}._fc",
                                   self.encode_repeated(f"{prefix}.{i}._encoder", x, n, action))
                            for i in range(self.n_critics)])

    # ------------------------------------------------------------------ the squashed Gaussian
    def sample(self, mu: torch.Tensor, logstd: torch.Tensor, n: int | None) -> tuple[torch.Tensor, torch.Tensor]:
        """(tanh(raw), log π) of reparameterised samples, as d3rlpy's ``SquashedGaussianDistribution``:
        one per row (``n`` None: ``(S, B, A)``, ``(S, B, 1)``) or ``n`` per row (``(S, B, n, A)``,
        ``(S, B, n, 1)``)."""
        std = logstd.exp()
        if n is None:
            raw = mu + self.randn(mu.shape[1:]) * std
            loc, scale = mu, std
        else:
            eps = self.randn((n, *mu.shape[1:]))  # d3rlpy draws (n, B, A) per seed
            loc, scale = mu.unsqueeze(1), std.unsqueeze(1)
            raw = loc + eps * scale
        normal = -((raw - loc) ** 2) / (2 * scale**2) - scale.log() - _LOG_SQRT_2PI
        jacobian = 2 * (math.log(2) - raw - F.softplus(-2 * raw))
        log_prob = (normal - jacobian).sum(dim=-1, keepdim=True)
        action = torch.tanh(raw)
        if n is not None:  # (S, n, B, ·) -> (S, B, n, ·)
            action, log_prob = action.transpose(1, 2), log_prob.transpose(1, 2)
        return action, log_prob

    def policy_values(self, policy_obs: torch.Tensor, value_obs: torch.Tensor, n: int) -> tuple[torch.Tensor, ...]:
        """Q of ``n`` detached policy samples at ``policy_obs``, valued at ``value_obs``:
        ``(C, S, B, n)`` and their log-probabilities ``(S, B, n)``."""
        with torch.no_grad():
            mu, logstd = self.policy(policy_obs)
            actions, log_probs = self.sample(mu, logstd, n)
        s, b = value_obs.shape[:2]
        values = self.qs_repeated("q_funcs", value_obs, n, actions.reshape(s, b * n, -1))  # row b*n + j: obs b
        return values.view(self.n_critics, s, b, n), log_probs.view(s, b, n)

    def actor_step(self, obs: torch.Tensor, out: dict[str, torch.Tensor]) -> None:
        """Temperature (if it learns), then the actor on one reparameterised sample per row."""
        mu, logstd = self.policy(obs)
        action, log_prob = self.sample(mu, logstd, None)
        log_temp = "log_temp._parameter"
        if "temp_optim" in self.optimizers:
            targ_temp = log_prob.detach() - self.action_size
            temp_loss = -(self.params[log_temp].exp() * targ_temp).mean(dim=(1, 2))
            self.minimise("temp_optim", temp_loss)
            out["temp_loss"] = temp_loss.detach()
        else:  # d3rlpy reports a zero temperature loss when the temperature is fixed
            out["temp_loss"] = torch.zeros(self.n, device=self.device)
        temp = self.params[log_temp].detach().exp()
        q_t = self.qs("q_funcs", obs, action, params=self.detached("q_funcs")).min(dim=0).values
        actor_loss = (temp * log_prob - q_t).mean(dim=(1, 2))
        self.minimise("actor_optim", actor_loss)
        out.update(actor_loss=actor_loss.detach(), temp=temp.reshape(self.n))

    def update(self, batch: StackedBatch, grad_step: int) -> dict[str, torch.Tensor]:
        cfg = self.config
        obs, next_obs = batch.observations, batch.next_observations
        with torch.no_grad():
            mu, logstd = self.policy(next_obs)
            action, log_prob = self.sample(mu, logstd, None)
            temp = self.params["log_temp._parameter"].exp()
            target = self.qs("targ_q_funcs", next_obs, action).min(dim=0).values - temp * log_prob
            y = batch.rewards + cfg.gamma * target * (1 - batch.terminals)
        critic_loss = sum(((self.q(f"q_funcs.{i}", obs, batch.actions) - y) ** 2).mean(dim=(1, 2))
                          for i in range(self.n_critics))
        self.minimise("critic_optim", critic_loss)
        out = {"critic_loss": critic_loss.detach()}
        self.actor_step(obs, out)
        self.soft_update("targ_q_funcs", "q_funcs", cfg.tau)
        return out
