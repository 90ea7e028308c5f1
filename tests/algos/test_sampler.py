"""The mixed sampler: exact batch shares, correct observations, discounting flags."""

from __future__ import annotations

import numpy as np
import pytest

from imaginebench.data import EpisodeDataset
from tests.algos.helpers import HashEncoder
from tests.data.helpers import random_dataset


def _constant_reward(ds: EpisodeDataset, value: float) -> EpisodeDataset:
    fields = {k: getattr(ds, k) for k in ds.ARRAYS}
    fields["rewards"] = np.full_like(ds.rewards, value)
    return EpisodeDataset(**fields, tasks=ds.tasks, instructions=ds.instructions, metadata=ds.metadata)


def _mixed(ratio: float = 0.5, seed: int = 0):
    from imaginebench.algos.sampler import MixedReplaySource

    real = _constant_reward(random_dataset(30, seed=0), 0.0)
    imaginary = _constant_reward(random_dataset(10, seed=1), 1.0)
    return MixedReplaySource({"real": real, "imaginary": imaginary}, {"real": 1 - ratio, "imaginary": ratio},
                             encoder=HashEncoder(), seed=seed)


@pytest.mark.parametrize("batch_size", [2, 64, 255, 256])
def test_every_batch_is_exactly_half_real_half_imaginary(batch_size):
    source = _mixed()
    for _ in range(50):
        idx = source.sample_indices(batch_size)
        counts = np.bincount(source.source_of(idx), minlength=2)
        assert counts.tolist() == [batch_size - batch_size // 2, batch_size // 2]
        batch = source.batch_from_indices(idx)
        assert batch.rewards.sum() == batch_size // 2  # imaginary rewards are 1, real 0


def test_ratio_is_configurable():
    source = _mixed(ratio=0.25)
    assert source.batch_counts(256) == {"real": 192, "imaginary": 64}
    batch = source.sample_transition_batch(256)
    assert batch.rewards.sum() == 64


def test_sources_are_sampled_uniformly_within_their_share():
    source = _mixed()
    idx = np.concatenate([source.sample_indices(256) for _ in range(400)])
    imag = idx[source.source_of(idx) == 1] - source.offsets[1]
    freq = np.bincount(imag, minlength=source.counts[1]) / len(imag)
    assert np.allclose(freq, 1 / source.counts[1], atol=0.01)


def test_observations_are_state_and_instruction_embedding():
    from imaginebench.algos.sampler import MixedReplaySource

    ds = random_dataset(6, seed=3)
    enc = HashEncoder()
    source = MixedReplaySource({"real": ds}, encoder=enc)
    tr = ds.transitions()
    batch = source.batch_from_indices(np.arange(ds.num_transitions))
    emb = enc.encode([ds.instructions[ds.instruction_ids[e]] for e in tr.episode_ids])
    np.testing.assert_array_equal(batch.observations, np.concatenate([tr.observations, emb], axis=1))
    np.testing.assert_array_equal(batch.next_observations, np.concatenate([tr.next_observations, emb], axis=1))
    np.testing.assert_array_equal(batch.actions[:, 0], tr.actions)
    # terminal = the env's terminated flag only; truncations are not terminal
    np.testing.assert_array_equal(batch.terminals[:, 0], tr.terminals.astype(np.float32))
    assert tr.truncations.any() and not batch.terminals[tr.truncations].any()


def test_observation_scaler_standardises_the_batch_distribution():
    source = _mixed()
    mean, std = source.observation_stats()
    big = np.concatenate([source.sample_transition_batch(256).observations for _ in range(300)])
    np.testing.assert_allclose(big.mean(0), mean, atol=0.05)
    np.testing.assert_allclose(big.std(0), std, atol=0.05)
    emb_only = source.observation_scaler("embedding")
    assert np.all(emb_only.mean[: source.state_dim] == 0) and np.all(emb_only.std[: source.state_dim] == 1)
    assert source.observation_scaler("none") is None
    with pytest.raises(ValueError, match="Valid choices: none, embedding, all"):
        source.observation_scaler("sometimes")


def test_fast_update_matches_d3rlpy_update():
    import torch

    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.registry import get_spec
    from imaginebench.algos.sampler import fast_update

    source = _mixed()
    losses = []
    for update in ("d3rlpy", "fast"):
        torch.manual_seed(0)
        source.rng = np.random.default_rng(0)
        algo = build_algorithm(get_spec("discrete_cql").default_config(hidden_units=(16,)), source, batch_size=16)
        for _ in range(3):
            batch = source.sample_transition_batch(16)
            loss = algo.update(batch) if update == "d3rlpy" else fast_update(algo, batch)
        losses.append(loss)
        assert algo.grad_step == 3
    assert losses[0] == losses[1]


def test_d3rlpy_buffer_keeps_every_transition():
    from imaginebench.algos.sampler import MixedReplaySource, to_d3rlpy_buffer

    ds = random_dataset(10, seed=4)
    buffer = to_d3rlpy_buffer(ds, HashEncoder())
    ours = MixedReplaySource({"r": ds}, encoder=HashEncoder())
    assert buffer.transition_count == ds.num_transitions == ours.transition_count


def test_bad_inputs_raise_clear_errors():
    from imaginebench.algos.sampler import MixedReplaySource

    ds = random_dataset(4)
    with pytest.raises(ValueError, match="sum to 1"):
        MixedReplaySource({"a": ds, "b": ds}, {"a": 0.7, "b": 0.7}, encoder=HashEncoder())
    with pytest.raises(ValueError, match="encoder or an embeddings table"):
        MixedReplaySource({"a": ds})
    empty = EpisodeDataset.from_episodes([], state_dim=4)
    with pytest.raises(ValueError, match="no transitions"):
        MixedReplaySource({"a": empty}, encoder=HashEncoder())
    cont = random_dataset(4, discrete=False)
    with pytest.raises(ValueError, match="action kind"):
        MixedReplaySource({"a": ds, "b": cont}, encoder=HashEncoder())
