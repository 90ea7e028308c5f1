"""BabyAI-v0 pictures: render_state draws any state with minigrid's renderer, off the episode."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("minigrid")

from imaginebench.domains.babyai import layout as L  # noqa: E402
from imaginebench.domains.babyai.env import BabyAIEnv  # noqa: E402


@pytest.fixture()
def env():
    e = BabyAIEnv("hard")
    e.reset(seed=5)
    yield e
    e.close()


def _walkable_neighbour(env: BabyAIEnv) -> tuple[int, int]:
    row, col = int(env.state[L.AGENT_ROW]), int(env.state[L.AGENT_COL])
    for d_row, d_col in L.MOVES.values():
        if L.is_interior(row + d_row, col + d_col):
            return row + d_row, col + d_col
    raise AssertionError("the agent has no interior neighbour")


def test_render_state_draws_a_reset_state(env):
    image = env.render_state(env.state)
    assert image.shape == (8 * 32, 8 * 32, 3) and image.dtype == np.uint8
    assert image.std() > 10
    assert env.render_state(env.state, tile_size=16).shape == (128, 128, 3)


def test_render_state_moves_with_the_agent_and_leaves_the_episode_alone(env):
    state = env.state.copy()
    text = env.render_text()
    image = env.render_state(state)
    moved = state.copy()
    moved[[L.AGENT_ROW, L.AGENT_COL]] = _walkable_neighbour(env)
    assert not np.array_equal(env.render_state(moved), image)
    np.testing.assert_array_equal(env.state, state)
    assert env.render_text() == text  # the episode's room is untouched
    np.testing.assert_array_equal(env.render_state(state), image)  # deterministic


def test_render_state_shows_a_carried_object(env):
    state = env.state.copy()
    carried = state.copy()
    carried[[L.KEY_ROW, L.KEY_COL]] = state[[L.AGENT_ROW, L.AGENT_COL]]
    carried[L.CARRIED_TYPE], carried[L.CARRIED_COLOR] = L.CARRIED_CODE["key"], state[L.KEY_COLOR]
    assert not np.array_equal(env.render_state(carried), env.render_state(state))


def test_render_state_draws_illegal_imagined_states(env):
    junk = env.state + np.random.default_rng(0).normal(0.0, 3.0, L.STATE_DIM)
    image = env.render_state(junk)
    assert image.shape == (256, 256, 3) and image.dtype == np.uint8


def test_render_state_rejects_bad_input(env):
    with pytest.raises(ValueError, match=r"shape \(17,\)"):
        env.render_state(np.zeros(16))
    bad = env.state.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match=r"shape \(17,\)"):
        env.render_state(bad)


def test_render_follows_render_mode():
    e = BabyAIEnv("hard", render_mode="rgb_array")
    e.reset(seed=1)
    np.testing.assert_array_equal(e.render(), e.render_state(e.state))
    assert BabyAIEnv("hard").render() is None


def test_episode_strip_of_a_collected_dataset():
    from imaginebench.data.collect import collect
    from imaginebench.imagination.render import episode_strip

    dataset = collect("BabyAI-v0", "hard", episodes=2, workers=1, progress=False)
    strip = episode_strip(dataset, 0, frames=4)
    assert strip.dtype == np.uint8 and strip.ndim == 3 and strip.shape[2] == 3
    assert strip.shape[1] > strip.shape[0]
    with pytest.raises(ValueError, match=r"episode 2 does not exist: the dataset has 2 episodes \(0 … 1\)"):
        episode_strip(dataset, 2)
