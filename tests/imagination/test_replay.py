"""Replay success: imagined actions executed in the real simulator from the imagined start."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import imaginebench
from imaginebench.data.collect import episode_seed, rollout
from imaginebench.data.dataset import Episode, EpisodeDataset
from imaginebench.imagination.replay import replay_success

N_EPISODES = 12


def expert_episodes(env_id: str, level: str = "train", n: int = N_EPISODES, seed: int = 0) -> list[Episode]:
    env = imaginebench.make(env_id, level=level, encode_instruction=False)
    try:
        tasks = env.unwrapped.tasks
        step = max(1, len(tasks) // n)
        return [rollout(env.unwrapped, tasks[(i * step) % len(tasks)], episode_seed(seed, i)) for i in range(n)]
    finally:
        env.close()


def with_actions(ep: Episode, actions: np.ndarray) -> Episode:
    """``ep``'s imagined start with other actions (later states: the start, repeated)."""
    t = len(actions)
    zeros = np.zeros(t, dtype=bool)
    return replace(ep, states=np.repeat(ep.states[:1], t + 1, axis=0), actions=actions,
                   rewards=np.zeros(t, np.float32), terminals=zeros, truncations=zeros, successes=zeros)


def start_succeeds(env_id: str, level: str, ep: Episode) -> bool:
    """The domain's success test on a transition that leaves the start unchanged."""
    domain = imaginebench.make(env_id, level=level, encode_instruction=False).unwrapped.domain
    task = domain.task(ep.task, level=level)
    _, success = domain.score_rollout(task, ep.states[[0, 0]], ep.actions[:1])
    return bool(success[0])


@pytest.fixture(scope="module")
def babyai_episodes() -> list[Episode]:
    pytest.importorskip("minigrid")
    return expert_episodes("BabyAI-v0")


@pytest.fixture(scope="module")
def clevr_episodes() -> list[Episode]:
    pytest.importorskip("mujoco")
    return expert_episodes("CLEVR-v0")


@pytest.mark.parametrize("env_id", ["BabyAI-v0", "CLEVR-v0"])
def test_expert_rollouts_replay_to_success(env_id, request):
    episodes = request.getfixturevalue("babyai_episodes" if env_id == "BabyAI-v0" else "clevr_episodes")
    assert all(ep.is_success for ep in episodes)
    result = replay_success(env_id, "train", episodes)
    assert result.dtype == bool and result.shape == (len(episodes),)
    assert result.all()
    # a dataset works as well as a list
    dataset = EpisodeDataset.from_episodes(episodes, state_dim=episodes[0].states.shape[1])
    assert replay_success(env_id, "train", dataset).all()


def test_babyai_useless_constant_action_fails(babyai_episodes):
    drop = 5  # drop with empty hands: a no-op
    rollouts = [with_actions(ep, np.full(20, drop)) for ep in babyai_episodes]
    assert not any(start_succeeds("BabyAI-v0", "train", ep) for ep in rollouts)
    assert not replay_success("BabyAI-v0", "train", rollouts).any()


def test_clevr_useless_constant_action_fails(clevr_episodes):
    from imaginebench.domains.clevr.expert import task_balls

    domain = imaginebench.make("CLEVR-v0", level="train", encode_instruction=False).unwrapped.domain
    rollouts = []
    for ep in clevr_episodes:
        task = domain.task(ep.task)
        free = next(b for b in range(5) if b not in task_balls(task.family, task.params))
        x = ep.states[0][2 * free]
        toward_wall = 4 if x < 0 else 0  # push the uninvolved ball into its nearest side wall
        rollouts.append(with_actions(ep, np.full(10, free * 8 + toward_wall)))
    assert not any(start_succeeds("CLEVR-v0", "train", ep) for ep in rollouts)
    assert not replay_success("CLEVR-v0", "train", rollouts).any()


def test_replay_ignores_imagined_states_after_the_start(babyai_episodes):
    """Garbage imagined next states do not matter: only the start and the actions do."""
    ep = babyai_episodes[0]
    states = ep.states.copy()
    states[1:] = np.nan
    assert replay_success("BabyAI-v0", "train", [replace(ep, states=states)]).all()


def test_replay_stops_at_first_success(babyai_episodes):
    """Extra actions after the goal is reached do not undo the success."""
    ep = babyai_episodes[0]
    extra = np.concatenate([ep.actions, np.full(30, 0)])
    longer = with_actions(ep, extra)
    assert replay_success("BabyAI-v0", "train", [longer]).all()


def test_empty_and_broken_rollouts_fail(babyai_episodes):
    ep = babyai_episodes[0]
    empty = with_actions(ep, np.zeros(0, dtype=ep.actions.dtype))
    nan_start = replace(ep, states=np.full_like(ep.states, np.nan))
    illegal = ep.states.copy()
    illegal[:, 13:15] = 0  # the agent inside the wall corner
    result = replay_success("BabyAI-v0", "train", [empty, nan_start, replace(ep, states=illegal)])
    assert result.tolist() == [False, False, False]
    assert replay_success("BabyAI-v0", "train", []).shape == (0,)
