"""HalfCheetah-v0 pictures: render_state draws any 18-dim state at a given x with gymnasium's
MuJoCo renderer, off the episode; rollout strips place the body at its travel so far.

Drawing needs an OpenGL backend chosen before ``mujoco`` is imported, so the drawing check runs
in a subprocess with ``MUJOCO_GL=egl`` and skips when it finds no OpenGL context.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from tests.gl import run_drawing_check

pytest.importorskip("mujoco")

from imaginebench.domains.halfcheetah.env import HalfCheetahEnv  # noqa: E402

_RENDER = textwrap.dedent("""
    import numpy as np
    from imaginebench.domains.halfcheetah.env import HalfCheetahEnv
    from imaginebench.data.dataset import Episode
    from imaginebench.imagination.render import rollout_strip
    env = HalfCheetahEnv("train", render_mode="rgb_array")
    env.reset(seed=3, options={"task": "run_forward"})
    for _ in range(5):
        env.step(env.action_space.sample())
    state = env.state.copy()
    try:
        image = env.render_state(state)
    except RuntimeError as exc:
        print("NO-GL", exc)
        raise SystemExit(0)
    assert image.shape == (192, 256, 3) and image.dtype == np.uint8 and image.std() > 10
    np.testing.assert_array_equal(env.state, state)  # drawing never touches the episode
    np.testing.assert_array_equal(env.render_state(state), image)  # deterministic
    bent = state.copy()
    bent[3:9] = [-0.5, 0.7, 0.7, -1.0, -1.2, 0.6]  # another pose of the legs
    assert np.abs(env.render_state(bent).astype(int) - image.astype(int)).sum() > 0
    # the camera follows the torso: the same pose 0.5 m on draws the body in the same place,
    # the chequered floor shifted under it
    on = env.render_state(state, x=0.5)
    assert np.abs(on.astype(int) - image.astype(int)).sum() > 0
    # render() draws the live state at the episode's travel so far
    from imaginebench.domains.halfcheetah import success as S
    np.testing.assert_array_equal(env.render(), env.render_state(state, x=float(env.progress[S.P_X])))
    assert env.render_state(state, width=160, height=120).shape == (120, 160, 3)
    try:
        env.render_state(np.full(18, np.nan))
        raise AssertionError("NaN state drawn")
    except ValueError as exc:
        assert "finite" in str(exc)
    # a strip labels each frame with its step and travel
    states = np.zeros((4, 18)); states[1:, 0] = 0.5
    ep = Episode(task="run_forward", instruction="run", states=states, actions=np.zeros((3, 6), np.float32),
                 rewards=np.zeros(3, np.float32), terminals=np.zeros(3, bool),
                 truncations=np.zeros(3, bool), successes=np.zeros(3, bool))
    strip = rollout_strip(ep, env.render_state, "imaginary", frames=4)
    assert strip.shape[0] > 192 and strip.shape[1] >= 4 * 256
    env.close()
    assert env._renderer is None
    print("OK")
""")


def test_halfcheetah_render_state_draws_any_state():
    run_drawing_check(_RENDER)


def test_track_x_is_the_travel_so_far():
    states = np.zeros((4, 18))
    states[:, 0] = [9.0, 0.5, -0.25, 1.0]  # the first state's dx is the history before the episode
    np.testing.assert_allclose(HalfCheetahEnv.track_x(states), [0.0, 0.5, 0.25, 1.25])
    assert HalfCheetahEnv.track_x(np.zeros((0, 18))).shape == (0,)
