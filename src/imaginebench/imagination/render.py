"""Pictures of rollouts drawn from their state vectors (the paper's Fig. 4-style strips).

A rollout, real or imagined, is a sequence of state vectors; an environment that can draw a
state (``env.unwrapped.render_state(state) -> RGB array``, e.g. LIBERO-v0) turns a few evenly
spaced states into one horizontal PNG strip, with the step of each frame and a caption naming
the source, task and instruction.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from imaginebench.data.dataset import EpisodeDataset
from imaginebench.fileio import atomic_path


def frame_steps(length: int, frames: int) -> list[int]:
    """``frames`` evenly spaced state indices of an episode with ``length`` actions (first and last
    state included; fewer when the episode is shorter)."""
    if frames < 2:
        raise ValueError(f"a strip needs at least 2 frames, got {frames}.")
    return sorted({int(round(i)) for i in np.linspace(0, length, min(frames, length + 1))})


def state_renderer(env_id: str, level: str):
    """``(env, render)`` for ``env_id``: ``render(state) -> uint8 (H, W, 3)``.  The caller closes ``env``."""
    from imaginebench.envs.registry import make

    env = make(env_id, level=level, encode_instruction=False)
    render = getattr(env.unwrapped, "render_state", None)
    if render is None:
        env.close()
        raise ValueError(f"{env_id} cannot draw a state vector (no env.unwrapped.render_state); "
                         "rollout strips are available for CLEVR-v0, BabyAI-v0 and LIBERO-v0.")
    return env, render


def compose_strip(images: Sequence[np.ndarray], labels: Sequence[str], caption: str) -> np.ndarray:
    """Images side by side, a label under each, the caption above: one uint8 RGB array."""
    from PIL import Image, ImageDraw

    h, w = images[0].shape[:2]
    top, bottom, gap = 22, 18, 4
    canvas = Image.new("RGB", (len(images) * (w + gap) - gap, top + h + bottom), "white")
    draw = ImageDraw.Draw(canvas)
    draw.text((4, 5), caption, fill="black")
    for i, (img, label) in enumerate(zip(images, labels)):
        x = i * (w + gap)
        canvas.paste(Image.fromarray(np.asarray(img, dtype=np.uint8)), (x, top))
        draw.text((x + 4, top + h + 3), label, fill="black")
    return np.asarray(canvas)


def save_png(image: np.ndarray, path: str | Path) -> Path:
    """Write ``image`` as a PNG atomically (:func:`imaginebench.fileio.atomic_path`)."""
    from PIL import Image

    path = Path(path)
    with atomic_path(path, suffix=".png.tmp") as tmp:
        Image.fromarray(np.asarray(image, dtype=np.uint8)).save(tmp, format="PNG")
    return path


def episode_strip(dataset: EpisodeDataset, index: int, frames: int = 6, render=None) -> np.ndarray:
    """The strip of episode ``index`` of ``dataset`` (``render`` defaults to the dataset's env)."""
    n = len(dataset.lengths)
    if not 0 <= index < n:
        raise ValueError(f"episode {index} does not exist: the dataset has {n} episodes (0 … {n - 1}).")
    ep = dataset.episode(index)
    env = None
    if render is None:
        env, render = state_renderer(str(dataset.metadata["domain"]), str(dataset.metadata.get("level", "train")))
    try:
        steps = frame_steps(len(ep), frames)
        images = [render(ep.states[t]) for t in steps]
    finally:
        if env is not None:
            env.close()
    source = dataset.metadata.get("source", "?")
    outcome = "success" if ep.is_success else "no success"
    caption = f"{source} | {ep.task} | \"{ep.instruction}\" | {len(ep)} steps, {outcome}"
    return compose_strip(images, [f"t = {t}" for t in steps], caption)
