"""Ray, for the stages that can run on a cluster (data collection, the benchmark grid).

Ray is optional (``pip install 'imaginebench[ray]'``): :func:`import_ray` names the extra when
it is missing, and :func:`ray_session` connects to a cluster (``address``) or starts a local
instance for the duration of a block, leaving alone an instance this process already has.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def import_ray() -> Any:
    """The ``ray`` module, or ``ImportError`` naming the extra that installs it."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(f"This runs on Ray, which is not importable here ({exc}). "
                          f"Install it with: pip install 'imaginebench[ray]'") from None
    return ray


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[Any]:
    """Yield ``ray`` connected to ``address`` (e.g. ``"auto"``), or to a fresh local instance with
    ``num_cpus`` CPUs (``"local"``: a stray ``$RAY_ADDRESS`` is never used).  An instance this
    process already has is used as it is and left running; one started here is shut down."""
    if num_cpus is not None and address is not None:
        raise ValueError("num_cpus sizes a local Ray instance; with an address the cluster's own CPUs are used.")
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        options: dict[str, Any] = ({"address": address} if address else
                                   {"address": "local", "num_cpus": num_cpus, "include_dashboard": False})
        ray.init(**options, log_to_driver=False, logging_level=logging.ERROR)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()
