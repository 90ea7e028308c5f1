"""Meta-World's step rule (``untouched_steps``): an entity moves only with the hand within its
contact reach, counted from where it was last touched.  Every real expert step passes; an entity
that moves untouched — at once or creeping a few millimetres a step, the imagined rollouts'
failure — is caught, and the honest filter drops a rollout that contains such a step."""

from __future__ import annotations

import numpy as np
import pytest

from imaginebench.data.dataset import Episode
from imaginebench.domains.metaworld import contact
from imaginebench.domains.metaworld import layout as L
from imaginebench.domains.metaworld.domain import MetaWorldDomain
from imaginebench.imagination.filters import honest_ok

DOMAIN = MetaWorldDomain()


@pytest.fixture(scope="module", params=("train", "easy", "hard"))
def level_episodes(request):
    """One real expert episode per task of the level, as ``(name, states)``."""
    pytest.importorskip("metaworld")
    from tests.domains.test_outcome_batch import expert_rows

    _, rows = expert_rows("MetaWorld-v0", request.param, tries=1)
    return _split(rows)


def _split(rows) -> list[tuple[str, np.ndarray]]:
    """Rows of one expert episode per task (``tries=1``) back into each episode's state array."""
    by_task: dict[str, list] = {}
    for r in rows:
        by_task.setdefault(r.task.name, []).append(r)
    return [(name, np.stack([np.asarray(ep[0].state, np.float64)] + [np.asarray(r.next_state, np.float64) for r in ep]))
            for name, ep in by_task.items()]


def test_every_real_expert_step_is_touched(level_episodes):
    for name, states in level_episodes:
        bad = np.flatnonzero(DOMAIN.untouched_steps(states))
        assert len(bad) == 0, f"{name}: real steps {bad[:5]} rejected"


@pytest.fixture(scope="module")
def faucet() -> np.ndarray:
    """A real faucet_open expert episode's states (the knob turns under the hand)."""
    pytest.importorskip("metaworld")
    from tests.domains.test_outcome_batch import expert_rows

    _, rows = expert_rows("MetaWorld-v0", "train", tries=1)
    return dict(_split(rows))["faucet_open"]


@pytest.fixture(scope="module")
def faucet_actions() -> np.ndarray:
    """That episode's actions (the honest filter also checks that they move the hand)."""
    pytest.importorskip("metaworld")
    from tests.domains.test_outcome_batch import expert_rows

    _, rows = expert_rows("MetaWorld-v0", "train", tries=1)
    return np.stack([np.asarray(r.action, np.float32) for r in rows if r.task.name == "faucet_open"])


def _far_hand(states: np.ndarray) -> np.ndarray:
    """``states`` with the hand 0.35 m to the side of the faucet knob (inside the hand box)."""
    out = states.copy()
    knob = states[0, L.slot_slice("faucet")][:3]
    out[:, L.HAND] = knob + np.array([0.35 if knob[0] < 0 else -0.35, 0.0, 0.05])
    return out


def test_an_entity_that_moves_untouched_is_caught(faucet):
    sl = L.slot_slice("faucet")
    moved = np.flatnonzero(np.abs(np.diff(faucet[:, sl], axis=0)).max(axis=1) > contact.POSE_STEP)
    t = int(moved[0])
    step = faucet[t:t + 2]
    assert not DOMAIN.untouched_steps(step).any()
    far = _far_hand(step)
    assert DOMAIN.is_legal_batch(far).all()
    assert DOMAIN.untouched_steps(far).tolist() == [True]
    # a wall never moves, touched or not
    walled = faucet[t:t + 2].copy()
    walled[:, L.slot_slice("wall")] = np.r_[0.1, 0.7, 0.05, L.IDENTITY_QUAT]
    walled[1, L.slot_slice("wall").start] += 0.01
    assert DOMAIN.untouched_steps(walled).tolist() == [True]


def test_a_slow_creep_adds_up(faucet):
    """The knob turned by 2 mm-per-step increments (each below POSE_STEP) with the hand far: the
    step where the creep passes POSE_STEP since the last touch is caught; with the hand at the
    knob the same creep is fine."""
    states = np.repeat(faucet[:1], 6, axis=0)
    start = L.slot_slice("faucet").start
    states[:, start] += 0.002 * np.arange(6)
    near = states.copy()
    near[:, L.HAND] = states[0, start:start + 3] + np.array([0.0, -0.05, 0.05])
    assert not DOMAIN.untouched_steps(near).any()
    far = _far_hand(states)
    assert DOMAIN.untouched_steps(far).tolist() == [False, False, True, False, False]


def _episode(states: np.ndarray, actions: np.ndarray) -> Episode:
    t = len(states) - 1
    z = np.zeros(t, bool)
    return Episode(task="faucet_open", instruction="", states=states.astype(np.float32),
                   actions=actions, rewards=np.zeros(t, np.float32),
                   terminals=z, truncations=z, successes=z)


def test_the_honest_filter_drops_a_rollout_whose_goal_is_reached_untouched(faucet, faucet_actions):
    """The real episode is kept; with the knob turned to its final pose at the first step (the
    hand still at its start) every state stays legal and the goal still holds, but it is dropped."""
    assert honest_ok(DOMAIN, _episode(faucet, faucet_actions))
    sl = L.slot_slice("faucet")
    jumped = faucet.copy()
    jumped[1:, sl] = faucet[-1, sl]
    assert np.linalg.norm(faucet[0, L.HAND] - faucet[0, sl][:3]) > contact.CONTACT_REACH["faucet"]
    assert DOMAIN.is_legal_batch(jumped[1:]).all()
    assert not honest_ok(DOMAIN, _episode(jumped, faucet_actions))


def test_non_finite_states_and_shapes():
    s = np.zeros((3, L.STATE_DIM))
    s[2, 0] = np.nan
    assert DOMAIN.untouched_steps(s).tolist() == [False, True]
    with pytest.raises(ValueError, match="expected states of shape"):
        DOMAIN.untouched_steps(s[:, :5])


def test_other_domains_have_no_step_rule():
    from imaginebench.envs.registry import load_domain

    clevr = load_domain("CLEVR-v0")
    assert clevr.untouched_steps(np.zeros((3, clevr.state_dim))).tolist() == [False, False]


def test_the_lock_rides_on_the_door():
    """The lock moves with the door leaf (the handle slot) with the hand at the handle, far from
    the lock; the same lock motion with the door still and the hand away from both is caught."""
    s = np.zeros((2, L.STATE_DIM))
    s[:, L.slot_slice("lock")] = np.r_[0.0, 0.8, 0.1, L.IDENTITY_QUAT]
    s[:, L.slot_slice("handle")] = np.r_[0.3, 0.7, 0.1, L.IDENTITY_QUAT]
    s[:, L.HAND] = [0.3, 0.65, 0.1]          # at the handle, 0.32 m from the lock
    s[1, L.slot_slice("lock").start] += 0.01
    still = s.copy()
    still[:, L.HAND] = [-0.3, 0.6, 0.1]      # 0.32 m from the lock, 0.61 m from the handle
    s[1, L.slot_slice("handle").start] += 0.01
    assert DOMAIN.untouched_steps(s).tolist() == [False]
    assert DOMAIN.untouched_steps(still).tolist() == [True]


def test_contact_reach_measures_the_farthest_moving_step():
    s = np.zeros((3, L.STATE_DIM))
    s[:, L.slot_slice("button")] = np.r_[0.0, 0.8, 0.1, L.IDENTITY_QUAT]
    s[:, L.HAND] = [0.0, 0.6, 0.1]          # 0.2 m from the button
    s[2, L.slot_slice("button").start + 1] += 0.01   # it moves in the second step
    out = contact.contact_reach([s])
    assert out["button"][0] == 1 and out["button"][1] == pytest.approx(0.2)
    assert out["faucet"] == (0, 0.0)


def test_a_free_object_may_wobble_in_place_but_not_slide_untouched():
    """The task object's orientation may change with the hand far (the mug wobbles in place);
    its position may not."""
    s = np.zeros((2, L.STATE_DIM))
    sl = L.slot_slice("task_object")
    s[:, sl] = np.r_[0.0, 0.7, 0.02, L.IDENTITY_QUAT]
    s[:, L.HAND] = [0.4, 0.5, 0.2]           # 0.49 m away
    wobble = s.copy()
    wobble[1, sl.start + 3:sl.stop] = L.canonical_quat(np.array([1.0, 0.02, 0.02, 0.0]))
    slide = s.copy()
    slide[1, sl.start] += 0.01
    assert DOMAIN.untouched_steps(wobble).tolist() == [False]
    assert DOMAIN.untouched_steps(slide).tolist() == [True]
