"""Batch-constrained Q-learning, continuous and discrete (Fujimoto et al., ICML 2019)."""

from imaginebench.algos.algo_config import AlgoSpec
from imaginebench.algos.bcq.config import BCQConfig, DiscreteBCQConfig

SPECS = (
    AlgoSpec("bcq", "bcq", "BCQ", BCQConfig, stacked="imaginebench.algos.bcq.stacked:StackedBCQ"),
    AlgoSpec("discrete_bcq", "bcq", "BCQ", DiscreteBCQConfig, stacked="imaginebench.algos.bcq.discrete_stacked:StackedDiscreteBCQ"),
)

__all__ = ["SPECS", "BCQConfig", "DiscreteBCQConfig"]
