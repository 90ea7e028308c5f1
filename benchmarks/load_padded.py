"""Time to load a large episodic dataset and build its padded (N, T, D) view.

    python benchmarks/load_padded.py [--episodes 100000] [--path existing.npz] [--json PATH]

Without ``--path`` a CLEVR-shaped dataset (10-dim states, Discrete(40) actions, lengths
1..50) of ``--episodes`` episodes is written to a temporary folder first. Prints load time,
padded-view time and flat-transition time, and the ratio to a plain ``numpy.load`` of the
same arrays (the floor any format can reach).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from harness import Report, Stopwatch, add_json_argument
from imaginebench.data import EpisodeDataset, load_dataset, save_dataset


def synthetic(n: int, seed: int = 0) -> EpisodeDataset:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 51, n)
    total = int(lengths.sum())
    succ = np.zeros(total, bool)
    succ[np.cumsum(lengths) - 1] = rng.random(n) < 0.9
    return EpisodeDataset(
        states=rng.uniform(-0.5, 0.5, (total + n, 10)).astype(np.float32),
        actions=rng.integers(0, 40, total), rewards=rng.normal(size=total).astype(np.float32),
        terminals=succ.copy(), truncations=np.zeros(total, bool), successes=succ, lengths=lengths,
        task_ids=rng.integers(0, 80, n).astype(np.int32), instruction_ids=rng.integers(0, 2000, n).astype(np.int32),
        tasks=tuple(f"t{i}" for i in range(80)), instructions=tuple(f"instruction {i}" for i in range(2000)),
        metadata={"domain": "CLEVR-v0", "level": "train", "source": "real", "generator": "synthetic"},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--path", type=Path, default=None)
    add_json_argument(parser)
    args = parser.parse_args()
    report = Report(__file__, args.json)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.path
        if path is None:
            path = save_dataset(synthetic(args.episodes), Path(tmp) / "big.npz")
        with Stopwatch() as loading:
            ds = load_dataset(path)
        with Stopwatch() as padding:
            pad = ds.padded()
        with Stopwatch() as flattening:
            ds.transitions()
        with Stopwatch() as plain:
            with np.load(path) as z:
                _ = [z[k] for k in z.files if k != "manifest.json"]
    table = report.table(f"{len(ds)} episodes, {ds.num_transitions} transitions, padded states {pad.states.shape}",
                         ["step", "s", "vs plain numpy.load"], {"s": "{:.2f}", "vs plain numpy.load": "{:.1f}x"})
    table.add("load + verify checksums", loading.seconds, loading.seconds / max(plain.seconds, 1e-9))
    table.add("plain numpy.load of the same arrays", plain.seconds, None)
    table.add("padded view", padding.seconds, None)
    table.add("flat transitions", flattening.seconds, None)
    table.add("load + padded view (target < 5 s)", loading.seconds + padding.seconds, None)
    report.finish()


if __name__ == "__main__":
    main()
