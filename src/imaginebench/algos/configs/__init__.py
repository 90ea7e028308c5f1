"""Default hyperparameters, one file per algorithm family (no d3rlpy import until ``create``)."""

from imaginebench.algos.configs.base import AlgoConfig, BuildContext
from imaginebench.algos.configs.bc import BCConfig, DiscreteBCConfig
from imaginebench.algos.configs.bcq import BCQConfig, DiscreteBCQConfig
from imaginebench.algos.configs.calql import CalQLConfig
from imaginebench.algos.configs.combo import COMBOConfig
from imaginebench.algos.configs.cql import CQLConfig, DiscreteCQLConfig
from imaginebench.algos.configs.dt import DecisionTransformerConfig, DiscreteDecisionTransformerConfig
from imaginebench.algos.configs.iql import IQLConfig
from imaginebench.algos.configs.online import DoubleDQNConfig, TD3Config
from imaginebench.algos.configs.prdc import PRDCConfig
from imaginebench.algos.configs.rebrac import ReBRACConfig
from imaginebench.algos.configs.sac import DiscreteSACConfig, SACConfig
from imaginebench.algos.configs.td3bc import TD3PlusBCConfig

__all__ = [
    "AlgoConfig", "BCConfig", "BCQConfig", "BuildContext", "CalQLConfig", "COMBOConfig", "CQLConfig", "DecisionTransformerConfig",
    "DiscreteBCConfig", "DiscreteBCQConfig", "DiscreteCQLConfig", "DiscreteDecisionTransformerConfig",
    "DiscreteSACConfig", "DoubleDQNConfig", "IQLConfig", "PRDCConfig", "ReBRACConfig", "SACConfig", "TD3Config", "TD3PlusBCConfig",
]
