"""Decision Transformer, continuous and discrete (Chen et al., NeurIPS 2021); trajectory batches in ``trajectories``; no stacked trainer."""

from imaginebench.algos.algo_config import AlgoSpec
from imaginebench.algos.dt.config import DecisionTransformerConfig, DiscreteDecisionTransformerConfig

SPECS = (
    AlgoSpec("dt", "dt", "DT", DecisionTransformerConfig, stacked=None),
    AlgoSpec("discrete_dt", "dt", "DT", DiscreteDecisionTransformerConfig, stacked=None),
)

__all__ = ["SPECS", "DecisionTransformerConfig", "DiscreteDecisionTransformerConfig"]
