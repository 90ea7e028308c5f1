"""TD3+BC (Fujimoto & Gu, NeurIPS 2021); ``TD3Family`` is shared with ReBRAC, PRDC and online TD3."""

from imaginebench.algos.algo_config import AlgoSpec
from imaginebench.algos.td3bc.config import TD3PlusBCConfig

SPECS = (
    AlgoSpec("td3bc", "td3bc", "TD3+BC", TD3PlusBCConfig, stacked="imaginebench.algos.td3bc.stacked:StackedTD3PlusBC"),
)

__all__ = ["SPECS", "TD3PlusBCConfig"]
