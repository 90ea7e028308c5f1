"""Meta-World's propulsion check (``Domain.unpowered``): the imagined hand must go where the
rollout's own first actions move it under the arm's linear position control.  Real expert
episodes of every level pass; a real episode whose arm actions are reversed (the hand moving
where nothing commands it) is caught and dropped by the honest filter."""

from __future__ import annotations

import numpy as np
import pytest

from imaginebench.data.dataset import Episode
from imaginebench.domains.metaworld import propulsion
from imaginebench.domains.metaworld.domain import MetaWorldDomain
from imaginebench.imagination.filters import honest_ok

DOMAIN = MetaWorldDomain()


def _episodes(level: str) -> list[tuple[str, np.ndarray, np.ndarray, bool]]:
    """One real expert episode per task of ``level``: (task, states, actions, success)."""
    pytest.importorskip("metaworld")
    from tests.domains.test_outcome_batch import expert_rows

    _, rows = expert_rows("MetaWorld-v0", level, tries=1)
    by_task: dict[str, list] = {}
    for r in rows:
        by_task.setdefault(r.task.name, []).append(r)
    out = []
    for name, ep in by_task.items():
        states = np.stack([np.asarray(ep[0].state, np.float64)] + [np.asarray(r.next_state, np.float64) for r in ep])
        actions = np.stack([np.asarray(r.action, np.float64) for r in ep])
        _, succ = DOMAIN.score_rollout(ep[0].task, states, actions)
        out.append((name, states, actions, bool(succ[-1])))
    return out


@pytest.fixture(scope="module")
def train_episodes():
    return _episodes("train")


@pytest.mark.parametrize("level", ["train", "easy", "hard"])
def test_real_expert_episodes_are_powered(level):
    for name, states, actions, _ in _episodes(level):
        gap = propulsion.hand_gap(states, actions)
        assert not DOMAIN.unpowered(states, actions), f"{name}: real hand path {gap:.3f} m from its actions' path"


def test_a_hand_moving_without_its_actions_is_caught_and_dropped(train_episodes):
    """The successful train episode whose hand travels farthest in the window, with its arm
    actions reversed: the imagined hand goes one way while its actions push the other."""
    def reach(e) -> float:
        return float(np.linalg.norm(e[1][1:propulsion.WINDOW + 1, :3] - e[1][0, :3], axis=1).max())

    name, states, actions, success = max((e for e in train_episodes if e[3]), key=reach)
    fake = actions.copy()
    fake[:, :3] *= -1.0
    assert propulsion.hand_gap(states, fake) > propulsion.MAX_GAP
    assert DOMAIN.unpowered(states, fake)
    T = len(actions)
    rewards, succ = DOMAIN.score_rollout(DOMAIN.task(name), states, actions)

    def episode(acts: np.ndarray) -> Episode:
        return Episode(name, name, states, acts.astype(np.float32), rewards, np.zeros(T, bool), np.zeros(T, bool), succ)

    assert honest_ok(DOMAIN, episode(actions))
    assert not honest_ok(DOMAIN, episode(fake))


def test_the_gain_is_the_arms(train_episodes):
    """Refitting on fresh expert episodes gives the shipped per-axis gain within 15%."""
    eps = [Episode(n, "", s, a, np.zeros(len(a)), np.zeros(len(a), bool), np.zeros(len(a), bool), np.zeros(len(a), bool))
           for n, s, a, _ in train_episodes]
    gain, _ = propulsion.fit_hand_gain(eps)
    np.testing.assert_allclose(gain, propulsion.HAND_GAIN, rtol=0.15)


def test_bad_input(train_episodes):
    _, states, actions, _ = train_episodes[0]
    bad = states.copy()
    bad[2, 0] = np.nan
    assert DOMAIN.unpowered(bad, actions)
    with pytest.raises(ValueError, match="expected states of shape"):
        DOMAIN.unpowered(states[:-1], actions)
    assert not DOMAIN.unpowered(states[:1], actions[:0])
