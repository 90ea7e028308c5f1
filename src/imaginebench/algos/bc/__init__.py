"""Behaviour cloning, continuous and discrete (Pomerleau 1991)."""

from imaginebench.algos.algo_config import AlgoSpec
from imaginebench.algos.bc.config import BCConfig, DiscreteBCConfig

SPECS = (
    AlgoSpec("bc", "bc", "BC", BCConfig, stacked="imaginebench.algos.bc.stacked:StackedBC"),
    AlgoSpec("discrete_bc", "bc", "BC", DiscreteBCConfig, stacked="imaginebench.algos.bc.stacked:StackedDiscreteBC"),
)

__all__ = ["SPECS", "BCConfig", "DiscreteBCConfig"]
