"""The instruction encoders compute repeated work once, without changing the maths.

CQL and BCQ evaluate their networks on each observation repeated ``n`` times in a row; the
encoders merge those runs (``consecutive_runs``).  And a batch holds few distinct phrasings:
the instruction part of the first layer runs once per distinct embedding
(``distinct_instructions``).  Features and gradients must equal the plain computation over
every row, and a whole update of every algorithm that uses the encoders must give the same
losses.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from imaginebench.algos import encoders
from imaginebench.algos.encoders import InstructionEncoderFactory, consecutive_runs, distinct_instructions
from imaginebench.data import Episode, EpisodeDataset
from tests.algos.helpers import HashEncoder

STATE, EMBED, ACTION = 5, 12, 3


def _repeated(batch: int, n: int, seed: int = 0, phrasings: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` observations (``phrasings`` distinct embeddings among them, not neighbouring),
    each repeated ``n`` times in a row."""
    g = torch.Generator().manual_seed(seed)
    bank = torch.randn(phrasings, EMBED, generator=g)
    obs = torch.cat([torch.randn(batch, STATE, generator=g), bank[torch.arange(batch) % phrasings]], dim=1)
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


def test_distinct_instructions_finds_every_phrasing_wherever_its_rows_are():
    _, obs = _repeated(12, 1, phrasings=3)
    distinct, index = distinct_instructions(obs, STATE)
    assert distinct.shape == (3, EMBED)
    assert torch.equal(distinct[index], obs[:, STATE:])
    assert index.tolist() == [0, 1, 2] * 4 or len(set(index.tolist())) == 3


def test_distinct_instructions_leaves_mostly_distinct_or_unsplittable_inputs_alone():
    _, obs = _repeated(8, 1, phrasings=8)
    assert distinct_instructions(obs, STATE) is None  # too few repeats to pay for the gather
    _, obs = _repeated(8, 1, phrasings=2)
    assert distinct_instructions(obs, 0) is None  # no state part known
    assert distinct_instructions(obs.clone().requires_grad_(True), STATE) is None


def test_a_key_collision_falls_back_to_the_plain_computation(monkeypatch):
    """Distinct embeddings that happen to share a probe key are never merged."""
    _, obs = _repeated(8, 1, phrasings=2)
    monkeypatch.setattr(encoders, "_probe", lambda width, dtype, device: torch.zeros(width, dtype=dtype))
    assert distinct_instructions(obs.clone(), STATE) is None


def test_shortcuts_can_be_turned_off_for_a_plain_computation():
    x, _ = _repeated(4, 3)
    with encoders.shortcuts(repeats=False, phrasings=False):
        assert consecutive_runs(x) is None and distinct_instructions(x.clone(), STATE) is None
    with encoders.shortcuts(repeats=True, phrasings=False):
        assert consecutive_runs(x) is not None and distinct_instructions(x.clone(), STATE) is None
    assert consecutive_runs(x.clone()) is not None and distinct_instructions(x.clone(), STATE) is not None


def _plain(monkeypatch) -> None:
    monkeypatch.setattr(encoders, "consecutive_runs", lambda x: None)
    monkeypatch.setattr(encoders, "distinct_instructions", lambda x, state_dim: None)


@pytest.mark.parametrize("projection", [0, 4])
@pytest.mark.parametrize("with_action", [False, True])
@pytest.mark.parametrize("repeats", [1, 5])
def test_features_and_gradients_match_the_plain_computation(monkeypatch, projection, with_action, repeats):
    factory = InstructionEncoderFactory(hidden_units=[16, 16], state_dim=STATE, instruction_projection=projection)
    torch.manual_seed(0)
    enc = (factory.create_with_action((STATE + EMBED,), ACTION) if with_action
           else factory.create((STATE + EMBED,)))
    x, _ = _repeated(6, repeats)
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


def _dataset(discrete: bool = False) -> EpisodeDataset:
    rng = np.random.default_rng(0)
    episodes = []
    for i in range(6):
        states = rng.normal(size=(9, STATE)).astype(np.float32)
        actions = (rng.integers(0, ACTION, size=8) if discrete
                   else rng.uniform(-1, 1, size=(8, ACTION)).astype(np.float32))
        done = np.zeros(8, bool)
        done[-1] = i % 2 == 0
        episodes.append(Episode("t", f"instruction {i % 3}", states, actions, rng.normal(size=8).astype(np.float32),
                                terminals=done, truncations=~done & (np.arange(8) == 7), successes=done))
    return EpisodeDataset.from_episodes(episodes)


ALGORITHMS = ["bc", "cql", "bcq", "td3bc", "sac", "iql", "rebrac", "calql", "prdc", "combo",
              "discrete_bc", "discrete_cql", "discrete_bcq", "discrete_sac"]
"""Every algorithm whose networks start with the instruction encoders (the Decision
Transformers read the embedding through their own token embedding)."""


@pytest.mark.parametrize("algo_name", ALGORITHMS)
def test_an_update_with_merged_repeats_and_phrasings_gives_the_same_losses(monkeypatch, algo_name):
    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.registry import get_spec
    from imaginebench.algos.sampler import MixedReplaySource

    def losses():
        discrete = algo_name.startswith("discrete_")
        source = MixedReplaySource({"real": _dataset(discrete)}, encoder=HashEncoder(), seed=0,
                                   action_size=ACTION if discrete else None)
        torch.manual_seed(0)
        config = get_spec(algo_name).default_config(hidden_units=(32, 32))
        algo = build_algorithm(config, source, batch_size=16)
        return [config.update(algo, source, 16) for _ in range(3)]  # the runner's own update

    splits = []
    real_split = encoders.distinct_instructions

    def counted(x, state_dim):
        out = real_split(x, state_dim)
        splits.append(out is not None)
        return out

    with monkeypatch.context() as m:
        m.setattr(encoders, "distinct_instructions", counted)
        fast = losses()
    assert any(splits)  # the shortcut did run in these updates
    with monkeypatch.context() as m:
        _plain(m)
        plain = losses()
    for a, b in zip(fast, plain):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-5), key
