"""Meta-World's physics prior for imagined steps (``Domain.constrain_step``, ``imagine generate
--physics-prior``): the hand goes where the arm's position control takes it, and entities the hand
does not touch keep their pose.  It stays close to real physics on real expert steps, puts back
what an imagined step moves untouched, and makes every rollout it shapes pass the contact rule and
the propulsion check."""

from __future__ import annotations

import numpy as np
import pytest

from imaginebench.domains.metaworld import layout as L
from imaginebench.domains.metaworld import physics_prior
from imaginebench.domains.metaworld.contact import CONTACT_REACH
from imaginebench.domains.metaworld.domain import MetaWorldDomain
from imaginebench.domains.metaworld.propulsion import HAND_BIAS, HAND_GAIN
from tests.domains.test_metaworld_propulsion import _episodes

DOMAIN = MetaWorldDomain()


@pytest.fixture(scope="module")
def train_episodes():
    return _episodes("train")


def _slot(states: np.ndarray, entity: str) -> np.ndarray:
    i = L.SLOTS_START + L.SLOT[entity] * L.SLOT_SIZE
    return states[..., i:i + L.SLOT_SIZE]


@pytest.mark.parametrize("level", ["train", "easy", "hard"])
def test_real_expert_steps_change_little(level):
    """On real steps the prior moves the hand by under 2 cm (the linear arm model's error) and an
    entity by under 2 cm (real creep after a touch); the gripper and the goal are the model's own."""
    for name, states, actions, _ in _episodes(level):
        out = DOMAIN.constrain_step(states[:-1], actions, states[1:])
        assert np.abs(out[:, L.HAND] - states[1:, L.HAND]).max() < 0.02, name
        assert np.abs(out[:, L.SLOTS_START:] - states[1:, L.SLOTS_START:]).max() < 0.02, name
        np.testing.assert_array_equal(out[:, L.GRIPPER], states[1:, L.GRIPPER])
        np.testing.assert_array_equal(out[:, L.GOAL], states[1:, L.GOAL])


def test_the_hand_follows_the_action_and_untouched_entities_stay(train_episodes):
    name, states, actions, _ = next(e for e in train_episodes if e[0] == "faucet_open")
    prev = states[:1].copy()
    prev[0, L.HAND] = _slot(prev, "faucet")[0, :3] + np.array([0.0, 0.0, 0.5])  # far above the faucet
    imagined = prev.copy()
    _slot(imagined, "faucet")[0, :3] += 0.05           # the faucet moves with nothing near it
    imagined[0, L.HAND] += np.array([0.3, 0.0, 0.0])   # the hand jumps 30 cm in one step
    action = np.array([[1.0, -1.0, 0.5, 0.3]])
    out = DOMAIN.constrain_step(prev, action, imagined)
    np.testing.assert_allclose(out[0, L.HAND], prev[0, L.HAND] + action[0, :3] * HAND_GAIN + HAND_BIAS)
    np.testing.assert_array_equal(_slot(out, "faucet"), _slot(prev, "faucet"))

    near = prev.copy()
    near[0, L.HAND] = _slot(prev, "faucet")[0, :3] + np.array([0.0, 0.0, CONTACT_REACH["faucet"] / 2])
    turned = near.copy()
    _slot(turned, "faucet")[0, 3:] = np.array([0.92387953, 0.0, 0.0, 0.38268343])  # turned 45 degrees
    out = DOMAIN.constrain_step(near, np.zeros((1, 4)), turned)
    np.testing.assert_array_equal(_slot(out, "faucet"), _slot(turned, "faucet"))  # touched: the model's own


def test_out_of_range_actions_are_clipped_as_the_env_does(train_episodes):
    _, states, _, _ = train_episodes[0]
    big = DOMAIN.constrain_step(states[:1], np.array([[5.0, -5.0, 5.0, 0.0]]), states[1:2])
    unit = DOMAIN.constrain_step(states[:1], np.array([[1.0, -1.0, 1.0, 0.0]]), states[1:2])
    np.testing.assert_array_equal(big, unit)


def test_rollouts_shaped_by_the_prior_pass_contact_and_propulsion(train_episodes):
    """Real episodes with every imagined step jittered (hand and every occupied entity slot,
    3 cm): raw, they fail the contact rule and the propulsion check; shaped step by step from
    their own previous shaped state, they pass both."""
    rng = np.random.default_rng(0)
    for name, states, actions, _ in train_episodes:
        noisy = states.copy()
        occupied = np.any(states[0, L.SLOTS_START:].reshape(L.N_SLOTS, L.SLOT_SIZE) != 0.0, axis=1)
        noise = rng.normal(0.0, 0.03, size=(len(states) - 1, L.N_SLOTS, 3)) * occupied[None, :, None]
        slots = noisy[1:, L.SLOTS_START:].reshape(len(states) - 1, L.N_SLOTS, L.SLOT_SIZE)
        slots[..., :3] += noise
        noisy[1:, L.SLOTS_START:] = slots.reshape(len(states) - 1, -1)
        noisy[1:, L.HAND] += rng.normal(0.0, 0.03, size=(len(states) - 1, 3))
        assert DOMAIN.untouched_steps(noisy).any() or DOMAIN.unpowered(noisy, actions), name
        shaped = noisy.copy()
        for t in range(len(actions)):
            shaped[t + 1] = DOMAIN.constrain_step(shaped[t:t + 1], actions[t:t + 1], noisy[t + 1:t + 2])[0]
        assert not DOMAIN.untouched_steps(shaped).any(), name
        assert not DOMAIN.unpowered(shaped, actions), name


def test_module_function_is_the_domain_method(train_episodes):
    _, states, actions, _ = train_episodes[0]
    np.testing.assert_array_equal(physics_prior.constrain_step(states[:-1], actions, states[1:]),
                                  DOMAIN.constrain_step(states[:-1], actions, states[1:]))
