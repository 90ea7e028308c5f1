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


def test_rollout_end_labels(tiny_model):
    b = _builder(tiny_model)
    rng = np.random.default_rng(2)
    states = rng.normal(size=(6, 10)).astype(np.float32)
    actions = rng.integers(0, 40, 5)
    seq = b.example("rollout", "go", states, actions, rng)
    state_pos = np.flatnonzero(seq.kinds == STATE)
    # Every state position is labelled; only the last state of a terminal episode is an end.
    assert seq.ends[state_pos].tolist() == [0] * 5 + [1]
    assert (seq.ends[seq.kinds != STATE] == -1).all()
    # A time-limit truncation's last state is not an end.
    trunc = b.example("rollout", "go", states, actions, rng, terminal=False)
    assert trunc.ends[trunc.kinds == STATE].tolist() == [0] * 6
    # Windows: only the episode's true last state may be an end.
    seen = set()
    for _ in range(60):
        w = b.example("rollout", "go", states, actions, rng, max_steps=2)
        labels = w.ends[w.kinds == STATE]
        assert len(labels) == 3 and labels[:2].tolist() == [0, 0]
        ends_at_last = np.array_equal(w.states[w.kinds == STATE][-1], states[-1])
        assert labels[-1] == int(ends_at_last)
        seen.add(int(labels[-1]))
    assert seen == {0, 1}
    # The other tasks carry no end labels; padding neither.
    for task in ("dynamics", "consequence", "explanation"):
        assert (b.example(task, "go", states, actions, rng).ends == -1).all()
    batch = collate([seq, b.dynamics(states[0], 1, states[1])])
    assert batch.ends.shape == batch.kinds.shape
    assert batch.ends[0, : len(seq)].tolist() == seq.ends.tolist() and (batch.ends[1] == -1).all()
    dyn = b.dynamics(states[0], 1, states[1])
    left = collate([seq, dyn], left_pad=True)
    assert (left.ends[1] == -1).all() and left.ends[0].tolist() == seq.ends.tolist()
    assert left.kinds.shape[1] > len(dyn)


def _window_offsets(b, states, actions, rng, n, **kw):
    """Offsets (first state's row in the episode) of ``n`` rollout windows of 3 steps."""
    offsets = []
    for _ in range(n):
        w = b.example("rollout", "go", states, actions, rng, max_steps=3, **kw)
        first = w.states[w.kinds == STATE][0]
        offsets.append(int(np.flatnonzero((states == first).all(axis=1))[0]))
    return np.array(offsets)


def test_windows_begin_at_the_episode_start_for_the_given_share(tiny_model):
    """Generation begins at an initial state: a share of the windows of long episodes must show it."""
    b = _builder(tiny_model)
    states = np.arange(21 * 10, dtype=np.float32).reshape(21, 10)  # 20 steps, every state distinct
    actions = np.arange(20) % 40
    uniform = _window_offsets(b, states, actions, np.random.default_rng(0), 400)
    assert set(uniform) == set(range(18)) and (uniform == 0).mean() < 0.15  # uniform over the 18 offsets
    always = _window_offsets(b, states, actions, np.random.default_rng(0), 50, start_share=1.0)
    assert (always == 0).all()
    half = _window_offsets(b, states, actions, np.random.default_rng(0), 400, start_share=0.5)
    assert 0.45 < (half == 0).mean() < 0.62 and len(set(half)) > 10  # 0.5 + 0.5/18 expected at offset 0
    # share 0 draws nothing extra: the same windows as before the option existed
    again = _window_offsets(b, states, actions, np.random.default_rng(0), 400, start_share=0.0)
    np.testing.assert_array_equal(again, uniform)
    # episodes no longer than the window are never cut, whatever the share
    short = b.example("rollout", "go", states[:4], actions[:3], np.random.default_rng(0), max_steps=3, start_share=0.5)
    np.testing.assert_array_equal(short.states[short.kinds == STATE], states[:4])


def test_start_window_share_is_checked_and_reaches_the_sampler(tiny_model):
    import pytest

    from imaginebench.imagination.lm_training import TrainConfig, _Sampler

    states = np.arange(21 * 10, dtype=np.float32).reshape(21, 10)
    episodes = [("go", states, np.arange(20) % 40, True)]
    for share, expect_all_at_start in ((1.0, True), (0.0, False)):
        cfg = TrainConfig(max_rollout_steps=3, start_window_share=share, task_weights=(1.0, 0.0, 0.0, 0.0))
        sampler, rng = _Sampler(_builder(tiny_model), episodes, cfg), np.random.default_rng(1)
        firsts = [sampler.example(rng).states for _ in range(40)]
        at_start = [bool((f == states[0]).all(axis=1).any()) for f in firsts]
        assert all(at_start) == expect_all_at_start
    assert TrainConfig().start_window_share == 0.5
    assert TrainConfig().to_dict()["start_window_share"] == 0.5  # recorded in the checkpoint's train settings
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="start_window_share"):
            TrainConfig(start_window_share=bad)
