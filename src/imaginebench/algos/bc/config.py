"""Behaviour cloning, continuous and discrete.

Pomerleau, "Efficient Training of Artificial Neural Networks for Autonomous Navigation",
Neural Computation 1991.  Defaults are d3rlpy's (``BCConfig``/``DiscreteBCConfig``), which the
original ImagineBench used unchanged apart from its 256×2 encoder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.algos.algo_config import AlgoConfig, BuildContext, check_lr_decay
from imaginebench.errors import UsageError

PAPER = "Pomerleau, Neural Computation 1991"


@dataclass(frozen=True)
class BCConfig(AlgoConfig):
    """Behaviour cloning for continuous actions (mean-squared error to the data's actions).

    Attributes:
        learning_rate: Adam learning rate.
        policy_type: ``deterministic`` (MSE regression) or ``stochastic`` (Gaussian likelihood).
        lr_decay: ``none`` (constant rate, d3rlpy's default) or ``cosine`` (the rate anneals to 0
            over the run's gradient steps, so the policy evaluated is not the last point of a
            noisy constant-rate walk; LIBERO's train success 8% → 74%, notes/libero.md).
    """

    discrete: ClassVar[bool] = False
    paper: ClassVar[str] = PAPER

    learning_rate: float = 1e-3
    policy_type: str = "deterministic"
    lr_decay: str = "none"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_lr_decay(self.lr_decay)
        if self.policy_type not in ("deterministic", "stochastic"):
            raise UsageError(f"policy_type must be 'deterministic' or 'stochastic', got {self.policy_type!r}.")

    def d3rlpy_config(self, ctx: BuildContext):
        return load_d3rlpy().algos.BCConfig(**self.common_kwargs(ctx), learning_rate=self.learning_rate,
                                     policy_type=self.policy_type, encoder_factory=self.encoder_factory(ctx),
                                     **self.optimizers("optim_factory", decay=self.lr_decay, ctx=ctx))


@dataclass(frozen=True)
class DiscreteBCConfig(AlgoConfig):
    """Behaviour cloning for discrete actions (cross-entropy over action logits).

    Attributes:
        learning_rate: Adam learning rate.
        beta: weight of d3rlpy's logit-norm penalty (keeps logits from growing without bound).
        lr_decay: ``none`` (constant rate) or ``cosine`` (anneals to 0 over the run's steps).
    """

    discrete: ClassVar[bool] = True
    paper: ClassVar[str] = PAPER

    learning_rate: float = 1e-3
    beta: float = 0.5
    lr_decay: str = "none"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_lr_decay(self.lr_decay)

    def d3rlpy_config(self, ctx: BuildContext):
        return load_d3rlpy().algos.DiscreteBCConfig(**self.common_kwargs(ctx), learning_rate=self.learning_rate,
                                             beta=self.beta, encoder_factory=self.encoder_factory(ctx),
                                             **self.optimizers("optim_factory", decay=self.lr_decay, ctx=ctx))
