"""HalfCheetah's physics prior for imagined steps (``Domain.constrain_step``, ``imagine generate
--physics-prior``): leg joints stop at their limits (plus the overshoot real states show) and the
body does not sink deeper into the floor than real states do.  Real expert states pass through
unchanged; imagined states past the limits or in the floor come out legal."""

from __future__ import annotations

import numpy as np
import pytest

from imaginebench.domains.halfcheetah import physics as P
from imaginebench.domains.halfcheetah.domain import HalfCheetahDomain
from imaginebench.domains.halfcheetah.physics_prior import FLOOR_SINK, JOINT_OVERSHOOT

DOMAIN = HalfCheetahDomain()


@pytest.fixture(scope="module")
def real_states() -> np.ndarray:
    pytest.importorskip("mujoco")
    from tests.domains.test_outcome_batch import expert_rows

    states = []
    for level in ("train", "easy", "hard"):
        _, rows = expert_rows("HalfCheetah-v0", level, tries=1)
        states += [np.asarray(r.next_state, np.float64) for r in rows]
    return np.stack(states)


def test_real_expert_states_are_unchanged(real_states):
    out = DOMAIN.constrain_step(real_states, np.zeros((len(real_states), P.ACTION_DIM)), real_states)
    np.testing.assert_array_equal(out, real_states)


def test_joints_past_their_limits_are_stopped_and_the_body_lifted_out_of_the_floor(real_states):
    limits = P.joint_range()
    state = real_states[len(real_states) // 2].copy()
    bent = state.copy()
    bent[P.JOINT_SLICE] = limits[:, 1] + 1.0           # every joint a radian past its upper limit
    out = DOMAIN.constrain_step(bent[None], np.zeros((1, P.ACTION_DIM)), bent[None])[0]
    np.testing.assert_allclose(out[P.JOINT_SLICE], limits[:, 1] + JOINT_OVERSHOOT)
    sunk = state.copy()
    sunk[P.ROOTZ] -= 1.0                                # the whole body a metre into the floor
    assert not DOMAIN.is_legal_batch(sunk[None])[0]
    out = DOMAIN.constrain_step(sunk[None], np.zeros((1, P.ACTION_DIM)), sunk[None])[0]
    assert P.lowest_point(out) == pytest.approx(-FLOOR_SINK, abs=1e-9)
    assert DOMAIN.is_legal_batch(out[None])[0]
    np.testing.assert_array_equal(np.delete(out, P.ROOTZ), np.delete(sunk, P.ROOTZ))  # only the height moved


def test_non_finite_states_stay_illegal(real_states):
    bad = real_states[:2].copy()
    bad[0, 5] = np.nan
    out = DOMAIN.constrain_step(bad, np.zeros((2, P.ACTION_DIM)), bad)
    assert not DOMAIN.is_legal_batch(out[:1])[0] and DOMAIN.is_legal_batch(out[1:])[0]
