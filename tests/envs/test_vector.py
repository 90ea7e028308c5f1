"""``imaginebench.make_vec``: gymnasium vector envs whose observations equal single envs'."""

from __future__ import annotations

import numpy as np
import pytest

import imaginebench


def _single_env_trajectories(env_id: str, level: str, seeds: list[int], actions: np.ndarray) -> np.ndarray:
    """Observations of one env per seed under gymnasium's next-step autoreset (the step after an
    episode ends resets that env and ignores its action)."""
    envs = [imaginebench.make(env_id, level=level) for _ in seeds]
    first = np.stack([env.reset(seed=s)[0] for env, s in zip(envs, seeds)])
    done = [False] * len(envs)
    rows = [first]
    for step_actions in actions:
        obs = []
        for i, env in enumerate(envs):
            if done[i]:
                o, _ = env.reset()
                done[i] = False
            else:
                o, _, term, trunc, _ = env.step(int(step_actions[i]))
                done[i] = term or trunc
            obs.append(o)
        rows.append(np.stack(obs))
    for env in envs:
        env.close()
    return np.stack(rows)


@pytest.mark.parametrize("env_id, mode, steps", [("CLEVR-v0", "sync", 70), ("CLEVR-v0", "async", 60),
                                                 ("BabyAI-v0", "sync", 300)])
def test_vector_observations_equal_single_env_observations(env_id, mode, steps, data_home):
    seeds = [3, 4, 5]
    vec = imaginebench.make_vec(env_id, num_envs=3, level="hard", vectorization_mode=mode)
    n = vec.single_action_space.n
    actions = np.random.default_rng(0).integers(n, size=(steps, 3))
    try:
        obs, info = vec.reset(seed=seeds)
        got = [obs]
        ends = 0
        for a in actions:
            obs, reward, term, trunc, info = vec.step(a)
            got.append(obs)
            ends += int(np.sum(term | trunc))
    finally:
        vec.close()
    assert vec.observation_space.shape == (3, vec.single_observation_space.shape[0])
    assert ends > 0  # the comparison spans episode ends and autoresets
    np.testing.assert_array_equal(np.stack(got), _single_env_trajectories(env_id, "hard", seeds, actions))


def test_make_vec_rejects_bad_arguments():
    with pytest.raises(ValueError, match="num_envs must be at least 1"):
        imaginebench.make_vec("CLEVR-v0", num_envs=0)
    with pytest.raises(ValueError, match="Unknown vectorization mode 'threads'"):
        imaginebench.make_vec("CLEVR-v0", num_envs=2, vectorization_mode="threads")


def test_raw_vector_env_has_the_state_vectors():
    vec = imaginebench.make_vec("CLEVR-v0", num_envs=2, encode_instruction=False)
    obs, info = vec.reset(seed=0)
    assert obs.shape == (2, 10) and list(info["instruction"]) and vec.single_action_space.n == 40
    vec.close()
