"""Conservative Q-learning, continuous and discrete.

Kumar et al., "Conservative Q-Learning for Offline Reinforcement Learning", NeurIPS 2020.
Continuous defaults are d3rlpy's ``CQLConfig``.  The discrete defaults differ from d3rlpy's
Atari settings (learning rate 6.25e-5, hard target update every 8,000 steps), which barely
move a value function within the benchmark's smaller profiles; here: 3e-4 and every 1,000.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.algos.algo_config import AlgoConfig, BuildContext

PAPER = "Kumar et al., NeurIPS 2020"


@dataclass(frozen=True)
class CQLConfig(AlgoConfig):
    """CQL on top of SAC for continuous actions.

    Attributes:
        actor_learning_rate: policy learning rate.
        critic_learning_rate: Q-function learning rate.
        temp_learning_rate: SAC temperature learning rate.
        alpha_learning_rate: learning rate of the conservative weight's Lagrange multiplier.
        tau: soft target-update rate.
        n_critics: Q-functions in the ensemble.
        initial_temperature: initial SAC temperature.
        initial_alpha: initial Lagrange multiplier.
        alpha_threshold: target gap of the Lagrangian conservative term.
        conservative_weight: weight of the conservative loss.
        n_action_samples: actions sampled to estimate log-sum-exp of Q.
    """

    discrete: ClassVar[bool] = False
    paper: ClassVar[str] = PAPER

    actor_learning_rate: float = 1e-4
    critic_learning_rate: float = 3e-4
    temp_learning_rate: float = 1e-4
    alpha_learning_rate: float = 1e-4
    tau: float = 0.005
    n_critics: int = 2
    initial_temperature: float = 1.0
    initial_alpha: float = 1.0
    alpha_threshold: float = 10.0
    conservative_weight: float = 5.0
    n_action_samples: int = 10

    def d3rlpy_config(self, ctx: BuildContext):
        enc = self.encoder_factory(ctx)
        return load_d3rlpy().algos.CQLConfig(
            **self.common_kwargs(ctx), actor_learning_rate=self.actor_learning_rate,
            critic_learning_rate=self.critic_learning_rate, temp_learning_rate=self.temp_learning_rate,
            alpha_learning_rate=self.alpha_learning_rate, actor_encoder_factory=enc, critic_encoder_factory=enc,
            tau=self.tau, n_critics=self.n_critics, initial_temperature=self.initial_temperature,
            initial_alpha=self.initial_alpha, alpha_threshold=self.alpha_threshold,
            conservative_weight=self.conservative_weight, n_action_samples=self.n_action_samples,
            **self.optimizers("actor_optim_factory", "critic_optim_factory", "temp_optim_factory",
                              "alpha_optim_factory"),
        )


@dataclass(frozen=True)
class DiscreteCQLConfig(AlgoConfig):
    """CQL on top of double DQN for discrete actions.

    Attributes:
        learning_rate: Q-function learning rate.
        n_critics: Q-functions in the ensemble.
        target_update_interval: gradient steps between hard target-network copies.
        alpha: weight of the conservative (log-sum-exp minus data Q) loss.
    """

    discrete: ClassVar[bool] = True
    paper: ClassVar[str] = PAPER

    learning_rate: float = 3e-4
    n_critics: int = 1
    target_update_interval: int = 1000
    alpha: float = 1.0

    def d3rlpy_config(self, ctx: BuildContext):
        return load_d3rlpy().algos.DiscreteCQLConfig(
            **self.common_kwargs(ctx), learning_rate=self.learning_rate, encoder_factory=self.encoder_factory(ctx),
            n_critics=self.n_critics, target_update_interval=self.target_update_interval, alpha=self.alpha,
            **self.optimizers("optim_factory"),
        )
