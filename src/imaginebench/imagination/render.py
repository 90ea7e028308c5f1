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

from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.envs.registry import make
from imaginebench.fileio import atomic_path


def frame_steps(length: int, frames: int) -> list[int]:
    """``frames`` evenly spaced state indices of an episode with ``length`` actions (first and last
    state included; fewer when the episode is shorter)."""
    if frames < 2:
        raise ValueError(f"a strip needs at least 2 frames, got {frames}.")
    return sorted({int(round(i)) for i in np.linspace(0, length, min(frames, length + 1))})


def state_renderer(env_id: str, level: str):
    """``(env, render)`` for ``env_id``: ``render(state) -> uint8 (H, W, 3)``.  The caller closes ``env``."""
    env = make(env_id, level=level, encode_instruction=False)
    render = getattr(env.unwrapped, "render_state", None)
    if render is None:
        env.close()
        raise ValueError(f"{env_id} cannot draw a state vector: its env has no render_state(state) method, "
                         "which rollout strips need; give the env one to draw its rollouts.")
    return env, render


def compose_strip(images: Sequence[np.ndarray], labels: Sequence[str], caption: str) -> np.ndarray:
    """Images side by side, a label under each, the caption above (wrapped to the strip's width):
    one uint8 RGB array."""
    from PIL import Image, ImageDraw

    h, w = images[0].shape[:2]
    width = len(images) * (w + 4) - 4
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    lines, line = [], ""
    for word in caption.split(" "):
        if line and measure.textlength(f"{line} {word}") > width - 8:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    top, bottom, gap = 8 + 14 * len(lines), 18, 4
    canvas = Image.new("RGB", (width, top + h + bottom), "white")
    draw = ImageDraw.Draw(canvas)
    for k, text in enumerate(lines):
        draw.text((4, 5 + 14 * k), text, fill="black")
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
        if getattr(env.unwrapped, "render_needs_task", False):  # the task decides the scene (Meta-World)
            env.unwrapped.reset(seed=0, options={"task": ep.task})
    try:
        return rollout_strip(ep, render, str(dataset.metadata.get("source", "?")), frames)
    finally:
        if env is not None:
            env.close()


def rollout_strip(episode: Episode, render, source: str, frames: int = 6) -> np.ndarray:
    """The strip of one episode: ``frames`` evenly spaced states drawn by ``render``, captioned
    with ``source``, task, instruction, length and outcome."""
    steps = frame_steps(len(episode), frames)
    track = getattr(getattr(render, "__self__", None), "track_x", None)
    if track is None:
        images = [render(episode.states[t]) for t in steps]
        labels = [f"t = {t}" for t in steps]
    else:  # domains whose state holds no position (HalfCheetah): place the body at its travel so far
        xs = track(np.asarray(episode.states))
        images = [render(episode.states[t], x=float(xs[t])) for t in steps]
        labels = [f"t = {t}, x = {xs[t]:.1f} m" for t in steps]
    outcome = "success" if episode.is_success else "no success"
    caption = f"{source} | {episode.task} | \"{episode.instruction}\" | {len(episode)} steps, {outcome}"
    return compose_strip(images, labels, caption)


def stack_strips(strips: Sequence[np.ndarray], gap: int = 8) -> np.ndarray:
    """Strips one above the other (left-aligned, white padding): one uint8 RGB array."""
    width = max(s.shape[1] for s in strips)
    rows = []
    for i, s in enumerate(strips):
        pad = np.full((s.shape[0] + (gap if i < len(strips) - 1 else 0), width, 3), 255, np.uint8)
        pad[: s.shape[0], : s.shape[1]] = s
        rows.append(pad)
    return np.concatenate(rows, axis=0)
