"""Synthetic episodes for data-layer tests (no simulator needed)."""

from __future__ import annotations

import numpy as np

from imaginebench.data import Episode, EpisodeDataset


def random_dataset(n: int = 20, state_dim: int = 4, seed: int = 0, discrete: bool = True) -> EpisodeDataset:
    rng = np.random.default_rng(seed)
    episodes = []
    for i in range(n):
        t = int(rng.integers(1, 9))
        success = bool(rng.random() < 0.5)
        term = np.zeros(t, bool)
        term[-1] = success
        actions = rng.integers(0, 5, t) if discrete else rng.uniform(-1, 1, (t, 3)).astype(np.float32)
        episodes.append(Episode(
            task=f"task{i % 3}", instruction=f"do task {i % 3} variant {i % 5}",
            states=rng.normal(size=(t + 1, state_dim)).astype(np.float32), actions=actions,
            rewards=rng.normal(size=t).astype(np.float32), terminals=term, truncations=~term & (np.arange(t) == t - 1),
            successes=term.copy(),
        ))
    return EpisodeDataset.from_episodes(episodes, metadata={"domain": "Test-v0", "level": "train", "source": "real",
                                                            "seed": seed})
