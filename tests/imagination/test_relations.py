"""Relational state facts in the rollout model (``ModelConfig.relations``): a zero-initialised
embedding of the domain's facts added to the state embedding, saved and reloaded with the model,
and a warm start from a model without them that begins exactly where that model was."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from imaginebench.data.dataset import EpisodeDataset
from imaginebench.imagination import checkpoint as ckpt
from imaginebench.imagination.backbones import load_backbone
from imaginebench.imagination.lm_training import TrainConfig, train_rollout_model
from imaginebench.imagination.model import ModelConfig, Normaliser, RolloutLM

from .conftest import successful_episodes

pytest.importorskip("minigrid")
from imaginebench.domains.babyai.relations import RELATION_NAMES, relation_features  # noqa: E402

TRAIN = TrainConfig(steps=4, batch_size=4, warmup_steps=1, eval_every=2, checkpoint_every=2, log_every=1,
                    val_episodes=2, val_examples=2, augment=False)
PLAIN = ModelConfig(backbone="tiny", lora=False)


def _babyai_like(n: int = 10, seed: int = 0) -> EpisodeDataset:
    """Episodes with BabyAI's shapes (17 integer entries, 7 actions); the values are random."""
    return successful_episodes(n, seed, states=lambda rng, k: rng.integers(0, 7, (k, 17)).astype(np.float32),
                               actions=lambda rng, k: rng.integers(0, 7, k), instruction=lambda i: f"go to the ball {i % 3}",
                               discrete=True, action_dim=7)


def test_warm_start_adds_the_facts_at_zero_and_they_survive_a_reload(tmp_path):
    data = _babyai_like()
    train_rollout_model("BabyAI-v0", data, tmp_path / "plain", PLAIN, TRAIN, progress=False, device="cpu")
    source, _ = ckpt.load_checkpoint(tmp_path / "plain", device="cpu")
    assert source.relation_embed is None
    still = replace(TRAIN, steps=1, lr=1e-12, adapter_lr=1e-12, init_from=str(tmp_path / "plain"))
    train_rollout_model("BabyAI-v0", data, tmp_path / "rel", replace(PLAIN, relations=True), still, progress=False,
                        device="cpu")
    warm, meta = ckpt.load_checkpoint(tmp_path / "rel", device="cpu")
    assert meta["model"]["relations"] is True
    assert tuple(warm.relation_embed.weight.shape) == (warm.hidden_size, len(RELATION_NAMES))
    states = torch.as_tensor(data.states[:12])
    torch.testing.assert_close(warm.embed_states(states), source.embed_states(states), atol=1e-6, rtol=0)

    # once learned, the facts move the embedding by exactly their own linear map, and reload with it
    with torch.no_grad():
        warm.relation_embed.weight.normal_()
    facts = torch.as_tensor(relation_features(states.numpy()))
    expected = warm.state_embed(warm.normalise(states)) + PLAIN.relation_gain * warm.relation_embed(facts)
    torch.testing.assert_close(warm.embed_states(states), expected)
    ckpt.save_checkpoint(tmp_path / "saved", warm, {"env_id": "BabyAI-v0", "step": 1})
    again, _ = ckpt.load_checkpoint(tmp_path / "saved", device="cpu")
    torch.testing.assert_close(again.embed_states(states), expected)


def test_a_model_with_facts_needs_a_domain_that_has_them():
    norm = Normaliser.fit(np.random.default_rng(0).normal(size=(20, 10)))
    with pytest.raises(ValueError, match="no relational state features"):
        RolloutLM(load_backbone("tiny"), replace(PLAIN, relations=True), 10, True, 40, norm)
    with pytest.raises(ValueError, match="no relational state features"):
        RolloutLM(load_backbone("tiny"), replace(PLAIN, relations=True), 10, True, 40, norm,
                  relations=lambda s: None)


def test_the_cli_refuses_relations_for_a_domain_without_them(monkeypatch, tmp_path):
    from imaginebench.errors import UsageError
    from imaginebench.imagination.pipeline import train

    monkeypatch.setenv("IMAGINEBENCH_HOME", str(tmp_path))
    with pytest.raises(UsageError, match="CLEVR-v0 defines no relational state features"):
        train("CLEVR-v0", profile="tiny", relations=True)
    with pytest.raises(UsageError, match="pass --relations with it"):
        train("BabyAI-v0", profile="tiny", relation_gain=1.0)


def test_configs_saved_before_the_gain_existed_keep_gain_one():
    """Session 55's first relations run trained at gain 1; its checkpoints must load as they trained."""
    assert ModelConfig().relation_gain == 40.0
    assert ModelConfig.from_dict({"backbone": "tiny", "relations": True}).relation_gain == 1.0
    with pytest.raises(ValueError, match="relation_gain must be > 0"):
        ModelConfig(relation_gain=0.0)


def test_a_warm_start_across_gains_keeps_what_the_facts_contribute():
    from imaginebench.domains.babyai.relations import relation_features as facts_of
    from imaginebench.imagination.lm_training import _copy_shared_weights

    norm = Normaliser.fit(np.random.default_rng(0).integers(0, 7, (40, 17)).astype(np.float32))
    old = RolloutLM(load_backbone("tiny"), replace(PLAIN, relations=True, relation_gain=1.0), 17, True, 7, norm,
                    relations=facts_of)
    new = RolloutLM(load_backbone("tiny"), replace(PLAIN, relations=True), 17, True, 7, norm, relations=facts_of)
    with torch.no_grad():
        old.relation_embed.weight.normal_()
    _copy_shared_weights(old, new)
    states = torch.as_tensor(np.random.default_rng(1).integers(0, 7, (5, 17)).astype(np.float32))
    torch.testing.assert_close(new.embed_states(states), old.embed_states(states))
