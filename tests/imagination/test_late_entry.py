"""Late entry (``ModelConfig.numeric_layers``): numbers enter the decoder's top layers only."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from imaginebench.imagination.backbones import load_backbone
from imaginebench.imagination.formats import STATE, ACTION, SequenceBuilder, collate
from imaginebench.imagination.decoding import GenerateConfig, imagine_batch, initial_starts
from imaginebench.imagination.model import ModelConfig, Normaliser, RolloutLM

from .conftest import N_ACTIONS, STATE_DIM


def late_model(lora: bool = True, seed: int = 0) -> RolloutLM:
    torch.manual_seed(seed)
    norm = Normaliser.fit(np.random.default_rng(seed).uniform(-0.4, 0.4, (64, STATE_DIM)))
    model = RolloutLM(load_backbone("tiny"), ModelConfig(backbone="tiny", lora=lora, numeric_layers=1),
                      STATE_DIM, True, N_ACTIONS, norm)
    with torch.no_grad():
        model.state_head.weight.normal_(0, 0.05)
        for name, p in model.named_parameters():
            if "lora_B" in name:  # LoRA starts as the identity; make it matter
                p.normal_(0, 0.05)
    return model.eval()


@pytest.fixture(scope="module")
def clevr():
    pytest.importorskip("mujoco")
    from imaginebench.envs.registry import load_domain

    return load_domain("CLEVR-v0"), initial_starts("CLEVR-v0", "hard", 4, seed=5)


def test_only_the_top_layers_are_trained_and_text_below_is_cached():
    model = late_model(lora=True)
    assert model.entry_layer == 1 and len(model.decoder.layers) == 1
    trainable = [n for n, p in model.named_parameters() if p.requires_grad and n.startswith("lm.")]
    assert trainable and all(".layers.1." in n for n in trainable), trainable
    full = late_model(lora=False)
    frozen = {n for n, p in full.named_parameters() if not p.requires_grad}
    assert any(".layers.0." in n for n in frozen) and any("embed_tokens" in n for n in frozen)
    assert not any(".layers.1." in n for n in frozen)
    ids = tuple(model.tokenizer("push the red ball", add_special_tokens=False)["input_ids"])
    first = model.entry_text([ids])[0]
    assert model.entry_text([ids])[0] is first  # computed once


def test_text_hidden_states_do_not_depend_on_the_numbers_between_text_pieces():
    model = late_model()
    b = SequenceBuilder(model.tokenizer, STATE_DIM, True, N_ACTIONS)
    rng = np.random.default_rng(0)
    s1, s2 = rng.uniform(-0.3, 0.3, (2, 1, STATE_DIM)).astype(np.float32)
    seqs = [b.dynamics(s[0], 3, s[0]) for s in (s1, s2)]
    batch = collate(seqs)
    t = model.tensors(batch)
    with torch.no_grad():
        emb = model.embed(t["kinds"], t["tokens"], t["states"], t["actions"], t["mask"])
    text = t["kinds"][0] == 0
    torch.testing.assert_close(emb[0][text], emb[1][text])
    assert not torch.allclose(emb[0][t["kinds"][0] == STATE], emb[1][t["kinds"][0] == STATE])


def test_losses_decrease_on_a_fixed_batch():
    model = late_model(lora=True).train()
    b = SequenceBuilder(model.tokenizer, STATE_DIM, True, N_ACTIONS)
    rng = np.random.default_rng(1)
    seqs = [b.example(task, "push the red ball to the left of the blue ball",
                      rng.uniform(-0.3, 0.3, (4, STATE_DIM)).astype(np.float32), rng.integers(0, 40, 3), rng)
            for task in ("rollout", "dynamics", "consequence", "explanation")]
    batch = collate(seqs)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    first = float(model.losses(batch)["total"].detach())
    for _ in range(15):
        out = model.losses(batch)
        opt.zero_grad()
        out["total"].backward()
        opt.step()
    assert float(model.losses(batch)["total"].detach()) < 0.5 * first


def _teacher_forced(model, instruction, states, actions):
    """Training's view of a rollout: action logits and predicted next states at each step."""
    b = SequenceBuilder(model.tokenizer, model.state_dim, model.discrete, model.action_dim)
    batch = collate([b.rollout(instruction, states, actions)])
    t = model.tensors(batch)
    with torch.no_grad():
        hidden = model.decode(model.embed(t["kinds"], t["tokens"], t["states"], t["actions"], t["mask"]),
                              attention_mask=t["mask"].long()).last_hidden_state[0]
    kinds = t["kinds"][0]
    act_pos = torch.nonzero(kinds == ACTION).squeeze(-1)
    state_pos = torch.nonzero(kinds == STATE).squeeze(-1)[1:]
    anchors = t["states"][0, t["anchors"][0, state_pos]]
    with torch.no_grad():
        pred = model.denormalise(model.predict_states(hidden[state_pos - 1], anchors))
        return model.predict_actions(hidden[act_pos - 1]), pred


@pytest.mark.parametrize("lora", [True, False])
def test_a_prefix_scored_in_training_equals_the_same_prefix_in_generation(clevr, lora):
    domain, starts = clevr
    model = late_model(lora=lora, seed=3)
    cfg = GenerateConfig(temperature=0.0, max_steps=5, stop_on_end=False)
    episodes = imagine_batch(model, domain, starts, cfg, torch.Generator().manual_seed(0))
    assert sum(len(e) for e in episodes) > len(episodes)
    for ep in episodes:
        logits, pred = _teacher_forced(model, ep.instruction, ep.states, ep.actions)
        np.testing.assert_array_equal(logits.argmax(-1).numpy(), ep.actions)
        np.testing.assert_allclose(pred.numpy(), ep.states[1:], atol=1e-4)


def test_late_entry_cache_generation_equals_recomputation(clevr):
    domain, starts = clevr
    model = late_model(seed=4)
    cfg = dict(temperature=0.0, max_steps=4, stop_on_end=False)
    a = imagine_batch(model, domain, starts, GenerateConfig(use_cache=True, **cfg), torch.Generator().manual_seed(0))
    b = imagine_batch(model, domain, starts, GenerateConfig(use_cache=False, **cfg), torch.Generator().manual_seed(0))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.actions, y.actions)
        np.testing.assert_allclose(x.states, y.states, atol=1e-4)


@pytest.mark.parametrize("lora", [True, False])
def test_late_entry_checkpoint_round_trip(tmp_path, lora):
    from imaginebench.imagination import checkpoint as ckpt

    model = late_model(lora=lora, seed=6)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.01)
    ckpt.save_checkpoint(tmp_path / "ck", model, {"env_id": "CLEVR-v0", "step": 2})
    loaded, meta = ckpt.load_checkpoint(tmp_path / "ck", device="cpu")
    assert meta["model"]["numeric_layers"] == 1 and loaded.entry_layer == 1
    b = SequenceBuilder(model.tokenizer, STATE_DIM, True, N_ACTIONS)
    rng = np.random.default_rng(2)
    batch = collate([b.example(task, "push the red ball to the left of the blue ball",
                               rng.uniform(-0.3, 0.3, (4, STATE_DIM)).astype(np.float32), rng.integers(0, 40, 3), rng)
                     for task in ("rollout", "dynamics", "explanation")])
    with torch.no_grad():
        a, c = model.losses(batch), loaded.losses(batch)
    for k in ("state", "action", "text"):
        torch.testing.assert_close(a[k], c[k])


def test_a_depth_at_or_above_the_backbone_is_the_full_depth_model():
    torch.manual_seed(0)
    norm = Normaliser.fit(np.random.default_rng(0).uniform(-0.4, 0.4, (64, STATE_DIM)))
    model = RolloutLM(load_backbone("tiny"), ModelConfig(backbone="tiny", numeric_layers=4), STATE_DIM, True,
                      N_ACTIONS, norm)
    assert model.entry_layer == 0 and not model.late_entry and len(model.decoder.layers) == 2
