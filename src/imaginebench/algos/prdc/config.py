"""PRDC (continuous actions only).

Ran et al., "Policy Regularization with Dataset Constraint for Offline Reinforcement Learning",
ICML 2023.  d3rlpy's ``PRDC`` is the implementation; :mod:`imaginebench.algos.prdc.index` gives each
algorithm its own exact neighbour index over every transition of the run, real and imaginary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imaginebench.algos.algo_config import BuildContext
from imaginebench.algos.td3bc.config import TD3Family
from imaginebench.errors import UsageError


@dataclass(frozen=True)
class PRDCConfig(TD3Family):
    """TD3 whose actor is pulled toward the nearest dataset action (a dataset constraint).

    The actor minimises ``λ·(−Q(s, π(s))) + ||π(s) − â||²`` with ``λ = α / mean|Q|`` and ``â`` the
    action of the transition whose ``(β·s') ⊕ a'`` is nearest to ``(β·s) ⊕ π(s)`` (``s``: the
    scaled observation, state ⊕ instruction embedding).  The paper's defaults are α = 2.5,
    β = 2.0 and k = 1 neighbour; d3rlpy's ``PRDCConfig`` has the same α and β and always uses
    one neighbour (it has no k), so these are the defaults here.

    Attributes:
        alpha: trade-off between Q maximisation and the dataset constraint (the paper's 2.5).
        beta: weight of the observation against the action in the neighbour search (the
            paper's 2.0; 0 = nearest action regardless of state).
        (and those of :class:`TD3Family`: learning rates, τ, critics, target smoothing, actor interval)
    """

    paper: ClassVar[str] = "Ran et al., ICML 2023"

    alpha: float = 2.5
    beta: float = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.alpha > 0:
            raise UsageError(f"alpha must be positive, got {self.alpha}.")
        if not self.beta >= 0:
            raise UsageError(f"beta must be >= 0, got {self.beta}.")

    def d3rlpy_config(self, ctx: BuildContext):
        from imaginebench.algos.prdc.index import IndexedPRDCConfig

        return IndexedPRDCConfig(**self.td3_kwargs(ctx), alpha=self.alpha, beta=self.beta)

    def attach(self, algo, source) -> None:
        """Build the neighbour index over every transition of ``source`` (real and imaginary)."""
        from imaginebench.algos.prdc.index import attach_index

        attach_index(algo, source)
