"""Cal-QL (Nakamoto et al., NeurIPS 2023)."""

from imaginebench.algos.algo_config import AlgoSpec
from imaginebench.algos.calql.config import CalQLConfig

SPECS = (
    AlgoSpec("calql", "calql", "Cal-QL", CalQLConfig, stacked="imaginebench.algos.calql.stacked:StackedCalQL"),
)

__all__ = ["SPECS", "CalQLConfig"]
