"""CLEVR-v0 pictures: render_state draws any state with MuJoCo's renderer, off the episode.

Drawing needs an OpenGL backend chosen before ``mujoco`` is imported, so the drawing checks
run in a subprocess with ``MUJOCO_GL=egl`` and skip when it finds no OpenGL context.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from tests.gl import run_drawing_check

pytest.importorskip("mujoco")

from imaginebench.domains.clevr.env import ClevrEnv  # noqa: E402

_CLEVR_RENDER = textwrap.dedent("""
    import numpy as np
    from imaginebench.domains.clevr.env import ClevrEnv
    from imaginebench.domains.clevr.physics import TABLE_X, TABLE_Y
    env = ClevrEnv("train", render_mode="rgb_array")
    env.reset(seed=3)
    state = env.state.copy()
    try:
        image = env.render_state(state)
    except RuntimeError as exc:
        print("NO-GL", exc)
        raise SystemExit(0)
    assert image.shape == (256, 256, 3) and image.dtype == np.uint8 and image.std() > 10
    moved = state.copy()
    moved[0] = -moved[0]  # the red ball mirrored left-right
    moved[1] = TABLE_Y[1] if moved[1] < 0.1 else TABLE_Y[0]
    assert np.abs(env.render_state(moved).astype(int) - image.astype(int)).sum() > 0
    np.testing.assert_array_equal(env.state, state)  # drawing never touches the episode
    np.testing.assert_array_equal(env.render_state(state), image)  # deterministic
    np.testing.assert_array_equal(env.render(), image)
    assert env.render_state(state, width=160, height=120).shape == (120, 160, 3)
    # a ball in each corner of the legal area, one in the middle: all five colours are in view
    corners = np.array([TABLE_X[0], TABLE_Y[0], TABLE_X[1], TABLE_Y[0], TABLE_X[0], TABLE_Y[1],
                        TABLE_X[1], TABLE_Y[1], 0.0, 0.1])
    img = env.render_state(corners).astype(int)
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    colours = {"red": (r > 150) & (g < 60) & (b < 60), "blue": (b > 150) & (r < 60) & (g < 60),
               "green": (g > 150) & (r < 60) & (b < 60), "cyan": (g > 150) & (b > 150) & (r < 60),
               "purple": (r > 80) & (b > 100) & (g < 40)}
    for name, mask in colours.items():
        assert mask.sum() > 20, name
    env.close()
    assert env._view is None
    print("OK")
""")


def test_clevr_render_state_draws_any_state():
    run_drawing_check(_CLEVR_RENDER)


def test_clevr_render_state_rejects_bad_input_before_drawing():
    env = ClevrEnv("train")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(10,\)"):
        env.render_state(np.zeros(9))
    bad = env.state.copy()
    bad[3] = np.inf
    with pytest.raises(ValueError, match=r"shape \(10,\)"):
        env.render_state(bad)
    assert env._view is None  # nothing was drawn, no GL context was asked for
    with pytest.raises(ValueError, match="pixels a side"):
        env.render_state(env.state, width=0)  # checked before any GL context is made
    assert env.render() is None  # no render_mode
    env.close()
