"""Meta-World's step rule (``legal_steps_batch``): an entity moves only with the hand within its
contact reach.  Every real expert step passes; an entity that moves untouched — the imagined
rollouts' failure — is rejected, and the honest filter drops a rollout that contains such a step."""

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
def level_rows(request):
    """One real expert episode per task of the level."""
    pytest.importorskip("metaworld")
    from tests.domains.test_outcome_batch import expert_rows

    _, rows = expert_rows("MetaWorld-v0", request.param, tries=1)
    return rows


def _steps(rows) -> tuple[np.ndarray, np.ndarray]:
    return (np.stack([np.asarray(r.state, np.float64) for r in rows]),
            np.stack([np.asarray(r.next_state, np.float64) for r in rows]))


def test_every_real_expert_step_is_touched(level_rows):
    states, next_states = _steps(level_rows)
    ok = DOMAIN.legal_steps_batch(states, next_states)
    bad = np.flatnonzero(~ok)
    assert ok.all(), f"{len(bad)} real steps rejected, e.g. task {level_rows[bad[0]].task.name}"


def _faucet_episode() -> np.ndarray:
    """A real faucet_open expert episode's states (the faucet turns under the hand)."""
    from tests.domains.test_outcome_batch import expert_rows

    _, rows = expert_rows("MetaWorld-v0", "train", tries=1)
    rows = [r for r in rows if r.task.name == "faucet_open"]
    return np.stack([np.asarray(rows[0].state, np.float64)] + [np.asarray(r.next_state, np.float64) for r in rows])


def test_an_entity_that_moves_untouched_is_rejected():
    pytest.importorskip("metaworld")
    states = _faucet_episode()
    faucet = L.slot_slice("faucet")
    moved = np.flatnonzero(np.abs(np.diff(states[:, faucet], axis=0)).max(axis=1) > contact.POSE_STEP)
    assert len(moved) > 0
    t = int(moved[0])
    before, after = states[t].copy(), states[t + 1].copy()
    assert DOMAIN.legal_steps_batch(before[None], after[None]).all()
    # the same step with the hand 0.35 m to the side of the knob (still inside the hand box)
    knob = before[faucet][:3]
    side = np.array([0.35 if knob[0] < 0 else -0.35, 0.0, 0.0])
    before[L.HAND] = after[L.HAND] = knob + side + np.array([0.0, 0.0, 0.05])
    assert DOMAIN.is_legal_batch(np.stack([before, after])).all()
    assert not DOMAIN.legal_steps_batch(before[None], after[None]).any()
    # a wall never moves, touched or not
    walled = states[t].copy()
    walled[L.slot_slice("wall")] = np.r_[0.1, 0.7, 0.05, L.IDENTITY_QUAT]
    shifted = walled.copy()
    shifted[L.slot_slice("wall").start] += 0.01
    assert not DOMAIN.legal_steps_batch(walled[None], shifted[None]).any()


def _episode(states: np.ndarray) -> Episode:
    t = len(states) - 1
    z = np.zeros(t, bool)
    return Episode(task="faucet_open", instruction="", states=states.astype(np.float32),
                   actions=np.zeros((t, L.ACTION_DIM), np.float32), rewards=np.zeros(t, np.float32),
                   terminals=z, truncations=z, successes=z)


def test_the_honest_filter_drops_a_rollout_whose_goal_is_reached_untouched():
    """The real episode is kept; with the knob turned to its final pose at the first step (the
    hand still at its start) every state stays legal and the goal still holds, but it is dropped."""
    pytest.importorskip("metaworld")
    states = _faucet_episode()
    assert honest_ok(DOMAIN, _episode(states))
    faucet = L.slot_slice("faucet")
    jumped = states.copy()
    jumped[1:, faucet] = states[-1, faucet]
    assert np.linalg.norm(states[0, L.HAND] - states[0, faucet][:3]) > contact.CONTACT_REACH["faucet"]
    assert DOMAIN.is_legal_batch(jumped[1:]).all()
    assert not honest_ok(DOMAIN, _episode(jumped))


def test_non_finite_and_shapes():
    s = np.zeros((2, L.STATE_DIM))
    ns = s.copy()
    ns[1, 0] = np.nan
    assert DOMAIN.legal_steps_batch(s, ns).tolist() == [True, False]
    with pytest.raises(ValueError, match="expected next_states of shape"):
        DOMAIN.legal_steps_batch(s, ns[:1])


def test_other_domains_have_no_step_rule():
    from imaginebench.envs.registry import load_domain

    clevr = load_domain("CLEVR-v0")
    s = np.zeros((3, clevr.state_dim))
    assert clevr.legal_steps_batch(s, s).tolist() == [True] * 3


def test_contact_reach_measures_the_farthest_moving_step():
    s = np.zeros((3, L.STATE_DIM))
    s[:, L.slot_slice("button")] = np.r_[0.0, 0.8, 0.1, L.IDENTITY_QUAT]
    s[:, L.HAND] = [0.0, 0.6, 0.1]          # 0.2 m from the button
    s[2, L.slot_slice("button").start + 1] += 0.01   # it moves in the second step
    out = contact.contact_reach([s])
    assert out["button"][0] == 1 and out["button"][1] == pytest.approx(0.2)
    assert out["faucet"] == (0, 0.0)
