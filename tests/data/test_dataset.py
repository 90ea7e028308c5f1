from __future__ import annotations

import numpy as np
import pytest

from imaginebench.data import EpisodeDataset
from tests.data.helpers import random_dataset


def test_padded_view_matches_episodes():
    ds = random_dataset(n=30, discrete=False)
    pad = ds.padded()
    t_max = int(ds.lengths.max())
    assert pad.states.shape == (30, t_max + 1, ds.state_dim)
    assert pad.actions.shape == (30, t_max, 3)
    assert pad.mask.shape == (30, t_max)
    for i, ep in enumerate(ds):
        t = len(ep)
        assert pad.mask[i].sum() == t and pad.mask[i, :t].all()
        np.testing.assert_array_equal(pad.states[i, : t + 1], ep.states)
        np.testing.assert_array_equal(pad.actions[i, :t], ep.actions)
        np.testing.assert_array_equal(pad.rewards[i, :t], ep.rewards)
        assert not pad.rewards[i, t:].any()
    with pytest.raises(ValueError, match="shorter"):
        ds.padded(horizon=t_max - 1)
    assert ds.padded(horizon=t_max + 5).states.shape[1] == t_max + 6


def test_transitions_match_episodes():
    ds = random_dataset(n=25)
    tr = ds.transitions()
    assert len(tr) == ds.num_transitions
    row = 0
    for i, ep in enumerate(ds):
        for k in range(len(ep)):
            np.testing.assert_array_equal(tr.observations[row], ep.states[k])
            np.testing.assert_array_equal(tr.next_observations[row], ep.states[k + 1])
            assert tr.actions[row] == ep.actions[k] and tr.episode_ids[row] == i
            assert tr.terminals[row] == ep.terminals[k] and tr.truncations[row] == ep.truncations[k]
            row += 1


def test_episode_success_and_summary():
    ds = random_dataset(n=40)
    succ = ds.episode_success()
    assert succ.tolist() == [ep.is_success for ep in ds]
    summary = ds.summary()
    assert summary["episodes"] == 40 and summary["transitions"] == ds.num_transitions
    assert summary["success_rate"] == pytest.approx(succ.mean())


def test_concatenate_merges_tables():
    a, b = random_dataset(n=5, seed=1), random_dataset(n=7, seed=2)
    c = EpisodeDataset.concatenate([a, b])
    assert len(c) == 12
    assert c.episode_instructions() == a.episode_instructions() + b.episode_instructions()
    np.testing.assert_array_equal(c.episode(6).states, b.episode(1).states)


def test_inconsistent_columns_are_rejected():
    ds = random_dataset(n=3)
    with pytest.raises(ValueError, match="rewards"):
        EpisodeDataset(**{**{n: getattr(ds, n) for n in ds.ARRAYS}, "rewards": ds.rewards[:-1]},
                       tasks=ds.tasks, instructions=ds.instructions)
