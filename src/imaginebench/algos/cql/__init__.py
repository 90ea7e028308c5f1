"""Conservative Q-learning, continuous and discrete (Kumar et al., NeurIPS 2020)."""

from imaginebench.algos.algo_config import AlgoSpec
from imaginebench.algos.cql.config import CQLConfig, DiscreteCQLConfig

SPECS = (
    AlgoSpec("cql", "cql", "CQL", CQLConfig, stacked="imaginebench.algos.cql.stacked:StackedCQL"),
    AlgoSpec("discrete_cql", "cql", "CQL", DiscreteCQLConfig, stacked="imaginebench.algos.cql.discrete_stacked:StackedDiscreteCQL"),
)

__all__ = ["SPECS", "CQLConfig", "DiscreteCQLConfig"]
