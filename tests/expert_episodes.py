"""Expert episodes shared by the tests of one worker process.

Collecting expert rollouts is the slow part of several domain tests (a LIBERO episode costs
seconds of robosuite control), and collections are nested: the first ``n`` episodes of a larger
collection of the same seed are exactly a collection of ``n`` (episode ``i`` has its own seed and
task), so every test asks here and the largest collection is made once per process.  Tests that
share a domain's episodes carry the same ``xdist_group`` (:func:`group`) so that they run in one
worker and the collection is made once per suite run."""

from __future__ import annotations

import pytest

from imaginebench.data import collect
from imaginebench.data.dataset import EpisodeDataset

_COLLECTED: dict[tuple[str, str, int], EpisodeDataset] = {}


def expert_episodes(env_id: str, level: str = "train", episodes: int = 12, seed: int = 7) -> EpisodeDataset:
    """The first ``episodes`` expert rollouts of ``level`` from ``seed`` (tasks round-robin)."""
    key = (env_id, level, seed)
    have = _COLLECTED.get(key)
    if have is None or len(have) < episodes:
        have = _COLLECTED[key] = collect(env_id, level, episodes, seed=seed, progress=False)
    if len(have) == episodes:
        return have
    return EpisodeDataset.from_episodes([have.episode(i) for i in range(episodes)],
                                        metadata={**have.metadata, "episodes": episodes})


def group(env_id: str) -> pytest.MarkDecorator:
    """The xdist group of the tests that share ``env_id``'s expert episodes."""
    return pytest.mark.xdist_group(f"expert-{env_id}")
