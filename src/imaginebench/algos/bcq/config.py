"""Batch-constrained Q-learning, continuous and discrete.

Fujimoto et al., "Off-Policy Deep Reinforcement Learning without Exploration", ICML 2019
(continuous); Fujimoto et al., "Benchmarking Batch Deep Reinforcement Learning Algorithms",
2019 (discrete).  Continuous defaults are d3rlpy's ``BCQConfig`` except ``n_action_samples``:
10, the number of VAE actions per next state in the authors' training code (sfujim/BCQ,
``continuous_BCQ/BCQ.py``), where d3rlpy's 100 (the authors' number for *acting*) made the
update 5–7× slower (Meta-World input, one thread: 1.2 vs 6.0 steps/s).  d3rlpy has one knob
for both, so the policy also picks the best of 10 sampled actions when it acts; pass
``n_action_samples=100`` for d3rlpy's setting.  Discrete defaults use 3e-4 and a target copy
every 1,000 steps instead of d3rlpy's Atari settings, and the authors' imitator for state
vectors (sfujim/BCQ, ``discrete_BCQ/discrete_BCQ.py``, ``FC_Q``): its own layers
(``share_encoder=False``) and a logit penalty of ``1e-2 * mean(logits**2)`` (``beta=0.01``).
d3rlpy's ``beta=0.5`` — 50× the authors' — keeps the imitator from learning the expert's
actions, so the action mask lets poor actions through: CLEVR train level, real data, one seed,
4,000 steps, success at steps 1k/2k/3k/4k: d3rlpy's settings 2 / 1 / 13 / 55%; ``beta=0.01`` 60 /
81 / 89 / 93%; ``beta=0.01`` and separate layers 68 / 92 / 92 / 91% (DiscreteBC 79 / 91 / 97 / 96%;
notes/evaluation_api.md, session 18).  With d3rlpy's settings the 20,000-step runs scored
38–43% on CLEVR's train level, near chance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.algos.algo_config import AlgoConfig, BuildContext
from imaginebench.errors import UsageError


@dataclass(frozen=True)
class BCQConfig(AlgoConfig):
    """BCQ for continuous actions (a VAE imitator plus a perturbation actor).

    Attributes:
        actor_learning_rate: perturbation-model learning rate.
        critic_learning_rate: Q-function learning rate.
        imitator_learning_rate: conditional-VAE learning rate.
        tau: soft target-update rate.
        n_critics: Q-functions in the ensemble.
        update_actor_interval: critic steps per actor step.
        lam: weight of the min over critics in the clipped double-Q target.
        n_action_samples: actions sampled from the VAE per state (training targets and acting).
        action_flexibility: maximum perturbation of a sampled action.
        beta: KL weight of the VAE loss.
    """

    discrete: ClassVar[bool] = False
    paper: ClassVar[str] = "Fujimoto et al., ICML 2019"

    actor_learning_rate: float = 1e-3
    critic_learning_rate: float = 1e-3
    imitator_learning_rate: float = 1e-3
    tau: float = 0.005
    n_critics: int = 2
    update_actor_interval: int = 1
    lam: float = 0.75
    n_action_samples: int = 10
    action_flexibility: float = 0.05
    beta: float = 0.5

    def d3rlpy_config(self, ctx: BuildContext):
        enc = self.encoder_factory(ctx)
        return load_d3rlpy().algos.BCQConfig(
            **self.common_kwargs(ctx), actor_learning_rate=self.actor_learning_rate,
            critic_learning_rate=self.critic_learning_rate, imitator_learning_rate=self.imitator_learning_rate,
            actor_encoder_factory=enc, critic_encoder_factory=enc, imitator_encoder_factory=enc, tau=self.tau,
            n_critics=self.n_critics, update_actor_interval=self.update_actor_interval, lam=self.lam,
            n_action_samples=self.n_action_samples, action_flexibility=self.action_flexibility, beta=self.beta,
            **self.optimizers("actor_optim_factory", "critic_optim_factory", "imitator_optim_factory"),
        )


@dataclass(frozen=True)
class DiscreteBCQConfig(AlgoConfig):
    """BCQ for discrete actions (Q-learning restricted to actions the imitator finds likely).

    Attributes:
        learning_rate: learning rate of the Q-function and imitator.
        n_critics: Q-functions in the ensemble.
        action_flexibility: actions whose imitator probability is below this fraction of the
            most likely action's are excluded from the max.
        beta: weight of the imitator's logit-norm penalty.
        target_update_interval: gradient steps between hard target-network copies.
        share_encoder: whether the imitator shares the Q-function's encoder.
    """

    discrete: ClassVar[bool] = True
    paper: ClassVar[str] = "Fujimoto et al., arXiv:1910.01708, 2019"

    learning_rate: float = 3e-4
    n_critics: int = 1
    action_flexibility: float = 0.3
    beta: float = 0.01
    target_update_interval: int = 1000
    share_encoder: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.action_flexibility < 1.0:  # d3rlpy masks by ratio > log(flexibility)
            raise UsageError(f"action_flexibility must lie strictly between 0 and 1 (1 lets no action through, 0 "
                             f"every one), got {self.action_flexibility}.")

    def d3rlpy_config(self, ctx: BuildContext):
        return load_d3rlpy().algos.DiscreteBCQConfig(
            **self.common_kwargs(ctx), learning_rate=self.learning_rate, encoder_factory=self.encoder_factory(ctx),
            n_critics=self.n_critics, action_flexibility=self.action_flexibility, beta=self.beta,
            target_update_interval=self.target_update_interval, share_encoder=self.share_encoder,
            **self.optimizers("optim_factory"),
        )
