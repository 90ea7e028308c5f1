"""Discounting: the TD target the algorithms actually compute on a hand-built 3-step chain.

Two 3-step episodes over states s0 -> s1 -> s2 -> s3: one ends because the task succeeded
(``terminated``), the other because the horizon ran out (``truncated``).  The target of every
transition must be ``r + γ·(1 − terminal)·V(s')`` with ``terminal`` true only for the last
step of the terminated episode; the truncated episode's last step still bootstraps from the
real final state.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from imaginebench.data import Episode, EpisodeDataset
from tests.algos.helpers import HashEncoder

GAMMA = 0.9


def _chain(discrete: bool) -> EpisodeDataset:
    states = np.array([[0.0, 0.0], [1.0, 0.5], [2.0, -0.5], [3.0, 1.0]], dtype=np.float32)
    actions = np.array([1, 0, 1]) if discrete else np.array([[0.5], [-0.5], [0.25]], dtype=np.float32)
    rewards = np.array([0.1, 0.2, 1.0], dtype=np.float32)
    done = np.array([False, False, True])
    never = np.zeros(3, bool)
    return EpisodeDataset.from_episodes([
        Episode("t", "reach the goal", states, actions, rewards, terminals=done, truncations=never, successes=done),
        Episode("t", "reach the goal slowly", states + 0.25, actions, rewards, terminals=never, truncations=done,
                successes=never),
    ])


class _Recorder:
    """Wraps a loss function and records the ``target`` (y) argument it receives."""

    def __init__(self, fn):
        self.fn, self.targets = fn, []

    def __call__(self, value, target, *args, **kwargs):
        self.targets.append(target.detach().clone())
        return self.fn(value, target, *args, **kwargs)


def _build(name: str, discrete: bool):
    from imaginebench.algos.factory import build_algorithm
    from imaginebench.algos.registry import get_spec
    from imaginebench.algos.sampler import MixedReplaySource

    source = MixedReplaySource({"real": _chain(discrete)}, encoder=HashEncoder())
    torch.manual_seed(0)
    algo = build_algorithm(get_spec(name).default_config(hidden_units=(16,), gamma=GAMMA), source, batch_size=6)
    batch = source.batch_from_indices(np.arange(6))
    np.testing.assert_array_equal(batch.terminals[:, 0], [0, 0, 1, 0, 0, 0])
    return algo, batch


def _scaled(algo, x: np.ndarray) -> torch.Tensor:
    return algo.config.observation_scaler.transform(torch.from_numpy(x))


def test_discrete_cql_target(monkeypatch):
    from d3rlpy.models.torch.q_functions import mean_q_function

    from imaginebench.algos.sampler import fast_update

    algo, batch = _build("discrete_cql", discrete=True)
    recorder = _Recorder(mean_q_function.compute_huber_loss)
    monkeypatch.setattr(mean_q_function, "compute_huber_loss", recorder)
    with torch.no_grad():  # V(s') = max_a Q_target(s', a), before the update changes anything
        v_next = algo.impl._modules.targ_q_funcs[0](_scaled(algo, batch.next_observations)).q_value.max(1).values
    fast_update(algo, batch)
    expected = batch.rewards[:, 0] + GAMMA * (1 - batch.terminals[:, 0]) * v_next.numpy()
    (y,) = recorder.targets
    np.testing.assert_allclose(y[:, 0].numpy(), expected, rtol=1e-5, atol=1e-6)
    assert y[2, 0].item() == pytest.approx(1.0)                              # terminated: no bootstrap
    assert y[5, 0].item() == pytest.approx(1.0 + GAMMA * v_next[5].item())   # truncated: bootstraps


def test_iql_target(monkeypatch):
    import types

    from d3rlpy.models.torch.q_functions import mean_q_function

    from imaginebench.algos.sampler import fast_update

    algo, batch = _build("iql", discrete=False)
    recorder = _Recorder(torch.nn.functional.mse_loss)
    fake_f = types.SimpleNamespace(**{k: getattr(torch.nn.functional, k) for k in dir(torch.nn.functional)
                                      if not k.startswith("__")})
    fake_f.mse_loss = recorder
    monkeypatch.setattr(mean_q_function, "F", fake_f)
    with torch.no_grad():  # IQL bootstraps from its state-value function V(s')
        v_next = algo.impl._modules.value_func(_scaled(algo, batch.next_observations))[:, 0]
    fast_update(algo, batch)
    expected = batch.rewards[:, 0] + GAMMA * (1 - batch.terminals[:, 0]) * v_next.numpy()
    assert len(recorder.targets) == 2  # one per critic, same target
    for y in recorder.targets:
        np.testing.assert_allclose(y[:, 0].numpy(), expected, rtol=1e-5, atol=1e-6)
