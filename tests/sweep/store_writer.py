"""A process that writes runs to a results store (the concurrent-writers test starts two)."""

from __future__ import annotations

import time
from typing import Any

from imaginebench.sweep.store import ResultsStore


def write_runs(path: str, writer: int, count: int, barrier: Any = None) -> None:
    """Claim and finish ``count`` runs of their own, one transaction each (after ``barrier``, and
    with a pause between runs, so that the writers' transactions interleave)."""
    with ResultsStore(path) as store:
        if barrier is not None:
            barrier.wait(60)
        for i in range(count):
            run_id = f"w{writer}-{i:03d}"
            config = {"env": "Toy-v0", "algo": "discrete_bc", "level": "train", "data": "real", "seed": i,
                      "profile": "tiny", "writer": writer}
            assert store.claim(run_id, config)
            store.finish(run_id, {"score": {"train": i / count}, "timing": {"wall_time_s": 0.01}},
                         record_path=f"/nowhere/{run_id}/record.json")
            time.sleep(0.002)
