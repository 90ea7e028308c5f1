"""The BabyAI room's eight symmetries map real episodes to exact episodes of the same task."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("minigrid")

import imaginebench
from imaginebench.data.collect import episode_seed, rollout
from imaginebench.domains.babyai import layout as L
from imaginebench.domains.babyai.grid import BabyAIWorld
from imaginebench.domains.babyai.symmetry import SYMMETRY_NAMES, transform_actions, transform_states


@pytest.fixture(scope="module")
def episodes():
    env = imaginebench.make("BabyAI-v0", level="train", encode_instruction=False).unwrapped
    tasks = env.tasks[:: max(1, len(env.tasks) // 24)]
    return env.domain, [rollout(env, task, episode_seed(11, i)) for i, task in enumerate(tasks)]


def test_eight_distinct_maps_that_form_a_group():
    rng = np.random.default_rng(0)
    state = np.zeros(L.STATE_DIM)
    for ri, ci in ((1, 2), (4, 5), (7, 8), (10, 11), (13, 14)):
        state[ri], state[ci] = rng.integers(1, 7, 2)
    images = {tuple(transform_states(state, name)) for name in SYMMETRY_NAMES}
    assert len(SYMMETRY_NAMES) == 8 and len(images) == 8
    for name in SYMMETRY_NAMES:  # each map's image of the moves is a permutation of the moves
        moves = transform_actions(np.arange(L.NUM_ACTIONS), name)
        assert sorted(moves[:4]) == [0, 1, 2, 3] and list(moves[4:]) == [4, 5, 6]
    # rot90 four times is the identity; a flip twice is the identity
    s = state
    for _ in range(4):
        s = transform_states(s, "rot90")
    np.testing.assert_array_equal(s, state)
    np.testing.assert_array_equal(transform_states(transform_states(state, "flip_cols"), "flip_cols"), state)


@pytest.mark.parametrize("name", SYMMETRY_NAMES)
def test_every_image_step_is_the_simulators_step_and_the_task_still_succeeds(episodes, name):
    domain, eps = episodes
    assert eps
    for ep in eps:
        states, actions = domain.transform_episode(ep.states, ep.actions, name)
        assert domain.is_legal_batch(states).all()
        for t in range(len(actions)):
            world = BabyAIWorld.from_state(states[t])
            world.step(int(actions[t]))
            np.testing.assert_array_equal(world.to_state(), states[t + 1], err_msg=f"{name} step {t} of {ep.task}")
        _, success = domain.score_rollout(domain.task(ep.task), states, actions)
        assert success[-1] == ep.successes[-1], (name, ep.task)
