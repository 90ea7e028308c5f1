"""PRDC (Ran et al., ICML 2023); its nearest-neighbour index in ``index``."""

from imaginebench.algos.algo_config import AlgoSpec
from imaginebench.algos.prdc.config import PRDCConfig

SPECS = (
    AlgoSpec("prdc", "prdc", "PRDC", PRDCConfig, stacked="imaginebench.algos.prdc.stacked:StackedPRDC"),
)

__all__ = ["SPECS", "PRDCConfig"]
