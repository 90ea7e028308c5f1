"""Meta-World's imagined states put back on the layout (``complete_states``): empty slots of the
episode's real initial state stay exactly empty, occupied slots' quaternions are unit with
``w >= 0``, the gripper opening in [0, 1]; real states pass through unchanged and nothing else
moves."""

from __future__ import annotations

import numpy as np
import pytest

from imaginebench.domains.metaworld import layout as L
from imaginebench.domains.metaworld.domain import MetaWorldDomain

DOMAIN = MetaWorldDomain()


@pytest.fixture(scope="module")
def episode() -> np.ndarray:
    """One real expert episode per easy task (the scenes with walls, locks, faucets...)."""
    pytest.importorskip("metaworld")
    from tests.domains.test_outcome_batch import expert_rows

    _, rows = expert_rows("MetaWorld-v0", "easy", tries=1)
    return np.stack([np.asarray(r.next_state, np.float32) for r in rows])


def _slots(states: np.ndarray) -> np.ndarray:
    return np.asarray(states)[:, L.SLOTS_START:].reshape(len(states), L.N_SLOTS, L.SLOT_SIZE)


def test_real_states_are_unchanged(episode):
    out = DOMAIN.complete_states(episode, episode)  # each state its own start: the same scene
    assert out.dtype == episode.dtype
    np.testing.assert_allclose(out, episode, rtol=0, atol=1e-6)
    np.testing.assert_allclose(DOMAIN.complete_states(episode), episode, rtol=0, atol=1e-6)


def test_noise_in_empty_slots_is_removed_and_quaternions_made_unit(episode):
    rng = np.random.default_rng(0)
    noisy = episode.astype(np.float64) + rng.normal(0, 0.01, episode.shape)
    noisy[:, L.SLOTS_START + 3::L.SLOT_SIZE] *= -1.0  # w < 0: the same rotation, other sign
    assert not DOMAIN.is_legal_batch(noisy).any()
    fixed = DOMAIN.complete_states(noisy, episode)
    empty = np.all(_slots(episode) == 0, axis=2)
    assert empty.any() and (~empty).any()
    assert np.all(_slots(fixed)[empty] == 0.0)
    quats = _slots(fixed)[~empty][:, 3:]
    np.testing.assert_allclose(np.linalg.norm(quats, axis=1), 1.0, atol=1e-9)
    assert np.all(quats[:, 0] >= 0)
    # the same rotation as the noisy one; positions, hand, gripper and goal are the model's own
    cos = np.abs(np.sum(quats * _slots(noisy)[~empty][:, 3:], axis=1)) / np.linalg.norm(_slots(noisy)[~empty][:, 3:], axis=1)
    np.testing.assert_allclose(cos, 1.0, atol=1e-9)
    np.testing.assert_array_equal(fixed[:, :L.GRIPPER], noisy[:, :L.GRIPPER])
    np.testing.assert_array_equal(fixed[:, L.GRIPPER + 1:L.SLOTS_START], noisy[:, L.GRIPPER + 1:L.SLOTS_START])
    np.testing.assert_array_equal(fixed[:, L.GRIPPER], np.clip(noisy[:, L.GRIPPER], 0.0, 1.0))
    assert (noisy[:, L.GRIPPER] > 1.0).any()  # the expert holds the gripper fully open at times
    np.testing.assert_array_equal(_slots(fixed)[~empty][:, :3], _slots(noisy)[~empty][:, :3])


def test_what_it_does_not_repair_stays_illegal(episode):
    state = episode[:1].astype(np.float64).copy()
    occupied = int(np.flatnonzero(~np.all(_slots(state)[0] == 0, axis=1))[0])
    broken = state.copy()
    broken[0, L.SLOTS_START + occupied * L.SLOT_SIZE + 3:L.SLOTS_START + (occupied + 1) * L.SLOT_SIZE] = 0.01
    fixed = DOMAIN.complete_states(broken, state)  # a collapsed quaternion is not invented
    assert not DOMAIN.is_legal_batch(fixed)[0]
    moved = state.copy()
    moved[0, 0:3] = 5.0  # the hand far outside its box
    assert not DOMAIN.is_legal_batch(DOMAIN.complete_states(moved, state))[0]
    # without the start state only the quaternions are touched: noise in an empty slot stays
    empty = int(np.flatnonzero(np.all(_slots(state)[0] == 0, axis=1))[0])
    dusty = state.copy()
    dusty[0, L.SLOTS_START + empty * L.SLOT_SIZE] = 0.004
    np.testing.assert_allclose(DOMAIN.complete_states(dusty), dusty, rtol=0, atol=1e-6)
    np.testing.assert_allclose(DOMAIN.complete_states(dusty, state), state, rtol=0, atol=1e-6)
    assert np.all(_slots(DOMAIN.complete_states(dusty, state))[0, empty] == 0.0)
