"""TD3+BC (continuous actions only).

Fujimoto & Gu, "A Minimalist Approach to Offline Reinforcement Learning", NeurIPS 2021.
Defaults are the paper's (and d3rlpy's ``TD3PlusBCConfig``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.algos.algo_config import AlgoConfig, BuildContext, check_lr_decay
from imaginebench.errors import UsageError


@dataclass(frozen=True)
class TD3Family(AlgoConfig):
    """Fields shared by the TD3-based algorithms (TD3+BC, ReBRAC, PRDC); not registered itself.

    Attributes:
        actor_learning_rate: policy learning rate.
        critic_learning_rate: Q-function learning rate.
        tau: soft target-update rate.
        n_critics: Q-functions in the ensemble.
        target_smoothing_sigma: std of the noise added to target actions.
        target_smoothing_clip: clip of that noise.
        update_actor_interval: critic steps per actor (and target) update.
        lr_decay: ``none`` (constant rates) or ``cosine`` (each rate anneals to 0 over the steps
            its optimiser takes in the run: the actor's every ``update_actor_interval``-th).
    """

    discrete: ClassVar[bool] = False

    actor_learning_rate: float = 3e-4
    critic_learning_rate: float = 3e-4
    tau: float = 0.005
    n_critics: int = 2
    target_smoothing_sigma: float = 0.2
    target_smoothing_clip: float = 0.5
    update_actor_interval: int = 2
    lr_decay: str = "none"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_lr_decay(self.lr_decay)
        if self.update_actor_interval < 1:
            raise UsageError(f"update_actor_interval must be >= 1, got {self.update_actor_interval}.")

    def td3_kwargs(self, ctx: BuildContext) -> dict[str, Any]:
        """The keyword arguments of d3rlpy's TD3-family configs for the shared fields."""
        enc = self.encoder_factory(ctx)
        return dict(
            **self.common_kwargs(ctx), actor_learning_rate=self.actor_learning_rate,
            critic_learning_rate=self.critic_learning_rate, actor_encoder_factory=enc, critic_encoder_factory=enc,
            tau=self.tau, n_critics=self.n_critics, target_smoothing_sigma=self.target_smoothing_sigma,
            target_smoothing_clip=self.target_smoothing_clip, update_actor_interval=self.update_actor_interval,
            **self.optimizers("actor_optim_factory", "critic_optim_factory", decay=self.lr_decay, ctx=ctx,
                              every={"actor_optim_factory": self.update_actor_interval}),
        )


@dataclass(frozen=True)
class TD3PlusBCConfig(TD3Family):
    """TD3 with a behaviour-cloning term in the actor loss.

    Attributes:
        alpha: trade-off between Q maximisation and behaviour cloning (the paper's 2.5).
        (and those of :class:`TD3Family`: learning rates, τ, critics, target smoothing, actor interval)
    """

    paper: ClassVar[str] = "Fujimoto & Gu, NeurIPS 2021"

    alpha: float = 2.5

    def d3rlpy_config(self, ctx: BuildContext):
        return load_d3rlpy().algos.TD3PlusBCConfig(**self.td3_kwargs(ctx), alpha=self.alpha)
