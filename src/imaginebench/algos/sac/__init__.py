"""Soft actor-critic used offline, continuous and discrete (Haarnoja et al., ICML 2018)."""

from imaginebench.algos.algo_config import AlgoSpec
from imaginebench.algos.sac.config import DiscreteSACConfig, SACConfig

SPECS = (
    AlgoSpec("sac", "sac", "SAC", SACConfig, stacked="imaginebench.algos.sac.stacked:StackedSAC"),
    AlgoSpec("discrete_sac", "sac", "SAC", DiscreteSACConfig, stacked="imaginebench.algos.sac.discrete_stacked:StackedDiscreteSAC"),
)

__all__ = ["SPECS", "DiscreteSACConfig", "SACConfig"]
