"""Training steps/s with our vectorised sampler vs d3rlpy's default ReplayBuffer.

Both sides train the same algorithm (same config, same seed) on the same data —
``state ⊕ 384-d instruction embedding`` — and differ only in where batches come from:

* ours: ``MixedReplaySource`` (batches built by array indexing, embeddings looked up by
  instruction id), half real / half imaginary as in the benchmark's mixed levels, fed to the
  algorithm with ``fast_update`` (``algo.update`` without its tensor copies) — the path
  ``imaginebench train`` uses;
* d3rlpy: ``ReplayBuffer`` of d3rlpy ``Episode`` objects holding the full observations
  (transitions picked one at a time), all data in one buffer, fed with ``algo.update``.

The last two columns time batch assembly alone.

Rounds alternate between the two sides so load from other processes hits both alike; the
ratio is measured within one run.  Usage::

    python benchmarks/sampling.py [--steps 300] [--rounds 5] [--threads 1] [--json PATH]
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np
import torch

from imaginebench.algos.factory import build_algorithm
from imaginebench.algos.registry import get_spec
from imaginebench.algos.sampler import MixedReplaySource, fast_update, to_d3rlpy_buffer
from harness import EMBED_DIM, STATE_DIM, Report, add_json_argument, synthetic
from imaginebench.data import Episode, EpisodeDataset


def steps_per_second(algo, sample, steps: int, update) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        update(algo, sample())
    return steps / (time.perf_counter() - start)


def batch_ms(sample, n: int = 100) -> float:
    start = time.perf_counter()
    for _ in range(n):
        sample()
    return 1e3 * (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=["bc", "discrete_bc", "td3bc"])
    parser.add_argument("--steps", type=int, default=300, help="steps per side per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--episodes", type=int, default=2000, help="episodes per source")
    parser.add_argument("--threads", type=int, default=1)
    add_json_argument(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    report = Report(__file__, args.json)
    results = report.table(f"Training steps/s, our sampler vs d3rlpy's ReplayBuffer: batch {args.batch_size}, "
                           f"obs {STATE_DIM}+{EMBED_DIM}, {args.rounds} rounds x {args.steps} steps per side",
                           ["algorithm", "ours steps/s", "d3rlpy steps/s", "ratio", "ours batch ms", "d3rlpy batch ms"],
                           {"ours steps/s": "{:.1f}", "d3rlpy steps/s": "{:.1f}", "ratio": "{:.2f}x",
                            "ours batch ms": "{:.2f}", "d3rlpy batch ms": "{:.2f}"})
    for name in args.algos:
        spec = get_spec(name)
        real = synthetic(args.episodes, spec.discrete, seed=0)
        imaginary = synthetic(args.episodes, spec.discrete, seed=1)
        emb_rng = np.random.default_rng(2)
        vectors = {s: emb_rng.normal(size=EMBED_DIM).astype(np.float32)
                 for s in real.instructions + imaginary.instructions}
        ours = MixedReplaySource({"real": real, "imaginary": imaginary}, {"real": 0.5, "imaginary": 0.5},
                                 embeddings=vectors, seed=0)
        both = EpisodeDataset.concatenate([real, imaginary])
        theirs = to_d3rlpy_buffer(both, embeddings=vectors, action_size=ours.action_size)

        config = spec.default_config()
        algos = {}
        for side in ("ours", "d3rlpy"):
            torch.manual_seed(0)
            algos[side] = build_algorithm(config, ours, batch_size=args.batch_size, standardize="none")
        samplers = {"ours": functools.partial(ours.sample_transition_batch, args.batch_size),
                    "d3rlpy": functools.partial(theirs.sample_transition_batch, args.batch_size)}
        updates = {"ours": fast_update, "d3rlpy": lambda algo, batch: algo.update(batch)}
        for side, algo in algos.items():  # warm-up
            steps_per_second(algo, samplers[side], 20, updates[side])
        times = {"ours": 0.0, "d3rlpy": 0.0}
        for _ in range(args.rounds):
            for side in ("ours", "d3rlpy"):
                times[side] += args.steps / steps_per_second(algos[side], samplers[side], args.steps, updates[side])
        rate = {side: args.rounds * args.steps / t for side, t in times.items()}
        ms = {side: batch_ms(samplers[side]) for side in samplers}
        results.add(name, rate["ours"], rate["d3rlpy"], rate["ours"] / rate["d3rlpy"], ms["ours"], ms["d3rlpy"])
    report.finish()


if __name__ == "__main__":
    main()
