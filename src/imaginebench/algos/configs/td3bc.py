"""TD3+BC (continuous actions only).

Fujimoto & Gu, "A Minimalist Approach to Offline Reinforcement Learning", NeurIPS 2021.
Defaults are the paper's (and d3rlpy's ``TD3PlusBCConfig``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imaginebench.algos.configs.base import AlgoConfig, BuildContext


@dataclass(frozen=True)
class TD3PlusBCConfig(AlgoConfig):
    """TD3 with a behaviour-cloning term in the actor loss.

    Attributes:
        actor_learning_rate: policy learning rate.
        critic_learning_rate: Q-function learning rate.
        tau: soft target-update rate.
        n_critics: Q-functions in the ensemble.
        target_smoothing_sigma: std of the noise added to target actions.
        target_smoothing_clip: clip of that noise.
        alpha: trade-off between Q maximisation and behaviour cloning (the paper's 2.5).
        update_actor_interval: critic steps per actor (and target) update.
    """

    discrete: ClassVar[bool] = False
    paper: ClassVar[str] = "Fujimoto & Gu, NeurIPS 2021"

    actor_learning_rate: float = 3e-4
    critic_learning_rate: float = 3e-4
    tau: float = 0.005
    n_critics: int = 2
    target_smoothing_sigma: float = 0.2
    target_smoothing_clip: float = 0.5
    alpha: float = 2.5
    update_actor_interval: int = 2

    def d3rlpy_config(self, ctx: BuildContext):
        from imaginebench.algos._d3rlpy import load

        enc = self.encoder_factory(ctx)
        return load().algos.TD3PlusBCConfig(
            **self.common_kwargs(ctx), actor_learning_rate=self.actor_learning_rate,
            critic_learning_rate=self.critic_learning_rate, actor_encoder_factory=enc, critic_encoder_factory=enc,
            tau=self.tau, n_critics=self.n_critics, target_smoothing_sigma=self.target_smoothing_sigma,
            target_smoothing_clip=self.target_smoothing_clip, alpha=self.alpha,
            update_actor_interval=self.update_actor_interval,
            **self.optimizers("actor_optim_factory", "critic_optim_factory"),
        )
