"""LIBERO's physics prior for imagined steps: a body that rests where the gripper is not touching it
stays where it is, and the arm's joints and fingers stop at their limits.

The rollout model predicts each step's change of all 44 numbers; for bodies at rest the real
change is exactly 0, and the model's small errors there add up: in the first imagined rollouts
of the GPU fine-tunes (session 27, notes/libero.md) an untouched object sank 1 cm into the floor
within 5–13 steps in most candidates, and the honest filter rejected them as illegal.  In the
real train data a body moves only with the end effector within 5.7 cm of its origin before or
after the step (150,000 steps, every object; the basket never moves), and in the hard level's a
released object falls on its own and can jostle the basket it lands in.  So :func:`constrain_step`
keeps the previous pose of every body that rested — on the floor, or on the basket's floor — and
whose origin is beyond :data:`CONTACT_REACH` of the end effector and of every body that does not
rest, before and after the step.  The arm, the gripper, a
falling body and the motion of a body within reach stay the model's own — whether that motion is
right is what replay in the simulator measures.  With that, most remaining rejections were finger
joints imagined beyond their travel (session 27), so arm joints are clipped to the Panda's ranges and
finger joints to [0, 0.04] / [-0.04, 0] — the joints' own limits, which real states never reach
(real fingers stay within 0.018–0.0397, real joints 0.36 rad or more inside their ranges).
A pure function of consecutive states; opt-in (``imagine generate --physics-prior``), recorded in
the data's metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from imaginebench.domains.libero import layout as L
from imaginebench.domains.libero.domain import JOINT_LIMITS
from imaginebench.domains.libero.success import IN_BASKET_RADIUS, REST_TOLERANCE

CONTACT_REACH: Mapping[str, float] = MappingProxyType(
    {entity: L.FOOTPRINT_RADIUS[entity] + 0.04 for entity in L.ENTITIES})
"""Distance (m) from a body's origin to the end effector beyond which the gripper cannot be
touching it: half its longest horizontal side plus 4 cm of finger.  Real steps that move a body
have the end effector at most 2.3 cm (cream cheese), 4.8 cm (salad dressing) or 5.7 cm (alphabet
soup) from its origin, inside these reaches (7.2, 8.1, 6.6 and 12.5 cm with the basket)."""
_REACH = np.array([CONTACT_REACH[e] for e in L.ENTITIES])
_FLOOR_REST = np.array([L.REST_Z[e] for e in L.ENTITIES]) + REST_TOLERANCE
_BASKET_REST = np.array([L.BASKET_FLOOR + L.HALF_HEIGHT.get(e, np.inf) for e in L.ENTITIES]) + REST_TOLERANCE
_BASKET = L.SLOT["basket"]


def resting_rows(states: np.ndarray) -> np.ndarray:
    """``(N, 4)``: whether each body rests on the floor (origin no higher than its resting height
    plus :data:`~imaginebench.domains.libero.success.REST_TOLERANCE`, as the success rules'
    ``resting``) or on the basket's floor (inside its rim's radius, no higher than the basket's
    floor plus its half height and the tolerance)."""
    slots = states[:, L.SLOTS_START:].reshape(len(states), len(L.ENTITIES), L.SLOT_DIM)
    pos, basket = slots[..., :3], slots[:, _BASKET, None, :3]
    on_floor = pos[..., 2] <= _FLOOR_REST
    in_basket = ((np.linalg.norm(pos[..., :2] - basket[..., :2], axis=2) <= IN_BASKET_RADIUS)
                 & (pos[..., 2] - basket[..., 2] <= _BASKET_REST))
    in_basket[:, _BASKET] = False
    return on_floor | in_basket


def constrain_step(previous: np.ndarray, actions: np.ndarray, states: np.ndarray) -> np.ndarray:
    """``(N, 44)`` imagined next states with the prior imposed, from the ``(N, 44)`` previous states
    (``actions`` are not read: LIBERO's prior is about contact and joint limits)."""
    prev = np.asarray(previous, dtype=np.float64)
    out = np.array(states, dtype=np.float64, copy=True)
    out[:, L.JOINTS] = np.clip(out[:, L.JOINTS], JOINT_LIMITS[:, 0], JOINT_LIMITS[:, 1])
    g = L.GRIPPER.start
    out[:, g] = np.clip(out[:, g], 0.0, L.FINGER_OPEN)
    out[:, g + 1] = np.clip(out[:, g + 1], -L.FINGER_OPEN, 0.0)
    before = prev[:, L.SLOTS_START:].reshape(len(prev), len(L.ENTITIES), L.SLOT_DIM)
    after = out[:, L.SLOTS_START:].reshape(len(out), len(L.ENTITIES), L.SLOT_DIM)
    resting = resting_rows(prev)
    still = resting.copy()
    for pose, hand in ((before, prev[:, L.EEF_POS]), (after, out[:, L.EEF_POS])):  # before and after the step
        still &= np.linalg.norm(pose[..., :3] - hand[:, None], axis=2) > _REACH
        for m in range(len(L.ENTITIES)):  # a body that does not rest (falls, is carried) can strike others
            near = np.linalg.norm(pose[..., :3] - pose[:, m, None, :3], axis=2) <= _REACH
            near[:, m] = False
            still &= ~(near & ~resting[:, m, None])
    after[still] = before[still]
    out[:, L.SLOTS_START:] = after.reshape(len(out), -1)
    return out.astype(np.asarray(states).dtype, copy=False)
