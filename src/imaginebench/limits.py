"""Checks of counts, sizes, tolerances and addresses, made before any work starts.

Each verb of the command-line tool (and each library entry point it calls) checks its options
here first, so a value that makes no sense is a one-line :class:`~imaginebench.errors.UsageError`
naming the option — never a fork storm, an allocation traceback, a hang, or a file written with
NaN in it.  The bounds come from the machine: worker processes are capped by the CPUs this
process may use (a cluster address lifts the cap: its size is the cluster's), and sizes are
compared with the memory available now.
"""

from __future__ import annotations

import math
import numbers
import os
import socket
from typing import Any
from urllib.parse import urlsplit

from imaginebench.errors import UsageError

MAX_EPISODES_PER_TASK = 10_000
"""Evaluation episodes per task: far beyond any protocol's (paper: 5), short of a schedule that
grows to gigabytes before the first episode runs."""

ADDRESS_TIMEOUT_S = 10.0
"""How long a cluster address may take to accept a connection before a grid gives up on it."""


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, not the machine's total)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover  (not Linux)
        return max(1, os.cpu_count() or 1)


def available_memory() -> int | None:
    """Bytes of memory available to new allocations now (``MemAvailable``), ``None`` if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover  (not Linux)
        pass
    return None


def count(option: str, value: Any, *, low: int = 1, high: int | None = None, allow_none: bool = False) -> Any:
    """``value`` as an int in ``[low, high]`` (``None`` passes with ``allow_none``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not isinstance(value, numbers.Integral) and (
            not math.isfinite(float(value)) or float(value) != int(value)):
        raise UsageError(f"{option} must be a whole number, got {value!r}.")
    value = int(value)
    if value < low:
        raise UsageError(f"{option} must be at least {low}, got {value}.")
    if high is not None and value > high:
        raise UsageError(f"{option} must be at most {high}, got {value}.")
    return value


def workers(option: str, value: Any, *, cluster: bool = False) -> int:
    """A worker-process count: at least 1, and at most the CPUs this process may use unless
    the work goes to a cluster (then the cluster's size bounds it)."""
    value = count(option, value)
    cap = available_cpus()
    if not cluster and value > cap:
        raise UsageError(f"{option} {value} is more worker processes than the {cap} CPUs this process may use; "
                         f"give at most {option} {cap} (more processes than CPUs only slow the work down).")
    return value


def number(option: str, value: Any, *, low: float | None = None, high: float | None = None,
           low_open: bool = False, high_open: bool = False, allow_none: bool = False) -> Any:
    """``value`` as a finite float inside the given bounds (``None`` passes with ``allow_none``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise UsageError(f"{option} must be a finite number, got {value!r}.")
    value = float(value)
    below = low is not None and (value <= low if low_open else value < low)
    above = high is not None and (value >= high if high_open else value > high)
    if below or above:
        lo = "" if low is None else f"{'(' if low_open else '['}{low:g}"
        hi = "" if high is None else f"{high:g}{')' if high_open else ']'}"
        where = (f"lie in {lo}, {hi}" if low is not None and high is not None else
                 f"be {'>' if low_open else '>='} {low:g}" if low is not None else f"be {'<' if high_open else '<='} {high:g}")
        raise UsageError(f"{option} must {where}, got {value:g}.")
    return value


def positive(option: str, value: Any, *, allow_none: bool = False) -> Any:
    """A finite number > 0."""
    return number(option, value, low=0.0, low_open=True, allow_none=allow_none)


def fits_in_memory(nbytes: float, what: str, advice: str) -> None:
    """Refuse work whose estimated memory ``nbytes`` exceeds what is available now."""
    free = available_memory()
    if free is not None and nbytes > free:
        raise UsageError(f"{what} needs about {nbytes / 2**30:.1f} GiB of memory, more than the "
                         f"{free / 2**30:.1f} GiB available; {advice}.")


def cluster_answers(address: str, timeout_s: float = ADDRESS_TIMEOUT_S) -> None:
    """Refuse a Ray cluster address that does not accept a connection within ``timeout_s``.

    ``auto`` is left to Ray (it reads ``$RAY_ADDRESS`` or the local cluster's file and fails fast
    when there is none); ``host:port`` and ``ray://host:port`` are probed with one TCP connect."""
    if address in ("auto", "local"):
        return
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or not port:
        raise UsageError(f"Cluster address {address!r} is not HOST:PORT, ray://HOST:PORT or auto.")
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__)
        raise ValueError(f"No Ray cluster answered at {address} within {timeout_s:g} s ({reason}); start a Ray "
                         f"head node there, or leave the address out to run on this machine.") from None


def check_training_memory(*, observation_dim: int, action_size: int, hidden_units: tuple[int, ...], batch_size: int,
                          what: str = "this run") -> None:
    """Refuse a network width or batch size that cannot fit, before any allocation.

    The estimate is a lower bound (one MLP with its gradients and two Adam moments, one batch of
    observations and the activations of one forward and backward pass, float32), so it never
    refuses a run that would fit; it catches the sizes that would die in an allocation traceback."""
    widths = [int(observation_dim) + int(action_size), *map(int, hidden_units), int(action_size)]
    params = sum(a * b + b for a, b in zip(widths, widths[1:]))
    activations = int(batch_size) * (sum(widths) * 2 + int(observation_dim))
    fits_in_memory(4.0 * (4 * params + activations), what,
                   "make --batch-size or hidden_units (--set hidden_units=[...]) smaller")
