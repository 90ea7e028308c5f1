"""Meta-World's physics prior for imagined steps: the hand goes where the action sends it, and an
entity the hand does not touch stays where it is.

The honest filter rejects imagined rollouts that break either fact (:mod:`.propulsion`,
:mod:`.contact`); on this domain it rejects almost all of them — 96% of a rephrase level's
candidates move an entity that nothing touches (notes/metaworld_imagination.md, session 26).
:func:`constrain_step` imposes the same two facts while a rollout is imagined instead of
judging them afterwards: the imagined hand is replaced by the arm's measured position control
(``hand + HAND_GAIN · a + HAND_BIAS``), and every entity beyond its :data:`.contact.CONTACT_REACH`
of the hand before and after the step keeps its previous pose.  What stays the model's own: the
gripper, the goal and the motion of every entity the hand can be touching — whether that motion is
right is what replay in the simulator measures.  A pure function of consecutive states and the
action; opt-in (``imagine generate --physics-prior``), recorded in the data's metadata.
"""

from __future__ import annotations

import numpy as np

from imaginebench.domains.metaworld import layout as L
from imaginebench.domains.metaworld.contact import _CARRIED, _COUNTED, _REACH, POSE_STEP
from imaginebench.domains.metaworld.propulsion import HAND_BIAS, HAND_GAIN


def constrain_step(previous: np.ndarray, actions: np.ndarray, states: np.ndarray) -> np.ndarray:
    """``(N, 91)`` imagined next states with the prior imposed, from the ``(N, 91)`` previous
    states and the ``(N, 4)`` actions taken between them (clipped to [-1, 1], as the env does)."""
    prev = np.asarray(previous, dtype=np.float64)
    out = np.array(states, dtype=np.float64, copy=True)
    a = np.clip(np.asarray(actions, dtype=np.float64)[:, :3], -1.0, 1.0)
    out[:, L.HAND] = prev[:, L.HAND] + a * HAND_GAIN + HAND_BIAS
    before = prev[:, L.SLOTS_START:].reshape(len(prev), L.N_SLOTS, L.SLOT_SIZE)
    after = out[:, L.SLOTS_START:].reshape(len(out), L.N_SLOTS, L.SLOT_SIZE)
    near_before = np.linalg.norm(before[..., :3] - prev[:, None, L.HAND], axis=2) <= _REACH
    near_after = np.linalg.norm(after[..., :3] - out[:, None, L.HAND], axis=2) <= _REACH
    touched = near_before | near_after
    carried = {entity for entity, _ in _CARRIED}
    free = np.array([i not in carried for i in range(L.N_SLOTS)])
    still = ~touched & free[None, :]
    after[still] = before[still]
    for entity, carrier in _CARRIED:  # a mounted entity moves with what carries it
        moved = np.where(_COUNTED[carrier], np.abs(after[:, carrier] - before[:, carrier]), 0.0).max(axis=1) > POSE_STEP
        keep = ~(touched[:, entity] | touched[:, carrier] | moved)
        after[keep, entity] = before[keep, entity]
    out[:, L.SLOTS_START:] = after.reshape(len(out), -1)
    return out.astype(np.asarray(states).dtype, copy=False)
