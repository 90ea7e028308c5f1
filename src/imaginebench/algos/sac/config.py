"""Soft actor-critic used offline, continuous and discrete (a baseline without any
conservatism: it shows what the offline corrections of CQL/BCQ/TD3+BC buy).

Haarnoja et al., "Soft Actor-Critic", ICML 2018; Christodoulou, "Soft Actor-Critic for
Discrete Action Settings", arXiv:1910.07207, 2019.  Continuous defaults are d3rlpy's; the
discrete target copy runs every 1,000 steps instead of d3rlpy's Atari 8,000.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.algos.algo_config import AlgoConfig, BuildContext


@dataclass(frozen=True)
class SACConfig(AlgoConfig):
    """SAC for continuous actions.

    Attributes:
        actor_learning_rate: policy learning rate.
        critic_learning_rate: Q-function learning rate.
        temp_learning_rate: temperature learning rate.
        tau: soft target-update rate.
        n_critics: Q-functions in the ensemble.
        initial_temperature: initial entropy temperature.
    """

    discrete: ClassVar[bool] = False
    paper: ClassVar[str] = "Haarnoja et al., ICML 2018"

    actor_learning_rate: float = 3e-4
    critic_learning_rate: float = 3e-4
    temp_learning_rate: float = 3e-4
    tau: float = 0.005
    n_critics: int = 2
    initial_temperature: float = 1.0

    def d3rlpy_config(self, ctx: BuildContext):
        enc = self.encoder_factory(ctx)
        return load_d3rlpy().algos.SACConfig(
            **self.common_kwargs(ctx), actor_learning_rate=self.actor_learning_rate,
            critic_learning_rate=self.critic_learning_rate, temp_learning_rate=self.temp_learning_rate,
            actor_encoder_factory=enc, critic_encoder_factory=enc, tau=self.tau, n_critics=self.n_critics,
            initial_temperature=self.initial_temperature,
            **self.optimizers("actor_optim_factory", "critic_optim_factory", "temp_optim_factory"),
        )


@dataclass(frozen=True)
class DiscreteSACConfig(AlgoConfig):
    """SAC for discrete actions (expectations over the action distribution, no sampling).

    Attributes:
        actor_learning_rate: policy learning rate.
        critic_learning_rate: Q-function learning rate.
        temp_learning_rate: temperature learning rate.
        n_critics: Q-functions in the ensemble.
        initial_temperature: initial entropy temperature.
        target_update_interval: gradient steps between hard target-network copies.
    """

    discrete: ClassVar[bool] = True
    paper: ClassVar[str] = "Christodoulou, arXiv:1910.07207, 2019"

    actor_learning_rate: float = 3e-4
    critic_learning_rate: float = 3e-4
    temp_learning_rate: float = 3e-4
    n_critics: int = 2
    initial_temperature: float = 1.0
    target_update_interval: int = 1000

    def d3rlpy_config(self, ctx: BuildContext):
        enc = self.encoder_factory(ctx)
        return load_d3rlpy().algos.DiscreteSACConfig(
            **self.common_kwargs(ctx), actor_learning_rate=self.actor_learning_rate,
            critic_learning_rate=self.critic_learning_rate, temp_learning_rate=self.temp_learning_rate,
            actor_encoder_factory=enc, critic_encoder_factory=enc, n_critics=self.n_critics,
            initial_temperature=self.initial_temperature, target_update_interval=self.target_update_interval,
            **self.optimizers("actor_optim_factory", "critic_optim_factory", "temp_optim_factory"),
        )
