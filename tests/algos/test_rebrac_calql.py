"""ReBRAC and Cal-QL from d3rlpy through the registry: Monte-Carlo returns, the calibration
reaching d3rlpy's update, end-to-end runs with resume."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from imaginebench.algos import get_spec, resolve
from imaginebench.evaluation import stable_view
from imaginebench.training import RunSpec, run_dir, train
from imaginebench.run_folder import CHECKPOINT_NAME
from tests.algos.helpers import HashEncoder, build_toy_data, toy_envs  # noqa: F401  (fixture)
from tests.data.helpers import random_dataset
from tests.training.test_runner import SMALL, Stop


def _source(seed: int = 0):
    from imaginebench.algos.sampler import MixedReplaySource

    real = random_dataset(9, discrete=False, seed=seed)
    imaginary = random_dataset(7, discrete=False, seed=seed + 1)
    return MixedReplaySource({"real": real, "imaginary": imaginary}, encoder=HashEncoder(), seed=0)


@pytest.mark.parametrize("gamma", [0.0, 0.9, 1.0])
def test_returns_to_go_are_d3rlpys_per_transition_returns(gamma):
    from d3rlpy.torch_utility import _compute_return_to_go

    source = _source()
    got = source.returns_to_go(gamma)
    expected = []
    for name in source.names:  # episode by episode, rewards from t to the end, as d3rlpy's picker
        ds = {"real": random_dataset(9, discrete=False, seed=0),
              "imaginary": random_dataset(7, discrete=False, seed=1)}[name]
        start = 0
        for length in ds.lengths:
            rewards = ds.rewards[start:start + length].astype(np.float32).reshape(-1, 1)
            expected += [_compute_return_to_go(gamma, rewards[t:], None) for t in range(length)]
            start += length
    assert got.shape == (source.transition_count, 1) and got.dtype == np.float32
    np.testing.assert_allclose(got, np.array(expected), rtol=1e-5, atol=1e-5)


def test_calql_floors_the_policy_values_at_the_returns_it_is_given():
    import torch

    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.sampler import fast_update

    source = _source()
    batch = source.batch_from_indices(np.arange(16))

    def loss(name: str, returns: np.ndarray | None):
        torch.manual_seed(0)
        algo = build_algorithm(get_spec(name).default_config(hidden_units=(16,)), source, batch_size=16)
        return fast_update(algo, batch, returns)

    cql = loss("cql", None)
    low = loss("calql", np.full((16, 1), -1e6, dtype=np.float32))  # the floor never binds: CQL's numbers
    high = loss("calql", np.full((16, 1), 1e3, dtype=np.float32))  # it always binds
    assert low["conservative_loss"] == pytest.approx(cql["conservative_loss"], rel=1e-6)
    assert high["conservative_loss"] > cql["conservative_loss"] + 100


def test_calql_update_hands_the_batch_rows_returns_to_d3rlpy(monkeypatch):
    import torch

    from imaginebench.algos import sampler
    from imaginebench.algos.factory import build_algorithm

    source = _source()
    config = get_spec("calql").default_config(hidden_units=(16,))
    torch.manual_seed(0)
    algo = build_algorithm(config, source, batch_size=8)
    seen = {}
    original = sampler.torch_batch

    def spy(batch, algo, returns_to_go=None):
        seen["returns"], seen["rewards"] = returns_to_go, batch.rewards
        return original(batch, algo, returns_to_go)

    monkeypatch.setattr(sampler, "torch_batch", spy)
    state = source.rng.bit_generator.state
    config.update(algo, source, 8)
    source.rng.bit_generator.state = state
    idx = source.sample_indices(8)
    np.testing.assert_array_equal(seen["returns"], source.returns_to_go(config.gamma)[idx])
    np.testing.assert_array_equal(seen["rewards"], source.batch_from_indices(idx).rewards)


@pytest.mark.parametrize("name", ["rebrac", "calql"])
def test_continuous_only_with_a_one_line_reason(name):
    with pytest.raises(ValueError, match=f"'{name}' needs continuous actions.*Algorithms that fit"):
        resolve(name, discrete=True, env_id="CLEVR-v0")


@pytest.mark.parametrize("name", ["rebrac", "calql"])
def test_trains_end_to_end_and_resumes_to_the_uninterrupted_record(toy_envs, name):
    build_toy_data("ToyCont-v0", ("train",), episodes=30)
    spec = RunSpec("ToyCont-v0", name, seed=2, **{**SMALL, "train_steps": 30})

    def kill(step, entry):
        if step == 10:
            raise Stop

    with pytest.raises(Stop):
        train(spec, progress=False, on_checkpoint=kill)
    assert (run_dir(spec) / CHECKPOINT_NAME).exists()
    resumed = train(spec, progress=False)
    assert resumed.resumed_from == 10 and resumed.record["algo"] == name
    assert all(0.0 <= c["train"]["success"] <= 1.0 for c in resumed.record["curve"])
    shutil.rmtree(run_dir(spec))
    straight = train(spec, progress=False)
    assert stable_view(straight.record) == stable_view(resumed.record)
