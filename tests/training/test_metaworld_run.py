"""Continuous offline RL on MetaWorld-v0 through the shared runner: real data, mixed sampler,
protocol evaluation, references — a tiny end-to-end run per continuous algorithm family."""

from __future__ import annotations

import numpy as np
import pytest

from imaginebench.envs.registry import is_available
from imaginebench.training import RunSpec, train
from tests.algos.helpers import HASH_ENCODER

pytestmark = pytest.mark.skipif(not is_available("MetaWorld-v0"), reason="needs imaginebench[metaworld]")
TINY = dict(profile="tiny", encoder=HASH_ENCODER, train_steps=2, checkpoint_every=2, eval_episodes_per_task=1,
            batch_size=16, algo_options=(("hidden_units", (16, 16)),))


def test_continuous_algorithms_train_and_evaluate_on_metaworld():
    from imaginebench.data.hub import build_real

    build_real("MetaWorld-v0", "train", "tiny", episodes=20, progress=False)
    for algo in ("bc", "td3bc", "iql", "sac", "cql", "bcq"):  # one data home: references computed once
        rec = train(RunSpec("MetaWorld-v0", algo, level="train", seed=0, **TINY), progress=False).record
        assert rec["algo"] == algo and rec["env"] == "MetaWorld-v0"
        assert rec["config"]["state_dim"] == 91 and rec["config"]["embedding_dim"] == 8
        assert rec["eval"]["episodes"] == {"train": 10}  # one per task, balanced
        assert 0.0 <= rec["success"] <= 1.0
        assert all(np.isfinite(v) for v in rec["curve"][-1]["loss"].values())
        assert rec["reference"]["train"]["expert"] >= 0.9 and rec["reference"]["train"]["random"] <= 0.1
