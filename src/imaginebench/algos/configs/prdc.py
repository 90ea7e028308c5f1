"""PRDC (continuous actions only).

Ran et al., "Policy Regularization with Dataset Constraint for Offline Reinforcement Learning",
ICML 2023.  d3rlpy's ``PRDC`` is the implementation; :mod:`imaginebench.algos.prdc` gives each
algorithm its own exact neighbour index over every transition of the run, real and imaginary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imaginebench.algos.configs.base import AlgoConfig, BuildContext
from imaginebench.errors import UsageError


@dataclass(frozen=True)
class PRDCConfig(AlgoConfig):
    """TD3 whose actor is pulled toward the nearest dataset action (a dataset constraint).

    The actor minimises ``λ·(−Q(s, π(s))) + ||π(s) − â||²`` with ``λ = α / mean|Q|`` and ``â`` the
    action of the transition whose ``(β·s') ⊕ a'`` is nearest to ``(β·s) ⊕ π(s)`` (``s``: the
    scaled observation, state ⊕ instruction embedding).  The paper's defaults are α = 2.5,
    β = 2.0 and k = 1 neighbour; d3rlpy's ``PRDCConfig`` has the same α and β and always uses
    one neighbour (it has no k), so these are the defaults here.

    Attributes:
        actor_learning_rate: policy learning rate.
        critic_learning_rate: Q-function learning rate.
        tau: soft target-update rate.
        n_critics: Q-functions in the ensemble.
        target_smoothing_sigma: std of the noise added to target actions.
        target_smoothing_clip: clip of that noise.
        alpha: trade-off between Q maximisation and the dataset constraint (the paper's 2.5).
        beta: weight of the observation against the action in the neighbour search (the
            paper's 2.0; 0 = nearest action regardless of state).
        update_actor_interval: critic steps per actor (and target) update.
    """

    discrete: ClassVar[bool] = False
    paper: ClassVar[str] = "Ran et al., ICML 2023"

    actor_learning_rate: float = 3e-4
    critic_learning_rate: float = 3e-4
    tau: float = 0.005
    n_critics: int = 2
    target_smoothing_sigma: float = 0.2
    target_smoothing_clip: float = 0.5
    alpha: float = 2.5
    beta: float = 2.0
    update_actor_interval: int = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.alpha > 0:
            raise UsageError(f"alpha must be positive, got {self.alpha}.")
        if not self.beta >= 0:
            raise UsageError(f"beta must be >= 0, got {self.beta}.")
        if self.update_actor_interval < 1:
            raise UsageError(f"update_actor_interval must be >= 1, got {self.update_actor_interval}.")

    def d3rlpy_config(self, ctx: BuildContext):
        from imaginebench.algos.prdc import IndexedPRDCConfig

        enc = self.encoder_factory(ctx)
        return IndexedPRDCConfig(
            **self.common_kwargs(ctx), actor_learning_rate=self.actor_learning_rate,
            critic_learning_rate=self.critic_learning_rate, actor_encoder_factory=enc, critic_encoder_factory=enc,
            tau=self.tau, n_critics=self.n_critics, target_smoothing_sigma=self.target_smoothing_sigma,
            target_smoothing_clip=self.target_smoothing_clip, alpha=self.alpha, beta=self.beta,
            update_actor_interval=self.update_actor_interval,
            **self.optimizers("actor_optim_factory", "critic_optim_factory"),
        )

    def attach(self, algo, source) -> None:
        """Build the neighbour index over every transition of ``source`` (real and imaginary)."""
        from imaginebench.algos.prdc import attach_index

        attach_index(algo, source)
