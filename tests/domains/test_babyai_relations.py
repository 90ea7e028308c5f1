"""BabyAI's relational state facts (agent on / beside objects, door, pairs, carried): pure functions
of the 17 integers that the rollout model may add to its state embedding."""

from __future__ import annotations

import numpy as np
import pytest

from imaginebench.domains.babyai import layout as L
from imaginebench.domains.babyai.relations import RELATION_NAMES, relation_features

pytest.importorskip("minigrid")


def _state(agent=(2, 3), ball=(2, 3), box=(2, 4), key=(5, 5), door=(0, 3), carried=L.NOTHING) -> np.ndarray:
    s = np.zeros(L.STATE_DIM, np.float32)
    for name, cell in (("ball", ball), ("box", box), ("key", key)):
        slot = L.OBJECT_SLOT[name]
        s[slot], s[slot + 1], s[slot + 2] = 1, *cell
    s[L.DOOR_COLOR], s[L.DOOR_ROW], s[L.DOOR_COL], s[L.DOOR_STATE] = 2, *door, L.DOOR_CLOSED
    s[L.AGENT_ROW], s[L.AGENT_COL] = agent
    s[L.CARRIED_TYPE] = carried
    s[L.CARRIED_COLOR] = L.NO_COLOR if carried == L.NOTHING else 1
    return s


def _facts(state: np.ndarray) -> set[str]:
    return {n for n, v in zip(RELATION_NAMES, relation_features(state)) if v}


def test_facts_name_what_coincides_and_touches():
    assert _facts(_state()) == {"agent_on_ball", "agent_beside_box", "ball_beside_box"}
    # diagonal is not beside; the door's front cell is the interior cell next to it, on every wall
    assert _facts(_state(agent=(1, 3), ball=(3, 3), box=(2, 4))) == {"agent_at_door_front"}
    for door, front in (((0, 3), (1, 3)), ((7, 2), (6, 2)), ((4, 0), (4, 1)), ((5, 7), (5, 6))):
        assert "agent_at_door_front" in _facts(_state(agent=front, ball=(3, 3), box=(3, 5), door=door))
        assert "agent_in_doorway" in _facts(_state(agent=door, ball=(3, 3), box=(3, 5), door=door))
    assert _facts(_state(agent=(5, 5), ball=(3, 3), box=(3, 5), carried=L.CARRIED_CODE["key"])) == {
        "agent_on_key", "carrying_key"}


def test_batches_of_any_shape_and_rounding():
    one = _state()
    batch = np.stack([np.stack([one, _state(agent=(4, 4))])] * 3) + 0.2  # (3, 2, 17), imagined values near integers
    out = relation_features(batch)
    assert out.shape == (3, 2, len(RELATION_NAMES)) and out.dtype == np.float32
    np.testing.assert_array_equal(out[1, 0], relation_features(one))
    with pytest.raises(ValueError, match="BabyAI states have 17 entries"):
        relation_features(np.zeros((2, 16)))


def test_the_domain_offers_them_and_others_have_none():
    from imaginebench.envs.registry import load_domain

    babyai = load_domain("BabyAI-v0")
    np.testing.assert_array_equal(babyai.relation_features(_state()[None]), relation_features(_state()[None]))
    assert load_domain("CLEVR-v0").relation_features(np.zeros((1, 10))) is None
