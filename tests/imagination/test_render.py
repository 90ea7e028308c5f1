"""Rollout strips drawn from state vectors: frame choice, composition, atomic PNG writing, the
CLI's errors, and (with the [libero] extra and an OpenGL backend) LIBERO-v0's render_state."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from imaginebench.imagination.render import compose_strip, frame_steps, save_png
from tests.gl import run_drawing_check


def test_frame_steps_cover_first_and_last_state():
    assert frame_steps(100, 6) == [0, 20, 40, 60, 80, 100]
    assert frame_steps(3, 8) == [0, 1, 2, 3]  # fewer frames than asked for a short episode
    with pytest.raises(ValueError, match="at least 2 frames"):
        frame_steps(10, 1)


def test_compose_and_save_png_round_trip(tmp_path):
    from PIL import Image

    red = np.zeros((20, 30, 3), np.uint8)
    red[..., 0] = 255
    strip = compose_strip([red, red, red], ["t = 0", "t = 5", "t = 10"], "caption")
    assert strip.shape[1] == 3 * 30 + 2 * 4 and strip.shape[0] > 20 and strip.dtype == np.uint8
    path = save_png(strip, tmp_path / "out" / "strip.png")
    back = np.asarray(Image.open(path))
    np.testing.assert_array_equal(back, strip)
    assert [p.name for p in path.parent.iterdir()] == ["strip.png"]  # no temporary file left


def test_render_cli_errors(tmp_path):
    from typer.testing import CliRunner

    from imaginebench.cli import app

    def run(*args: str):
        return CliRunner().invoke(app, ["imagine", "render", *args, "--out", str(tmp_path / "x.png")])

    r = run("--env", "CLEVR-v0", "--source", "dream")
    assert r.exit_code == 2 and "--source must be imaginary or real" in r.output
    r = run("--dataset", str(tmp_path / "missing.npz"))
    assert r.exit_code == 1 and "missing.npz" in r.output
    assert not (tmp_path / "x.png").exists()


_LIBERO_RENDER = textwrap.dedent("""
    import numpy as np
    from imaginebench.domains.libero import layout as L
    from imaginebench.domains.libero.env import LiberoEnv
    env = LiberoEnv("hard")
    env.reset(seed=3, options={"task": "aside_soup"})
    state = env.state.copy()
    try:
        image = env.render_state(state)
    except RuntimeError as exc:
        print("NO-GL", exc)
        raise SystemExit(0)
    assert image.shape == (256, 256, 3) and image.dtype == np.uint8 and image.std() > 10
    moved = state.copy()
    moved[L.pos_slice("alphabet_soup")] += [0.0, 0.0, 0.2]  # the can 20 cm higher
    other = env.render_state(moved)
    assert np.abs(other.astype(int) - image.astype(int)).sum() > 0
    np.testing.assert_array_equal(env.state, state)  # drawing never touches the episode
    np.testing.assert_array_equal(env.render_state(state), image)
    env.close()
    print("OK")
""")


def test_libero_render_state_draws_any_state():
    pytest.importorskip("libero")
    pytest.importorskip("robosuite")
    run_drawing_check(_LIBERO_RENDER)


_METAWORLD_STRIP = textwrap.dedent("""
    import numpy as np
    import imaginebench
    from imaginebench.data.collect import episode_seed, rollout
    from imaginebench.data.dataset import EpisodeDataset
    from imaginebench.imagination.render import episode_strip
    env = imaginebench.make("MetaWorld-v0", level="easy", encode_instruction=False).unwrapped
    episodes = [rollout(env, name, episode_seed(2, i)) for i, name in enumerate(("faucet_close", "door_lock"))]
    env.close()
    ds = EpisodeDataset.from_episodes(episodes, state_dim=91, action_shape=(4,),
                                      metadata={"domain": "MetaWorld-v0", "level": "easy", "source": "real"})
    try:  # a fresh env per strip: the episode's own task decides the scene drawn (no reset by the caller)
        strips = [episode_strip(ds, i, frames=3) for i in range(2)]
    except RuntimeError as exc:
        if "OpenGL" not in str(exc):
            raise
        print("NO-GL", exc)
        raise SystemExit(0)
    for strip in strips:
        assert strip.dtype == np.uint8 and strip.ndim == 3 and strip.std() > 10
    assert strips[0].shape != strips[1].shape or np.abs(strips[0].astype(int) - strips[1].astype(int)).sum() > 0
    print("OK")
""")


def test_metaworld_rollout_strip_draws_the_episodes_own_scene():
    pytest.importorskip("metaworld")
    run_drawing_check(_METAWORLD_STRIP)
