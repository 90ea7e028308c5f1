"""Offline training runs: a :class:`RunSpec` names the algorithm, level, training data and sizes;
:func:`train` (one run) and :func:`train_seeds` (seeds trained together) train, evaluate by the
protocol of :mod:`imaginebench.evaluation` and write a results record, resuming or skipping as
the run's folder says.

>>> from imaginebench.training import RunSpec, train
>>> result = train(RunSpec("CLEVR-v0", "discrete_bc", level="rephrase", seed=0, profile="tiny"))
"""

from imaginebench.training.runner import RunResult, flushed_denormals, train, train_seeds
from imaginebench.training.spec import DATA_VARIANTS, ResolvedRun, RunSpec, resolve_run, run_dir

__all__ = ["DATA_VARIANTS", "ResolvedRun", "RunResult", "RunSpec", "flushed_denormals", "resolve_run", "run_dir",
           "train", "train_seeds"]
