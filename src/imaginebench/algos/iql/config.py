"""Implicit Q-learning (continuous actions only; an extra beyond the paper's list).

Kostrikov et al., "Offline Reinforcement Learning with Implicit Q-Learning", ICLR 2022.
Defaults are the paper's locomotion settings (and d3rlpy's ``IQLConfig``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.algos.algo_config import AlgoConfig, BuildContext
from imaginebench.errors import UsageError


@dataclass(frozen=True)
class IQLConfig(AlgoConfig):
    """IQL: expectile value regression plus advantage-weighted policy extraction.

    Attributes:
        actor_learning_rate: policy learning rate.
        critic_learning_rate: Q- and value-function learning rate.
        tau: soft target-update rate.
        n_critics: Q-functions in the ensemble.
        expectile: expectile of the value regression (0.5 = mean, → 1 = max).
        weight_temp: inverse temperature of the advantage weights.
        max_weight: clip of the advantage weights.
    """

    discrete: ClassVar[bool] = False
    paper: ClassVar[str] = "Kostrikov et al., ICLR 2022"

    actor_learning_rate: float = 3e-4
    critic_learning_rate: float = 3e-4
    tau: float = 0.005
    n_critics: int = 2
    expectile: float = 0.7
    weight_temp: float = 3.0
    max_weight: float = 100.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.expectile < 1.0:
            raise UsageError(f"expectile must lie in (0, 1), got {self.expectile}.")

    def d3rlpy_config(self, ctx: BuildContext):
        enc = self.encoder_factory(ctx)
        return load_d3rlpy().algos.IQLConfig(
            **self.common_kwargs(ctx), actor_learning_rate=self.actor_learning_rate,
            critic_learning_rate=self.critic_learning_rate, actor_encoder_factory=enc, critic_encoder_factory=enc,
            value_encoder_factory=enc, tau=self.tau, n_critics=self.n_critics, expectile=self.expectile,
            weight_temp=self.weight_temp, max_weight=self.max_weight,
            **self.optimizers("actor_optim_factory", "critic_optim_factory"),
        )
