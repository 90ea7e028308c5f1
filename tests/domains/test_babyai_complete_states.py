"""BabyAI's derived state entries (the carried record) recomputed from the primary ones."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("minigrid")

import imaginebench
from imaginebench.data.collect import episode_seed, rollout
from imaginebench.domains.babyai import layout as L


@pytest.fixture(scope="module")
def domain_and_states():
    env = imaginebench.make("BabyAI-v0", level="train", encode_instruction=False).unwrapped
    states = [rollout(env, task, episode_seed(4, i)).states for i, task in enumerate(env.tasks[::11])]
    return env.domain, np.concatenate(states).astype(np.float32)


def test_legal_states_are_unchanged(domain_and_states):
    domain, states = domain_and_states
    assert (states[:, L.CARRIED_TYPE] > 0).any()  # some expert states carry something
    np.testing.assert_array_equal(domain.complete_states(states), states)


def test_a_wrong_carried_record_becomes_legal_and_nothing_else_moves(domain_and_states):
    domain, states = domain_and_states
    carrying = states[states[:, L.CARRIED_TYPE] > 0]
    broken = carrying.copy()
    broken[:, L.CARRIED_COLOR] = (broken[:, L.CARRIED_COLOR] + 1) % L.NUM_COLORS
    slot = np.asarray([L.OBJECT_SLOT[L.OBJECT_TYPES[int(t) - 1]] for t in broken[:, L.CARRIED_TYPE]])
    broken[np.arange(len(broken)), slot + 1] = 0  # the carried object left behind on the wall
    assert not domain.is_legal_batch(broken).any()
    fixed = domain.complete_states(broken)
    np.testing.assert_array_equal(fixed, carrying)
    empty = states[states[:, L.CARRIED_TYPE] == 0][:5].copy()
    empty[:, L.CARRIED_COLOR] = 3
    np.testing.assert_array_equal(domain.complete_states(empty)[:, L.CARRIED_COLOR], L.NO_COLOR)


def test_other_domains_leave_states_alone():
    from imaginebench.envs.registry import load_domain

    pytest.importorskip("mujoco")
    states = np.random.default_rng(0).uniform(-0.4, 0.4, (5, 10)).astype(np.float32)
    np.testing.assert_array_equal(load_domain("CLEVR-v0").complete_states(states), states)
