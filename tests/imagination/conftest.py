"""Fixtures of the imagination tests: the ``tiny`` backbone (random Llama, real tokenizer)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from imaginebench.data.dataset import Episode, EpisodeDataset  # noqa: E402
from imaginebench.imagination.backbones import load_backbone  # noqa: E402
from imaginebench.imagination.model import ModelConfig, Normaliser, RolloutLM  # noqa: E402

STATE_DIM, N_ACTIONS = 10, 40


def make_model(lora: bool = False, seed: int = 0, state_dim: int = STATE_DIM, n_actions: int = N_ACTIONS,
               normaliser: Normaliser | None = None) -> RolloutLM:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    norm = normaliser or Normaliser.fit(rng.uniform(-0.4, 0.4, (64, state_dim)))
    model = RolloutLM(load_backbone("tiny"), ModelConfig(backbone="tiny", lora=lora), state_dim, True, n_actions, norm)
    # A random model's state head starts at zero (residual); give it something to say.
    with torch.no_grad():
        model.state_head.weight.normal_(0, 0.05)
    return model.eval()


@pytest.fixture(scope="module")
def tiny_model() -> RolloutLM:
    return make_model()


def successful_episodes(n: int, seed: int, states, actions, instruction, discrete: bool, action_dim: int) -> EpisodeDataset:
    """``n`` random episodes of 3-6 steps, each ending in success: ``states(rng, t + 1)``,
    ``actions(rng, t)`` and ``instruction(i)`` make their contents."""
    rng = np.random.default_rng(seed)
    episodes = []
    for i in range(n):
        t = int(rng.integers(3, 7))
        done = np.zeros(t, bool)
        done[-1] = True
        episodes.append(Episode(task=f"task{i % 2}", instruction=instruction(i), states=states(rng, t + 1),
                                actions=actions(rng, t), rewards=np.zeros(t, np.float32), terminals=done,
                                truncations=np.zeros(t, bool), successes=done.copy()))
    return EpisodeDataset.from_episodes(episodes, metadata={"discrete_actions": discrete, "action_dim": action_dim})
