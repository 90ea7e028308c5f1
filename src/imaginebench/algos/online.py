"""Off-policy methods without a behaviour term, for online fine-tuning (``imaginebench finetune``).

* :class:`DoubleDQNConfig` — double DQN (van Hasselt et al., AAAI 2016) for discrete actions;
  its Q-network has the layout of DiscreteCQL's, so a DiscreteCQL run starts it.
* :class:`TD3Config` — TD3 (Fujimoto et al., ICML 2018) for continuous actions; its actor has
  the layout of BC's deterministic imitator and TD3+BC's actor, so either starts it.

Learning rate and target-copy interval follow the discrete offline configs (3e-4, 1,000 steps)
rather than d3rlpy's Atari defaults; TD3 uses the paper's values (d3rlpy's defaults).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.algos.algo_config import AlgoConfig, BuildContext
from imaginebench.algos.td3bc.config import TD3Family


@dataclass(frozen=True)
class DoubleDQNConfig(AlgoConfig):
    """Double DQN.

    Attributes:
        learning_rate: Q-function learning rate.
        n_critics: Q-functions in the ensemble.
        target_update_interval: gradient steps between hard target-network copies.
    """

    discrete: ClassVar[bool] = True
    paper: ClassVar[str] = "van Hasselt et al., AAAI 2016"

    learning_rate: float = 3e-4
    n_critics: int = 1
    target_update_interval: int = 1000

    def d3rlpy_config(self, ctx: BuildContext):
        return load_d3rlpy().algos.DoubleDQNConfig(
            **self.common_kwargs(ctx), learning_rate=self.learning_rate, encoder_factory=self.encoder_factory(ctx),
            n_critics=self.n_critics, target_update_interval=self.target_update_interval,
            **self.optimizers("optim_factory"),
        )


@dataclass(frozen=True)
class TD3Config(TD3Family):
    """TD3 (the fields of :class:`TD3Family`: learning rates, τ, critics, target smoothing, actor interval)."""

    paper: ClassVar[str] = "Fujimoto et al., ICML 2018"

    def d3rlpy_config(self, ctx: BuildContext):
        return load_d3rlpy().algos.TD3Config(**self.td3_kwargs(ctx))
