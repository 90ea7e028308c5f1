"""LIBERO's physics prior for imagined steps (``Domain.constrain_step``, ``imagine generate
--physics-prior``): a body out of the gripper's reach keeps its pose.  It leaves real expert steps
as they are, puts back a body an imagined step moves with the gripper far away, and leaves the arm
and a body within reach to the model."""

from __future__ import annotations

import numpy as np
import pytest

from imaginebench.domains.libero import layout as L
from imaginebench.domains.libero.domain import LiberoDomain
from imaginebench.domains.libero.physics_prior import CONTACT_REACH
from tests.expert_episodes import expert_episodes, group

DOMAIN = LiberoDomain()


def _resting(eef=(-0.148, 0.0, 0.261)) -> np.ndarray:
    """The arm at LIBERO's reset pose above the table, every body resting mid start region."""
    s = np.zeros(L.STATE_DIM)
    s[L.JOINTS] = (0.0, -0.161, 0.0, -2.4446, 0.0, 2.2268, 0.7854)
    s[L.EEF_POS] = eef
    s[L.EEF_QUAT] = (1.0, 0.0, 0.0, 0.0)
    s[L.GRIPPER] = (0.02, -0.02)
    for entity, ((x0, x1), (y0, y1)) in L.START_REGIONS.items():
        s[L.pos_slice(entity)] = ((x0 + x1) / 2, (y0 + y1) / 2, L.REST_Z[entity])
        s[L.quat_slice(entity)] = L.REST_QUAT[entity]
    return s


def test_bodies_out_of_reach_are_put_back_and_the_arm_is_the_models():
    prev = _resting()[None]
    imagined = prev.copy()
    imagined[0, L.EEF_POS] += (0.01, -0.02, 0.03)            # the arm moves
    imagined[0, L.JOINTS] += 0.01
    imagined[0, L.GRIPPER] = (0.03, -0.03)
    for entity in L.ENTITIES:                                # every body drifts, nothing near it
        imagined[0, L.pos_slice(entity)] += (0.002, -0.001, -0.012)
        imagined[0, L.quat_slice(entity)] *= 1.001
    out = DOMAIN.constrain_step(prev, np.zeros((1, L.ACTION_DIM)), imagined)
    np.testing.assert_array_equal(out[0, L.SLOTS_START:], prev[0, L.SLOTS_START:])
    np.testing.assert_array_equal(out[0, :L.SLOTS_START], imagined[0, :L.SLOTS_START])
    assert out.dtype == imagined.dtype
    assert not DOMAIN.is_legal(imagined[0]) and DOMAIN.is_legal(out[0])  # the cheese had sunk into the floor


@pytest.mark.parametrize("entity", L.OBJECTS)
def test_a_body_within_reach_moves_as_imagined(entity):
    """The gripper at the object (before or after the step): the object's imagined motion stays."""
    base = _resting()
    at = base[L.pos_slice(entity)] + (0.0, 0.0, 0.02)
    prev = _resting(eef=at)[None]
    lifted = prev.copy()
    lifted[0, L.pos_slice(entity)] += (0.0, 0.0, 0.03)
    lifted[0, L.EEF_POS] += (0.0, 0.0, 0.03)
    out = DOMAIN.constrain_step(prev, np.zeros((1, L.ACTION_DIM)), lifted)
    np.testing.assert_array_equal(out, lifted)
    others = [e for e in L.ENTITIES if e != entity]
    assert all(np.linalg.norm(L.pos(prev[0], e) - at) > CONTACT_REACH[e] for e in others)

    # arriving: out of reach before the step, within reach after it — the model's too
    far = _resting(eef=at + (0.0, 0.0, 0.2))[None]
    arrive = far.copy()
    arrive[0, L.EEF_POS] = at
    arrive[0, L.pos_slice(entity)] += (0.004, 0.0, 0.0)
    np.testing.assert_array_equal(DOMAIN.constrain_step(far, np.zeros((1, L.ACTION_DIM)), arrive), arrive)


def test_rows_are_independent_and_bad_shapes_fail():
    prev = np.stack([_resting(), _resting(eef=L.pos(_resting(), "cream_cheese") + (0.0, 0.0, 0.01))])
    imagined = prev.copy()
    imagined[:, L.pos_slice("cream_cheese")] += (0.0, 0.0, 0.01)
    out = DOMAIN.constrain_step(prev, np.zeros((2, L.ACTION_DIM)), imagined)
    np.testing.assert_array_equal(out[0], prev[0])       # far: put back
    np.testing.assert_array_equal(out[1], imagined[1])   # at the box: the model's
    with pytest.raises(ValueError):
        DOMAIN.constrain_step(prev[:, :40], np.zeros((2, L.ACTION_DIM)), imagined[:, :40])


@pytest.mark.parametrize("level, episodes", [pytest.param("train", 4, marks=group("LIBERO-v0")), ("easy", 3), ("hard", 2)])
def test_real_expert_steps_change_little(level, episodes):
    """Real physics nearly obeys the prior: on expert rollouts of every level a constrained step
    is the real next state but for a body settling after it lands (a can dropped into the basket
    rocks and nudges the basket by under 5 mm for a step or two): under 1 cm anywhere, and in
    under 5% of the steps at all (measured: 16 of 482 hard steps) (a resting body's pose otherwise changes by under 1e-17)."""
    pytest.importorskip("libero")
    pytest.importorskip("robosuite")
    data = expert_episodes("LIBERO-v0", level, episodes)  # train: the conformance suite's first 4
    changed, steps = 0, 0
    for i in range(len(data.lengths)):
        ep = data.episode(i)
        states = np.asarray(ep.states, np.float64)
        out = DOMAIN.constrain_step(states[:-1], np.asarray(ep.actions), states[1:])
        diff = np.abs(out - states[1:]).max(axis=1)
        assert diff.max() < 0.01, ep.task
        np.testing.assert_array_equal(out[:, :L.SLOTS_START], states[1:, :L.SLOTS_START])
        changed, steps = changed + int(np.sum(diff > 1e-9)), steps + len(diff)
    assert changed <= 0.05 * steps, (changed, steps)


def test_joints_and_fingers_stop_at_their_limits():
    from imaginebench.domains.libero.domain import JOINT_LIMITS

    prev = _resting()[None]
    imagined = prev.copy()
    imagined[0, L.JOINTS.start + 3] = JOINT_LIMITS[3, 1] + 0.2      # joint 4 past its upper limit
    imagined[0, L.JOINTS.start + 1] = JOINT_LIMITS[1, 0] - 0.1      # joint 2 past its lower limit
    imagined[0, L.GRIPPER] = (0.047, 0.003)                          # both fingers past their travel
    out = DOMAIN.constrain_step(prev, np.zeros((1, L.ACTION_DIM)), imagined)[0]
    assert out[L.JOINTS.start + 3] == JOINT_LIMITS[3, 1] and out[L.JOINTS.start + 1] == JOINT_LIMITS[1, 0]
    np.testing.assert_array_equal(out[L.GRIPPER], (L.FINGER_OPEN, 0.0))
    assert not DOMAIN.is_legal(imagined[0]) and DOMAIN.is_legal(out)
