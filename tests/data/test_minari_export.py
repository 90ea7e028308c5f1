from __future__ import annotations

import numpy as np
import pytest

from tests.data.helpers import random_dataset

minari = pytest.importorskip("minari")


def test_export_round_trip(tmp_path):
    from imaginebench.data.minari_export import export_minari, minari_id

    ds = random_dataset(n=6)
    assert minari_id(ds) == "imaginebench/test-train-real-v0"
    out = export_minari(ds, root=tmp_path)
    assert out.total_episodes == 6 and out.total_steps == ds.num_transitions
    for ours, theirs in zip(ds, out.iterate_episodes()):
        np.testing.assert_array_equal(theirs.observations, ours.states)
        np.testing.assert_array_equal(theirs.actions, ours.actions)
        np.testing.assert_array_equal(theirs.terminations, ours.terminals)
        np.testing.assert_array_equal(theirs.truncations, ours.truncations)
    meta = list(out.storage.get_episode_metadata(range(6)))
    assert [m["instruction"] for m in meta] == ds.episode_instructions()
    assert [m["task"] for m in meta] == ds.episode_tasks()


def test_export_loads_with_minaris_own_loader(tmp_path, monkeypatch):
    """A fresh ``minari.load_dataset`` (not the object the export returned) reads the episodes."""
    from imaginebench.data.minari_export import export_minari, minari_id

    ds = random_dataset(n=5)
    export_minari(ds, root=tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    assert minari_id(ds) in minari.list_local_datasets()
    loaded = minari.load_dataset(minari_id(ds))
    assert loaded.total_episodes == 5 and loaded.total_steps == ds.num_transitions
    for ours, theirs in zip(ds, loaded.iterate_episodes()):
        np.testing.assert_array_equal(theirs.observations, ours.states)
        np.testing.assert_array_equal(theirs.actions, ours.actions)
        np.testing.assert_array_equal(theirs.rewards, ours.rewards)
        np.testing.assert_array_equal(theirs.infos["is_success"][1:], ours.successes)
    assert loaded.action_space.contains(loaded.sample_episodes(1)[0].actions[0])
