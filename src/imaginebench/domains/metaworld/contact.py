"""Which Meta-World steps are physically possible as steps: an entity moves only when touched.

A state can be legal on its own while the steps into it are not: imagined rollouts turn the faucet
or press the coffee button with the hand twice as far away as any real episode ever is
(notes/metaworld_imagination.md).  In the simulator an entity's pose changes only while the
gripper, or the object it holds, is in contact with it; from the state vector that reads as a
bound on the hand's distance to the entity's reference point while the entity moves, counted
from where the entity was when the hand last touched it (:func:`untouched_steps`).

The bounds (:data:`CONTACT_REACH`) are physical facts of the scene's geometry, measured on expert
rollouts of every task of every level (the ``small`` real data of train, easy and hard: 6,000
episodes): the largest hand distance in a step where the entity moves (:func:`contact_reach`),
or, where an entity creeps on after a touch, the smallest reach at which every one of those
episodes passes :func:`untouched_steps` — plus :data:`REACH_MARGIN`.
They are per entity, never per task or instruction, so a novel task's rollouts are judged by
the same physics as the train tasks'.  Everything here is a pure function of a rollout's states.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

import numpy as np

from imaginebench.domains.metaworld import layout as L

POSE_STEP = 5e-3
"""An entity *moves* when one of its seven numbers (position in metres, unit quaternion) changes
by more than this (its position only, for :data:`POSITION_ONLY` entities)."""
POSITION_ONLY: tuple[str, ...] = ("task_object",)
"""Free bodies resting on the table: the mug's orientation wobbles in place by up to ~0.02 a step
with nothing near it, so only their position counts as a move."""
REACH_MARGIN = 0.02
"""Metres added to the largest hand distance measured while an entity moves."""

CONTACT_REACH: Mapping[str, float] = MappingProxyType({
    "task_object": 0.28,     # 0.26: make_coffee's mug creeps on after the push (0.122 in one step)
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
or after a step, for the entity to move (the measured distance, in the comment, plus
:data:`REACH_MARGIN`, rounded up to the centimetre).  0: the entity never moves."""

CARRIED_BY: Mapping[str, str] = MappingProxyType({"lock": "handle"})
"""Entities mounted on another: the lock rides on the door leaf (its slot is the ``handle``), so
it counts as touched whenever the door is touched or moves."""

_REACH = np.array([CONTACT_REACH[e] for e in L.ENTITIES], dtype=np.float64)
_COUNTED = np.ones((L.N_SLOTS, L.SLOT_SIZE), dtype=bool)
for _name in POSITION_ONLY:
    _COUNTED[L.SLOT[_name], 3:] = False
_CARRIED = [(L.SLOT[e], L.SLOT[c]) for e, c in CARRIED_BY.items()]


def _slots_and_distance(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(T+1, 12, 7)`` entity slots and ``(T+1, 12)`` hand distance to each reference point."""
    slots = states[:, L.SLOTS_START:].reshape(len(states), L.N_SLOTS, L.SLOT_SIZE)
    return slots, np.linalg.norm(slots[..., :3] - states[:, None, L.HAND], axis=2)


def _change(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per entity, the largest change of a counted number between poses ``a`` and ``b`` (``(..., 12, 7)``)."""
    return np.where(_COUNTED, np.abs(a - b), 0.0).max(axis=-1)


def _touched(dist: np.ndarray, moved: np.ndarray) -> np.ndarray:
    """Which entities the hand can be touching in a step: within their reach before or after
    (``dist``, ``(2, 12)``), or carried by an entity that is touched or ``moved``."""
    touched = dist.min(axis=0) <= _REACH
    for entity, carrier in _CARRIED:
        touched[entity] |= touched[carrier] | moved[carrier]
    return touched


def untouched_steps(states: np.ndarray) -> np.ndarray:
    """``(T,)`` bool over a rollout's ``(T+1, 91)`` states: step ``t`` moves an entity that the
    hand has not touched — its pose is more than :data:`POSE_STEP` from where it was when last
    touched (or at the start), and the hand is beyond its :data:`CONTACT_REACH` before and after
    the step.  Measured from the last touch, not per step, so a slow creep of a few millimetres a
    step (a button pressed over seven untouched steps) counts as the move it adds up to.  A
    non-finite state makes its steps untouched moves."""
    s = np.asarray(states, dtype=np.float64)
    finite = np.isfinite(s).all(axis=1)
    slots, dist = _slots_and_distance(np.where(finite[:, None], s, 0.0))
    bad = ~(finite[:-1] & finite[1:])
    anchor = slots[0].copy()
    for t in range(1, len(s)):
        moved = _change(slots[t], slots[t - 1]) > POSE_STEP
        touched = _touched(dist[t - 1:t + 1], moved)
        anchor[touched] = slots[t][touched]
        drifted = _change(slots[t], anchor) > POSE_STEP
        if drifted.any():
            bad[t - 1] = True
            anchor[drifted] = slots[t][drifted]
    return bad


def contact_reach(episodes: Iterable[np.ndarray]) -> dict[str, tuple[int, float]]:
    """Per entity, over the ``(T+1, 91)`` state arrays of ``episodes``: the number of steps it
    moves in by more than :data:`POSE_STEP` (not counting steps where its carrier moves too) and
    the largest hand distance in such a step (0.0 when it never moves) — the measurement
    :data:`CONTACT_REACH` is set from."""
    steps = np.zeros(L.N_SLOTS, dtype=np.int64)
    far = np.zeros(L.N_SLOTS, dtype=np.float64)
    for states in episodes:
        slots, dist = _slots_and_distance(np.asarray(states, dtype=np.float64))
        moves = _change(slots[1:], slots[:-1]) > POSE_STEP
        near = np.minimum(dist[:-1], dist[1:])
        for entity, carrier in _CARRIED:
            moves[:, entity] &= ~moves[:, carrier]
        steps += moves.sum(axis=0)
        far = np.maximum(far, np.where(moves, near, 0.0).max(axis=0, initial=0.0))
    return {e: (int(steps[i]), float(far[i])) for i, e in enumerate(L.ENTITIES)}
