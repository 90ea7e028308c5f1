"""Replay success: do an imagined rollout's *actions* reach its goal in the real simulator?

Consistency (:mod:`.quality`) asks whether the imagined *states* satisfy the goal.  Replay
success asks the question a policy learner cares about: put the simulator into the rollout's
imagined initial state, execute the imagined actions there, and check the task's success test
(``info["is_success"]``, the domain's pure success function applied to the simulated states)
at every step.  Replay stops at the first success, or where a real episode would end (the
task's horizon).  A rollout counts as failed when it is empty, when its initial state cannot be
loaded into the simulator (non-finite or illegal) or when one of its actions is invalid.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from tqdm.auto import tqdm

from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.envs.registry import make


def _replay_one(env: Any, index: int, level: str, episode: Episode) -> bool:
    sim = env.unwrapped
    domain = sim.domain
    if len(episode) == 0:
        return False
    task = domain.task(episode.task, level=level)
    start = np.asarray(episode.states[0], dtype=np.float64)
    if not np.all(np.isfinite(start)):
        return False
    env.reset(seed=index, options={"task": task.name})
    try:
        sim.set_state(start)
    except (ValueError, IndexError):
        return False
    # The episode starts here: its progress record derives from the imagined start, not the reset.
    sim.progress = domain.initial_progress(task, sim.state)
    sim.elapsed_steps = 0
    sim.is_success = False
    for action in episode.actions:
        try:
            _, _, terminated, truncated, info = sim.step(action)
        except (ValueError, IndexError, RuntimeError, FloatingPointError):
            return False
        if info["is_success"]:
            return True
        if terminated or truncated:
            return False
    return False


def replay_success(env_id: str, level: str, episodes: Sequence[Episode] | EpisodeDataset,
                   progress: bool = False) -> np.ndarray:
    """One bool per rollout: whether replaying its actions from its initial state reaches the goal."""
    eps = list(episodes)
    out = np.zeros(len(eps), dtype=bool)
    env = make(env_id, level=level, encode_instruction=False)
    try:
        for i, ep in enumerate(tqdm(eps, desc=f"replay {level}", unit="rollout", disable=not progress)):
            out[i] = _replay_one(env, i, level, ep)
    finally:
        env.close()
    return out
