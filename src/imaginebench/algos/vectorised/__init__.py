"""Several seeds of one algorithm trained together with stacked parameters (see ``base``).

Each algorithm's stacked trainer lives in its own folder (``imaginebench/algos/<family>/stacked.py``)
and is named by its :class:`~imaginebench.algos.algo_config.AlgoSpec` (``stacked``);
:func:`stacked_trainers` maps a d3rlpy algorithm class name to the trainer that reproduces its
update.  The algorithms without one train seed by seed through d3rlpy's own update.
"""

from __future__ import annotations

import importlib
from typing import Any

from imaginebench.algos.registry import ALGORITHMS
from imaginebench.algos.vectorised.base import StackedBatch, StackedTrainer


def stacked_trainers() -> dict[str, type[StackedTrainer]]:
    """``{d3rlpy algorithm class name: stacked trainer}`` of every registered algorithm that has one
    (read from the registry at each call, so an algorithm registered later is included)."""
    found: dict[str, type[StackedTrainer]] = {}
    for spec in ALGORITHMS.values():
        if spec.stacked:
            module, name = spec.stacked.split(":")
            cls = getattr(importlib.import_module(module), name)
            found[cls.algo_class] = cls
    return found


def trainer_for(algos: list[Any], generators=None) -> StackedTrainer:
    """The stacked trainer of ``algos`` (one built d3rlpy algorithm per seed)."""
    name = type(algos[0]).__name__
    trainers = stacked_trainers()
    if name not in trainers:
        raise ValueError(f"{name} has no stacked trainer; stacked training covers {', '.join(sorted(trainers))}.")
    return trainers[name](algos, generators)


__all__ = ["StackedBatch", "StackedTrainer", "stacked_trainers", "trainer_for"]
