"""COMBO (Yu et al., NeurIPS 2021): the d3rlpy algorithm and its dynamics ensemble in ``algorithm``."""

from imaginebench.algos.algo_config import AlgoSpec
from imaginebench.algos.combo.config import COMBOConfig

SPECS = (
    AlgoSpec("combo", "combo", "COMBO", COMBOConfig, stacked="imaginebench.algos.combo.stacked:StackedCOMBO"),
)

__all__ = ["SPECS", "COMBOConfig"]
