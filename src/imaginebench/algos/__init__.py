"""Offline RL algorithms (through d3rlpy), their defaults, and the mixed real/imaginary sampler.

One folder per algorithm family (``bc``, ``cql``, ``bcq``, ``td3bc``, ``sac``, ``iql``, ``rebrac``,
``calql``, ``dt``, ``prdc``, ``combo``): its config (``config.py``), its trainer stacked over seeds
(``stacked.py``) and its ``SPECS``, which :mod:`~imaginebench.algos.registry` registers.  ``online``
holds the online-only configs of fine-tuning (TD3, double DQN).  The registry and the configs import
no heavy dependency; ``sampler``, ``encoders``, ``factory`` and the stacked trainers need the ``rl``
extra (d3rlpy, torch).
"""

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.algos.algo_config import AlgoConfig, AlgoSpec, BuildContext
from imaginebench.algos.bc import BCConfig, DiscreteBCConfig
from imaginebench.algos.bcq import BCQConfig, DiscreteBCQConfig
from imaginebench.algos.calql import CalQLConfig
from imaginebench.algos.combo import COMBOConfig
from imaginebench.algos.cql import CQLConfig, DiscreteCQLConfig
from imaginebench.algos.dt import DecisionTransformerConfig, DiscreteDecisionTransformerConfig
from imaginebench.algos.iql import IQLConfig
from imaginebench.algos.online import DoubleDQNConfig, TD3Config
from imaginebench.algos.prdc import PRDCConfig
from imaginebench.algos.rebrac import ReBRACConfig
from imaginebench.algos.registry import (
    ALGORITHMS,
    algorithm_names,
    fitting,
    get_spec,
    register,
    resolve,
)
from imaginebench.algos.sac import DiscreteSACConfig, SACConfig
from imaginebench.algos.td3bc import TD3PlusBCConfig

__all__ = [
    "ALGORITHMS", "AlgoConfig", "AlgoSpec", "BCConfig", "BCQConfig", "BuildContext", "CalQLConfig", "COMBOConfig",
    "CQLConfig", "DecisionTransformerConfig", "DiscreteBCConfig", "DiscreteBCQConfig", "DiscreteCQLConfig",
    "DiscreteDecisionTransformerConfig", "DiscreteSACConfig", "DoubleDQNConfig", "IQLConfig", "PRDCConfig",
    "ReBRACConfig", "SACConfig", "TD3Config", "TD3PlusBCConfig", "algorithm_names", "fitting", "get_spec",
    "load_d3rlpy", "register", "resolve",
]
