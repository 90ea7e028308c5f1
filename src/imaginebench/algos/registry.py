"""The algorithm registry: a name -> :class:`AlgoSpec` dict and :func:`register`, filled from the
algorithm folders' ``SPECS`` (:data:`FAMILIES`).

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

from typing import Mapping

from imaginebench.algos import bc, bcq, calql, combo, cql, dt, iql, prdc, rebrac, sac, td3bc
from imaginebench.algos.algo_config import AlgoSpec
from imaginebench.errors import UsageError, choice_error

FAMILIES = (bc, cql, bcq, td3bc, sac, iql, rebrac, calql, dt, prdc, combo)
"""The algorithm folders whose ``SPECS`` are registered (continuous versions first, then discrete)."""


ALGORITHMS: dict[str, AlgoSpec] = {}


def register(spec: AlgoSpec) -> AlgoSpec:
    """Add ``spec`` to :data:`ALGORITHMS`; a name that is already taken raises ``ValueError``."""
    if spec.name in ALGORITHMS:
        raise ValueError(f"Algorithm {spec.name!r} is already registered.")
    ALGORITHMS[spec.name] = spec
    return spec


for _discrete in (False, True):
    for _family in FAMILIES:
        for _spec in _family.SPECS:
            if _spec.discrete == _discrete:
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
