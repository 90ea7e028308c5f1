"""ReBRAC (Tarasov et al., NeurIPS 2023)."""

from imaginebench.algos.algo_config import AlgoSpec
from imaginebench.algos.rebrac.config import ReBRACConfig

SPECS = (
    AlgoSpec("rebrac", "rebrac", "ReBRAC", ReBRACConfig, stacked="imaginebench.algos.rebrac.stacked:StackedReBRAC"),
)

__all__ = ["SPECS", "ReBRACConfig"]
