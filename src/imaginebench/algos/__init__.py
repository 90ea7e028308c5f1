"""Offline RL algorithms (through d3rlpy), their defaults, and the mixed real/imaginary sampler.

``registry`` and ``configs`` import no heavy dependency; ``sampler``, ``encoders`` and
``factory`` need the ``rl`` extra (d3rlpy, torch).
"""

from imaginebench.algos._d3rlpy import load as load_d3rlpy
from imaginebench.algos.registry import (
    ALGORITHMS,
    AlgoSpec,
    algorithm_names,
    fitting,
    get_spec,
    register,
    resolve,
)

__all__ = ["ALGORITHMS", "AlgoSpec", "algorithm_names", "fitting", "get_spec", "load_d3rlpy", "register", "resolve"]
