"""Worker processes that stop with the parent: one Ctrl-C ends a multi-process command at once.

A terminal's Ctrl-C reaches every process of the foreground group.  Workers made here ignore it,
so only the parent reacts (no worker tracebacks); the parent then cancels the queued jobs and
kills its workers instead of waiting for them (a worker blocked on a pipe would otherwise hold the
exit for minutes), and the command's one line says how to resume.
"""

from __future__ import annotations

import multiprocessing
import signal
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

from imaginebench.threads import one_thread_per_worker


def _worker_start() -> None:
    """Each worker: Ctrl-C is the parent's to handle, and one CPU thread (workers run side by side)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    one_thread_per_worker()


class WorkerPool:
    """``map`` over worker processes, results in the order of the jobs (see :func:`worker_pool`)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    def map(self, fn: Callable[[Any], Any], jobs: Iterable[Any], chunksize: int = 1) -> Iterator[Any]:
        """``fn(job)`` for every job, yielded in order as they finish."""
        return self._pool.imap(fn, jobs, chunksize)


@contextmanager
def worker_pool(workers: int) -> Iterator[WorkerPool]:
    """A pool of ``workers`` processes that ignore SIGINT and use one thread each; if the block raises (Ctrl-C included),
    the workers are terminated before the exception goes on, so nothing is left running and
    nothing waits on them.  (``multiprocessing.Pool``: its ``terminate`` is immediate, where a
    ``concurrent.futures`` pool whose workers are killed leaves an exit handler that prints a
    traceback.)"""
    pool = multiprocessing.get_context().Pool(workers, initializer=_worker_start)
    try:
        yield WorkerPool(pool)
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()
