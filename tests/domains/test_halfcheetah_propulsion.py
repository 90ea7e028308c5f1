"""HalfCheetah's propulsion check (``Domain.unpowered``): a rollout's first actions, replayed from
its initial state through the shipped dynamics model (fit on real train data), must move the
cheetah the way its states do.  Real expert episodes pass; the same states with actions that do
not push (the imagined "gliders") are caught, and the honest filter drops them."""

from __future__ import annotations

import numpy as np
import pytest

import imaginebench
from imaginebench.data.dataset import Episode
from imaginebench.domains.halfcheetah import propulsion
from imaginebench.imagination.filters import honest_ok

from experiments import fit_halfcheetah_propulsion

SEEDS = 8


def _episodes(level: str) -> list[tuple[str, np.ndarray, np.ndarray, bool]]:
    """``SEEDS`` expert episodes per task of ``level``: (task, states, actions, success)."""
    env = imaginebench.make("HalfCheetah-v0", level=level, encode_instruction=False).unwrapped
    out = []
    try:
        for i, name in enumerate(env.tasks):
            for seed in range(SEEDS):
                _, info = env.reset(seed=1000 + 100 * i + seed, options={"task": name})
                states, actions, done = [info["state"]], [], False
                while not done:
                    a = env.expert_action()
                    _, _, terminated, truncated, info = env.step(a)
                    states.append(info["state"]); actions.append(a)
                    done = terminated or truncated
                out.append((name, np.asarray(states), np.asarray(actions), bool(info["is_success"])))
    finally:
        env.close()
    return out


@pytest.fixture(scope="module")
def domain():
    return imaginebench.make("HalfCheetah-v0", encode_instruction=False).unwrapped.domain


@pytest.fixture(scope="module")
def train_episodes():
    return _episodes("train")


@pytest.mark.parametrize("level", ["train", "easy", "hard"])
def test_real_expert_episodes_are_powered(domain, level):
    """Calibration (notes/halfcheetah_imagination.md, session 23): every real running episode
    passes; jump_forward's flights make the replay diverge in ~2% of real episodes."""
    eps = _episodes(level)
    by_task: dict[str, list[bool]] = {}
    for name, states, actions, _ in eps:
        by_task.setdefault(name, []).append(domain.unpowered(states, actions))
    for name, flags in by_task.items():
        allowed = 1 if name == "jump_forward" else 0
        assert sum(flags) <= allowed, f"{name}: {sum(flags)} of {len(flags)} real expert episodes judged unpowered"


def test_a_glider_is_caught_and_dropped(domain, train_episodes):
    """A real forward run's states with actions that do not push (zeros, or the real actions
    smoothed to a fifth of their size) is a glider; the real episode itself is kept."""
    name, states, actions, success = next(e for e in train_episodes if e[0] == "run_forward" and e[3])
    assert not domain.unpowered(states, actions)
    for fake in (np.zeros_like(actions), 0.2 * actions):
        assert domain.unpowered(states, fake)
    T = len(actions)
    rewards, succ = domain.score_rollout(domain.task(name), states, actions)
    real = Episode(name, "run forward", states, actions.astype(np.float32), rewards, np.zeros(T, bool),
                   np.zeros(T, bool), succ)
    glide = Episode(name, "run forward", states, np.zeros_like(actions, dtype=np.float32), rewards,
                    np.zeros(T, bool), np.zeros(T, bool), succ)
    assert honest_ok(domain, real)
    assert not honest_ok(domain, glide)


def test_a_rollout_that_barely_moves_is_not_judged(domain, train_episodes):
    _, states, actions, _ = train_episodes[0]
    still = np.repeat(states[:1], len(states), axis=0)
    still[:, 0] = 0.0  # no displacement at all
    assert not domain.unpowered(still, np.zeros_like(actions))
    own, _ = propulsion.displacements(still, actions)
    assert own == 0.0


def test_the_model_predicts_real_steps(train_episodes):
    """The shipped model's one-step error on fresh expert episodes is small against the size of
    the real state changes (standardised error well below 1)."""
    m = propulsion.dynamics()
    s = np.concatenate([e[1][:-1] for e in train_episodes])
    a = np.concatenate([e[2] for e in train_episodes])
    s1 = np.concatenate([e[1][1:] for e in train_episodes])
    err = ((m.step(s, a) - s1) / m.y_std) ** 2
    assert float(err.mean()) < 0.1


def test_bad_input(domain, train_episodes):
    _, states, actions, _ = train_episodes[0]
    bad = states.copy()
    bad[3, 0] = np.nan
    assert domain.unpowered(bad, actions)
    with pytest.raises(ValueError, match="expected states of shape"):
        domain.unpowered(states[:-1], actions)
    assert not domain.unpowered(states[:1], actions[:0])


def test_other_domains_have_no_check():
    from imaginebench.envs.registry import load_domain

    clevr = load_domain("CLEVR-v0")
    assert clevr.unpowered(np.zeros((3, clevr.state_dim)), np.zeros(2, np.int64)) is False


def test_fit_is_deterministic(train_episodes):
    eps = [Episode(n, "", s, a.astype(np.float32), np.zeros(len(a), np.float32), np.zeros(len(a), bool),
                   np.zeros(len(a), bool), np.zeros(len(a), bool)) for n, s, a, _ in train_episodes[:2]]
    a, b = propulsion.fit(eps, epochs=1), propulsion.fit(eps, epochs=1)
    assert a.keys() == b.keys()
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert propulsion.Dynamics(a).step(eps[0].states[:-1], eps[0].actions).shape == (len(eps[0].actions), 18)


def test_refit_command_rejects_bad_input_in_one_line(tmp_path, capsys):
    out = tmp_path / "dynamics.npz"
    with pytest.raises(SystemExit) as e:
        fit_halfcheetah_propulsion.main([str(tmp_path / "missing.npz"), str(out)])
    assert str(e.value).startswith("error: ") and "\n" not in str(e.value)
    assert not out.exists()
