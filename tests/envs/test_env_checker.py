"""Gymnasium's own env checker passes without warnings where the state has known bounds, and
real expert states lie inside the bounded observation spaces."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import imaginebench
from imaginebench.data import collect


@pytest.mark.parametrize("env_id", ["CLEVR-v0", "BabyAI-v0"])
def test_gymnasium_env_checker_gives_no_warning(env_id):
    env = imaginebench.make(env_id, level="hard", encode_instruction=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped, skip_render_check=True)
    assert [str(w.message) for w in caught] == []
    space = env.observation_space
    assert np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))
    env.close()


@pytest.mark.parametrize("env_id, level", [("CLEVR-v0", "train"), ("CLEVR-v0", "hard"), ("BabyAI-v0", "train"),
                                           ("BabyAI-v0", "hard")])
def test_expert_and_random_states_lie_in_the_observation_space(env_id, level):
    env = imaginebench.make(env_id, level=level, encode_instruction=False)
    space = env.observation_space
    for policy in ("expert", "random"):
        states = collect(env_id, level, 40, seed=5, policy=policy, progress=False).states
        assert np.all(states >= space.low) and np.all(states <= space.high), policy
    env.close()
