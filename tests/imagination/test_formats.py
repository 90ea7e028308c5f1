"""Prompt formats and placeholder replacement (embedding positions)."""

from __future__ import annotations

import numpy as np
import torch

from imaginebench.imagination.formats import ACTION, STATE, TASKS, TEXT, SequenceBuilder, collate, goal_text


def _builder(model):
    return SequenceBuilder(model.tokenizer, model.state_dim, model.discrete, model.action_dim)


def test_rollout_sequence_layout(tiny_model):
    b = _builder(tiny_model)
    states = np.arange(40, dtype=np.float32).reshape(4, 10) / 100
    actions = np.array([3, 7, 11])
    seq = b.rollout("push the red ball left.", states, actions)
    numeric = np.flatnonzero(seq.kinds != TEXT)
    # S0 A0 S1 A1 S2 A2 S3 at the end, one position each, after the prompt tokens.
    assert list(seq.kinds[numeric]) == [STATE, ACTION] * 3 + [STATE]
    assert numeric[0] == len(seq) - 7 and np.all(np.diff(numeric) == 1)
    np.testing.assert_array_equal(seq.states[numeric[::2]], states)
    np.testing.assert_array_equal(seq.actions[numeric[1::2]], actions)
    assert not seq.targets[numeric[0]] and seq.targets[numeric[1:]].all() and not seq.targets[: numeric[0]].any()
    # Each state's anchor is the previous state position (residual reference).
    assert list(seq.anchors[numeric[2::2]]) == list(numeric[:-2:2])
    # The generation prompt is token for token the training prompt.
    prompt = b.rollout_prompt("push the red ball left.", states[0])
    assert np.array_equal(prompt.tokens, seq.tokens[: len(prompt)])
    assert goal_text("push the red ball left. ") == "push the red ball left"


def test_every_task_has_targets(tiny_model):
    b = _builder(tiny_model)
    rng = np.random.default_rng(0)
    states = rng.normal(size=(6, 10)).astype(np.float32)
    actions = rng.integers(0, 40, 5)
    for task in TASKS:
        seq = b.example(task, "move the blue ball to the right", states, actions, rng, max_steps=3)
        assert seq.targets.any(), task
        assert not seq.targets[0]
    expl = b.explanation("go", states, actions)
    assert expl.kinds[expl.targets].tolist() == [TEXT] * int(expl.targets.sum())
    assert expl.tokens[-1] == tiny_model.tokenizer.eos_token_id


def test_placeholders_are_replaced_by_numeric_embeddings(tiny_model):
    b = _builder(tiny_model)
    rng = np.random.default_rng(1)
    seqs = [b.rollout("push the red ball to the left of the blue ball", rng.normal(size=(3, 10)).astype(np.float32),
                      rng.integers(0, 40, 2)),
            b.dynamics(rng.normal(size=10).astype(np.float32), 5, rng.normal(size=10).astype(np.float32))]
    for left in (False, True):
        batch = collate(seqs, left_pad=left)
        t = tiny_model.tensors(batch)
        with torch.no_grad():
            emb = tiny_model.embed(t["kinds"], t["tokens"], t["states"], t["actions"])
            for i, s in enumerate(seqs):
                off = batch.kinds.shape[1] - len(s) if left else 0
                for p in range(len(s)):
                    q = p + off
                    if s.kinds[p] == STATE:
                        want = tiny_model.state_embed((torch.as_tensor(s.states[p]) - tiny_model.state_mean)
                                                      / tiny_model.state_std)
                    elif s.kinds[p] == ACTION:
                        want = tiny_model.action_embed(torch.as_tensor(int(s.actions[p])))
                    else:
                        want = tiny_model.token_embed(torch.as_tensor(int(s.tokens[p])))
                    torch.testing.assert_close(emb[i, q], want)
                if left:
                    assert not batch.mask[i, :off].any() and batch.mask[i, off:].all()
                    a = s.anchors[s.anchors >= 0]
                    assert np.array_equal(batch.anchors[i][batch.anchors[i] >= 0], a + off)
