"""Which Meta-World steps are physically possible as steps: an entity moves only when touched.

A state can be legal on its own while the step into it is not: imagined rollouts turn the faucet
or press the coffee button with the hand twice as far away as any real episode ever is
(notes/metaworld_imagination.md).  In the simulator an entity's pose changes only while the
gripper, or the object it holds, is in contact with it; from the state vector that reads as a
bound on the hand's distance to the entity's reference point while the entity moves.

The bounds (:data:`CONTACT_REACH`) are physical facts of the scene's geometry, measured on expert
rollouts of every task of every level (:func:`contact_reach` on the ``small`` real data of
train, easy and hard: 6,000 episodes; the largest distance seen plus :data:`REACH_MARGIN`).
They are per entity, never per task or instruction, so a novel task's rollouts are judged by
the same physics as the train tasks'.  Everything here is a pure function of consecutive states.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

import numpy as np

from imaginebench.domains.metaworld import layout as L

POSE_STEP = 5e-3
"""An entity *moves* in a step when one of its seven numbers (position in metres, unit
quaternion) changes by more than this."""
REACH_MARGIN = 0.02
"""Metres added to the largest hand distance measured while an entity moves."""

CONTACT_REACH: Mapping[str, float] = MappingProxyType({
    "task_object": 0.38,     # measured 0.360 (the mug wobbles in place while the hand is far)
    "button": 0.11,          # 0.082
    "lock": 0.20,            # 0.171 moving alone; it also moves with the door it is mounted on
    "handle": 0.42,          # 0.398: door_close's door swings on untouched after the reset
    "window": 0.19,          # 0.161
    "faucet": 0.19,          # 0.163
    "wall": 0.0,             # never moves
    "coffee_machine": 0.0,   # never moves
    "coffee_button": 0.11,   # 0.090
    "hammer": 0.26,          # 0.232
    "nail": 0.24,            # 0.220: struck by the held hammer
    "soccer_ball": 0.23,     # 0.209
})
"""Metres: the farthest the hand (``state[0:3]``) may be from an entity's reference point, before
or after a step, in a step where the entity moves (the largest measured distance, in the
comment, plus :data:`REACH_MARGIN`, rounded up to the centimetre).  0: the entity never moves."""

CARRIED_BY: Mapping[str, str] = MappingProxyType({"lock": "handle"})
"""Entities mounted on another moving entity: the lock moves with the door leaf (its slot is the
``handle``), wherever the hand is, in any step where the door moves."""

_REACH = np.array([CONTACT_REACH[e] for e in L.ENTITIES], dtype=np.float64)
_CARRIED = [(L.SLOT[e], L.SLOT[c]) for e, c in CARRIED_BY.items()]


def _moves_and_distance(states: np.ndarray, next_states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(N, 12)`` whether each entity moves in each step, and the hand's distance to it (the
    nearer of before and after)."""
    s = np.asarray(states, dtype=np.float64)
    ns = np.asarray(next_states, dtype=np.float64)
    before = s[:, L.SLOTS_START:].reshape(len(s), L.N_SLOTS, L.SLOT_SIZE)
    after = ns[:, L.SLOTS_START:].reshape(len(ns), L.N_SLOTS, L.SLOT_SIZE)
    moves = np.abs(after - before).max(axis=2) > POSE_STEP
    near_before = np.linalg.norm(before[..., :3] - s[:, None, L.HAND], axis=2)
    near_after = np.linalg.norm(after[..., :3] - ns[:, None, L.HAND], axis=2)
    return moves, np.minimum(near_before, near_after)


def touched_rows(states: np.ndarray, next_states: np.ndarray) -> np.ndarray:
    """``(N,)`` bool: in step ``states[i] -> next_states[i]`` every entity that moves has the
    hand within its :data:`CONTACT_REACH` (or is carried by an entity that moves too,
    :data:`CARRIED_BY`).  Non-finite rows are False."""
    s = np.asarray(states, dtype=np.float64)
    ns = np.asarray(next_states, dtype=np.float64)
    finite = np.isfinite(s).all(axis=1) & np.isfinite(ns).all(axis=1)
    moves, dist = _moves_and_distance(np.where(finite[:, None], s, 0.0), np.where(finite[:, None], ns, 0.0))
    untouched = moves & (dist > _REACH)
    for entity, carrier in _CARRIED:
        untouched[:, entity] &= ~moves[:, carrier]
    return finite & ~np.any(untouched, axis=1)


def contact_reach(episodes: Iterable[np.ndarray]) -> dict[str, tuple[int, float]]:
    """Per entity, over the ``(T+1, 91)`` state arrays of ``episodes``: the number of steps it
    moves in (not counting steps where its carrier moves too) and the largest hand distance in
    such a step (0.0 when it never moves) — the measurement :data:`CONTACT_REACH` is set from."""
    steps = np.zeros(L.N_SLOTS, dtype=np.int64)
    far = np.zeros(L.N_SLOTS, dtype=np.float64)
    for states in episodes:
        s = np.asarray(states, dtype=np.float64)
        moves, dist = _moves_and_distance(s[:-1], s[1:])
        for entity, carrier in _CARRIED:
            moves[:, entity] &= ~moves[:, carrier]
        steps += moves.sum(axis=0)
        far = np.maximum(far, np.where(moves, dist, 0.0).max(axis=0, initial=0.0))
    return {e: (int(steps[i]), float(far[i])) for i, e in enumerate(L.ENTITIES)}
