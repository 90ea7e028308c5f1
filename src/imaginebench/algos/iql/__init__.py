"""Implicit Q-learning (Kostrikov et al., ICLR 2022)."""

from imaginebench.algos.algo_config import AlgoSpec
from imaginebench.algos.iql.config import IQLConfig

SPECS = (
    AlgoSpec("iql", "iql", "IQL", IQLConfig, stacked="imaginebench.algos.iql.stacked:StackedIQL"),
)

__all__ = ["SPECS", "IQLConfig"]
