"""The algorithm registry: a name -> :class:`AlgoSpec` dict and :func:`register`.

Names: ``bc``, ``cql``, ``bcq``, ``td3bc``, ``sac``, ``iql``, ``rebrac``, ``calql``, ``dt``, ``prdc``
(continuous actions) and ``discrete_bc``, ``discrete_cql``, ``discrete_bcq``, ``discrete_sac``,
``discrete_dt`` (discrete actions).

A family name also works on a domain of the other action kind when the family has a version
for it: :func:`resolve` maps ``bc`` on CLEVR (``Discrete(40)``) to ``discrete_bc``, just as
the paper writes "BC" for both.  Run records store the resolved name.  ``discrete_*`` on a
continuous domain, or ``td3bc``/``iql`` on a discrete one, is an error that lists the
algorithms that fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from imaginebench.algos.configs import (
    AlgoConfig,
    BCConfig,
    BCQConfig,
    CalQLConfig,
    COMBOConfig,
    CQLConfig,
    DecisionTransformerConfig,
    DiscreteBCConfig,
    DiscreteBCQConfig,
    DiscreteCQLConfig,
    DiscreteDecisionTransformerConfig,
    DiscreteSACConfig,
    IQLConfig,
    PRDCConfig,
    ReBRACConfig,
    SACConfig,
    TD3PlusBCConfig,
)
from imaginebench.errors import UsageError, choice_error


@dataclass(frozen=True)
class AlgoSpec:
    """One registered algorithm.

    Attributes:
        name: registry name, e.g. ``"discrete_cql"``.
        family: the name shared by its continuous and discrete versions, e.g. ``"cql"``.
        label: how tables and figures write it, e.g. ``"CQL"``.
        config_cls: the frozen config dataclass holding its defaults.
    """

    name: str
    family: str
    label: str
    config_cls: type[AlgoConfig]

    @property
    def discrete(self) -> bool:
        return self.config_cls.discrete

    @property
    def action_kind(self) -> str:
        return "discrete" if self.discrete else "continuous"

    def default_config(self, **overrides) -> AlgoConfig:
        """The default config, with ``overrides`` applied (validated)."""
        return self.config_cls().replace(**overrides) if overrides else self.config_cls()


ALGORITHMS: dict[str, AlgoSpec] = {}


def register(spec: AlgoSpec) -> AlgoSpec:
    """Add ``spec`` to :data:`ALGORITHMS`; a name that is already taken raises ``ValueError``."""
    if spec.name in ALGORITHMS:
        raise ValueError(f"Algorithm {spec.name!r} is already registered.")
    ALGORITHMS[spec.name] = spec
    return spec


for _spec in (
    AlgoSpec("bc", "bc", "BC", BCConfig),
    AlgoSpec("cql", "cql", "CQL", CQLConfig),
    AlgoSpec("bcq", "bcq", "BCQ", BCQConfig),
    AlgoSpec("td3bc", "td3bc", "TD3+BC", TD3PlusBCConfig),
    AlgoSpec("sac", "sac", "SAC", SACConfig),
    AlgoSpec("iql", "iql", "IQL", IQLConfig),
    AlgoSpec("rebrac", "rebrac", "ReBRAC", ReBRACConfig),
    AlgoSpec("calql", "calql", "Cal-QL", CalQLConfig),
    AlgoSpec("dt", "dt", "DT", DecisionTransformerConfig),
    AlgoSpec("prdc", "prdc", "PRDC", PRDCConfig),
    AlgoSpec("combo", "combo", "COMBO", COMBOConfig),
    AlgoSpec("discrete_bc", "bc", "BC", DiscreteBCConfig),
    AlgoSpec("discrete_cql", "cql", "CQL", DiscreteCQLConfig),
    AlgoSpec("discrete_bcq", "bcq", "BCQ", DiscreteBCQConfig),
    AlgoSpec("discrete_sac", "sac", "SAC", DiscreteSACConfig),
    AlgoSpec("discrete_dt", "dt", "DT", DiscreteDecisionTransformerConfig),
):
    register(_spec)


def algorithm_names() -> tuple[str, ...]:
    return tuple(ALGORITHMS)


def fitting(discrete: bool, registry: Mapping[str, AlgoSpec] | None = None) -> tuple[str, ...]:
    """Names of the algorithms for a discrete (or continuous) action space."""
    return tuple(n for n, s in (registry or ALGORITHMS).items() if s.discrete == discrete)


def get_spec(name: str) -> AlgoSpec:
    """The spec registered as ``name``; unknown names raise ``ValueError`` listing the choices."""
    if name not in ALGORITHMS:
        raise choice_error("algorithm", name, algorithm_names())
    return ALGORITHMS[name]


def resolve(name: str, discrete: bool, env_id: str = "this domain", action_space: str | None = None) -> AlgoSpec:
    """The algorithm to run for ``name`` on a domain with ``discrete`` actions.

    ``bc``/``cql``/``bcq``/``sac`` on a discrete domain resolve to their ``discrete_*``
    versions.  Raises ``ValueError`` for unknown names and for algorithms that do not fit the
    action space, naming the ones that do.
    """
    spec = get_spec(name)
    if spec.discrete == discrete:
        return spec
    twins = [s for s in ALGORITHMS.values() if s.family == spec.family and s.discrete == discrete]
    if twins and name == spec.family:
        return twins[0]
    kind = "discrete" if discrete else "continuous"
    space = f" ({action_space})" if action_space else ""
    raise UsageError(
        f"Algorithm {name!r} needs {spec.action_kind} actions, but {env_id} has {kind} actions{space}. "
        f"Algorithms that fit: {', '.join(fitting(discrete))}."
    )
