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


RECOVER = """
import json, sys
import minari
data = minari.load_dataset(sys.argv[1])
env = data.recover_environment()
eval_env = data.recover_environment(eval_env=True)
obs, info = eval_env.reset(seed=0)
print(json.dumps({"id": env.spec.id, "level": env.unwrapped.level, "eval_level": eval_env.unwrapped.level,
                  "obs": len(obs), "task": info["task"]}))
"""


def test_exported_data_recovers_our_env_at_its_level_in_a_fresh_interpreter(tmp_path, data_home):
    """Minari's round trip: the export records the env spec (id and level), so a new process that only
    imports minari gets our env back, for collection and for evaluation."""
    import json
    import os
    import subprocess
    import sys

    from imaginebench.data.collect import collect
    from imaginebench.data.minari_export import export_minari, minari_id

    pytest.importorskip("mujoco")
    ds = collect("CLEVR-v0", "easy", 3, progress=False, metadata={"profile": "tiny"})
    export_minari(ds, root=tmp_path)
    env = {**os.environ, "MINARI_DATASETS_PATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", RECOVER, minari_id(ds)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"id": "ImagineBench/CLEVR-v0", "level": "easy", "eval_level": "easy", "obs": ds.state_dim,
                   "task": out["task"]}
