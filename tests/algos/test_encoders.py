"""The instruction encoders compute repeated observations once, without changing the maths.

CQL and BCQ evaluate their networks on each observation repeated ``n`` times in a row; the
encoders merge those runs (``consecutive_runs``).  Features and gradients must equal the plain
computation over every row, and a whole CQL/BCQ update must give the same losses.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from imaginebench.algos import encoders
from imaginebench.algos.encoders import InstructionEncoderFactory, consecutive_runs
from imaginebench.data import Episode, EpisodeDataset
from tests.algos.helpers import HashEncoder

STATE, EMBED, ACTION = 5, 12, 3


def _repeated(batch: int, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(batch, STATE + EMBED, generator=g)
    return obs.repeat_interleave(n, dim=0), obs


def test_consecutive_runs_finds_repeats_and_rebuilds_rows():
    x, obs = _repeated(4, 3)
    distinct, index = consecutive_runs(x)
    assert torch.equal(distinct, obs)
    assert torch.equal(distinct[index], x)
    assert index.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]


def test_consecutive_runs_leaves_distinct_rows_alone():
    assert consecutive_runs(torch.randn(8, 4)) is None
    assert consecutive_runs(torch.randn(1, 4)) is None
    # identical rows that are not neighbours are not merged (only repeat-then-flatten runs are)
    x = torch.randn(2, 4)
    assert consecutive_runs(torch.cat([x, x])) is None


def test_consecutive_runs_skips_inputs_that_need_their_gradient():
    x, _ = _repeated(4, 3)
    assert consecutive_runs(x.requires_grad_(True)) is None


def _plain(monkeypatch) -> None:
    monkeypatch.setattr(encoders, "consecutive_runs", lambda x: None)


@pytest.mark.parametrize("projection", [0, 4])
@pytest.mark.parametrize("with_action", [False, True])
def test_features_and_gradients_match_the_plain_computation(monkeypatch, projection, with_action):
    factory = InstructionEncoderFactory(hidden_units=[16, 16], state_dim=STATE, instruction_projection=projection)
    torch.manual_seed(0)
    enc = (factory.create_with_action((STATE + EMBED,), ACTION) if with_action
           else factory.create((STATE + EMBED,)))
    x, _ = _repeated(6, 5)
    action = torch.randn(x.shape[0], ACTION)

    def run():
        enc.zero_grad()
        out = enc(x, action) if with_action else enc(x)
        (out * torch.linspace(-1, 1, out.shape[1])).sum().backward()
        return out.detach(), {k: p.grad.clone() for k, p in enc.named_parameters()}

    fast = run()
    with monkeypatch.context() as m:
        _plain(m)
        plain = run()
    torch.testing.assert_close(fast[0], plain[0], rtol=1e-5, atol=1e-6)
    assert fast[1].keys() == plain[1].keys()
    for name in fast[1]:
        torch.testing.assert_close(fast[1][name], plain[1][name], rtol=1e-4, atol=1e-5, msg=name)


def _dataset() -> EpisodeDataset:
    rng = np.random.default_rng(0)
    episodes = []
    for i in range(6):
        states = rng.normal(size=(9, STATE)).astype(np.float32)
        actions = rng.uniform(-1, 1, size=(8, ACTION)).astype(np.float32)
        done = np.zeros(8, bool)
        done[-1] = i % 2 == 0
        episodes.append(Episode("t", f"instruction {i % 3}", states, actions, rng.normal(size=8).astype(np.float32),
                                terminals=done, truncations=~done & (np.arange(8) == 7), successes=done))
    return EpisodeDataset.from_episodes(episodes)


@pytest.mark.parametrize("algo_name", ["cql", "bcq"])
def test_an_update_with_merged_repeats_gives_the_same_losses(monkeypatch, algo_name):
    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.registry import get_spec
    from imaginebench.algos.sampler import MixedReplaySource, fast_update

    def losses():
        source = MixedReplaySource({"real": _dataset()}, encoder=HashEncoder(), seed=0)
        torch.manual_seed(0)
        algo = build_algorithm(get_spec(algo_name).default_config(hidden_units=(32, 32)), source, batch_size=16)
        return [fast_update(algo, source.sample_transition_batch(16)) for _ in range(3)]

    fast = losses()
    with monkeypatch.context() as m:
        _plain(m)
        plain = losses()
    for a, b in zip(fast, plain):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-5), key
