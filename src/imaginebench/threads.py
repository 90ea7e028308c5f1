"""CPU threads of one process, decided in one place.

Every network trained here is small (MLPs of 256×2 units, the rollout model's few late-entry
layers), and processes run side by side (seeds stacked in one process, collection workers, Ray
tasks, two jobs on a 2-core machine).  At those sizes torch's intra-op threads cost more than they
give: ``examples/own_algorithm.py`` ran 59 gradient steps/s with one thread against 12 with
torch's default (two, the machine's cores) on the 2-core AMD EPYC (issue 68).  So one thread per
process is the default everywhere; ``--threads N`` (or ``set_threads(N)``) raises it for a process
that has the machine to itself and a large model.
"""

from __future__ import annotations

import os
import sys

from imaginebench import limits

DEFAULT_THREADS = 1


def set_threads(threads: int | None = None) -> int:
    """Use ``threads`` (default :data:`DEFAULT_THREADS`) torch CPU threads in this process, and in
    processes it starts later (``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` when not set already);
    returns the count.  More threads than CPUs available is a one-line error."""
    n = limits.count("--threads", DEFAULT_THREADS if threads is None else threads, high=limits.available_cpus())
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(n))
    if "torch" in sys.modules or threads is not None:
        import torch

        torch.set_num_threads(n)
    return n


def one_thread_per_worker() -> None:
    """For a worker process that runs beside others: one thread, whether or not torch is loaded yet."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
