"""Several seeds of one algorithm trained together with stacked parameters (see ``base``).

:data:`STACKED` maps a d3rlpy algorithm class name to the trainer that reproduces its update;
:func:`supports` says whether an algorithm can train stacked.  The other algorithms train seed
by seed through d3rlpy's own update.
"""

from __future__ import annotations

from typing import Any

from imaginebench.algos.vectorised.base import StackedBatch, StackedTrainer
from imaginebench.algos.vectorised.bc import StackedBC, StackedDiscreteBC
from imaginebench.algos.vectorised.bcq import StackedBCQ
from imaginebench.algos.vectorised.combo import StackedCOMBO
from imaginebench.algos.vectorised.cql import StackedCalQL, StackedCQL, StackedSAC
from imaginebench.algos.vectorised.discrete_bcq import StackedDiscreteBCQ
from imaginebench.algos.vectorised.discrete_cql import StackedDiscreteCQL
from imaginebench.algos.vectorised.discrete_sac import StackedDiscreteSAC
from imaginebench.algos.vectorised.iql import StackedIQL
from imaginebench.algos.vectorised.td3bc import StackedPRDC, StackedReBRAC, StackedTD3PlusBC

STACKED: dict[str, type[StackedTrainer]] = {
    cls.algo_class: cls for cls in (StackedBC, StackedDiscreteBC, StackedTD3PlusBC, StackedDiscreteCQL, StackedIQL,
                                StackedDiscreteSAC, StackedDiscreteBCQ, StackedCQL, StackedSAC, StackedReBRAC, StackedCalQL,
                                StackedBCQ, StackedPRDC, StackedCOMBO)}


def trainer_for(algos: list[Any], generators=None) -> StackedTrainer:
    """The stacked trainer of ``algos`` (one built d3rlpy algorithm per seed)."""
    name = type(algos[0]).__name__
    if name not in STACKED:
        raise ValueError(f"{name} has no stacked trainer; stacked training covers {', '.join(sorted(STACKED))}.")
    return STACKED[name](algos, generators)


__all__ = ["STACKED", "StackedBatch", "StackedTrainer", "trainer_for"]
