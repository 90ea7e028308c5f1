"""The 91-dim entity-slot state of MetaWorld-v0, its named slices and small geometry helpers.

Layout (docs/benchmark.md §3.3)::

    0:3    hand xyz            (metaworld's ``hand`` body, the gripper base; obs[0:3])
    3      gripper opening     (finger distance / 0.1, clipped to [0, 1]; metaworld's obs[3])
    4:7    goal xyz            (the task's target point, metaworld's ``_target_pos``)
    7:91   12 entity slots × 7 = position (x, y, z) + quaternion (w, x, y, z), in the order
           task object, button, lock, handle, window, faucet, wall, coffee machine,
           coffee button, hammer, nail, soccer ball

Quaternions follow MuJoCo's (w, x, y, z) convention with the sign chosen so that ``w >= 0``.
A slot is *empty* when all seven numbers are zero.  An episode's scene fills the slots of the
entities it holds (:data:`SCENE_ENTITIES`) and exactly one other slot with a *distractor*: a
plausible, constant pose of an entity that is not in the simulation.

What each slot's position and quaternion mean (the *reference point* of the entity, and the
orientation of the moving part that carries it):

================  ==========================================  ===================================
slot              position                                    quaternion
================  ==========================================  ===================================
task object       origin of the puck / mug body (``obj``)     the puck / mug body
button            button tip (``button`` body + (0,-0.193,0),  the ``button`` body
                  metaworld's observed point)
lock              origin of ``lock_link`` (on its hinge)       ``lock_link`` (hinge about the door's y)
handle            centre of the door-handle geom (metaworld's  the door leaf ``door_link`` (hinge
                  observed point)                             about z; identity = closed)
window            origin of the sliding sash ``windowb_a``     the sash body
faucet            origin of the knob ``faucet_link2`` (on its  the knob (hinge about z)
                  hinge)
wall              origin of the ``wall`` body                  the wall body
coffee machine    origin of the ``coffee_machine`` body        the machine body
coffee button     the ``buttonStart`` site (button face,       the ``cmbutton`` body
                  metaworld's observed point)
hammer            origin of the ``hammer`` body                the hammer body
nail              origin of ``nail_link``                      the nail body
soccer ball       origin of ``soccer_ball``                    identity (the ball collides as a
                                                              uniform sphere: its spin is not
                                                              recorded)
================  ==========================================  ===================================

Everything here is pure numpy: the success rules, the legality test and the simulator adapter
all read the state through these names.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Mapping

import numpy as np

ENTITIES: tuple[str, ...] = (
    "task_object", "button", "lock", "handle", "window", "faucet", "wall",
    "coffee_machine", "coffee_button", "hammer", "nail", "soccer_ball",
)
"""Entity slots in state order."""
SLOT: Mapping[str, int] = MappingProxyType({name: i for i, name in enumerate(ENTITIES)})
N_SLOTS = len(ENTITIES)
SLOT_SIZE = 7
"""Position (3) + quaternion (4)."""

HAND = slice(0, 3)
GRIPPER = 3
GOAL = slice(4, 7)
SLOTS_START = 7
STATE_DIM = SLOTS_START + N_SLOTS * SLOT_SIZE
assert STATE_DIM == 91

ACTION_DIM = 4
"""dx, dy, dz (mocap displacement, ×0.01 m per step) and gripper effort, each in [-1, 1]."""

STATE_LAYOUT: tuple[str, ...] = (
    ("hand_x", "hand_y", "hand_z", "gripper_opening", "goal_x", "goal_y", "goal_z")
    + tuple(f"{e}_{c}" for e in ENTITIES for c in ("x", "y", "z", "qw", "qx", "qy", "qz"))
)

SCENE_ENTITIES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "puck": ("task_object",),
    "puck_wall": ("task_object", "wall"),
    "button": ("button",),
    "button_wall": ("button", "wall"),
    "door_lock": ("lock", "handle"),
    "door": ("handle",),
    "window": ("window",),
    "faucet": ("faucet",),
    "coffee": ("task_object", "coffee_machine", "coffee_button"),
    "hammer": ("hammer", "nail"),
    "soccer": ("soccer_ball",),
    "locked_door": ("lock", "handle"),
})
"""The entities each kind of scene holds (its slots are filled from the simulator)."""

IDENTITY_QUAT = np.array([1.0, 0.0, 0.0, 0.0])


# ---------------------------------------------------------------------------- slot access
def slot_slice(entity: str | int) -> slice:
    """Where ``entity``'s 7 numbers lie in the state vector."""
    i = SLOT[entity] if isinstance(entity, str) else int(entity)
    start = SLOTS_START + SLOT_SIZE * i
    return slice(start, start + SLOT_SIZE)


def pos(state: np.ndarray, entity: str) -> np.ndarray:
    """Position of ``entity``'s reference point."""
    start = SLOTS_START + SLOT_SIZE * SLOT[entity]
    return np.asarray(state[start:start + 3], dtype=np.float64)


def quat(state: np.ndarray, entity: str) -> np.ndarray:
    """Quaternion (w, x, y, z) of ``entity``."""
    start = SLOTS_START + SLOT_SIZE * SLOT[entity] + 3
    return np.asarray(state[start:start + 4], dtype=np.float64)


def hand(state: np.ndarray) -> np.ndarray:
    return np.asarray(state[HAND], dtype=np.float64)


def goal(state: np.ndarray) -> np.ndarray:
    return np.asarray(state[GOAL], dtype=np.float64)


def slots(state: np.ndarray) -> np.ndarray:
    """The entity slots as a ``(12, 7)`` array."""
    return np.asarray(state[SLOTS_START:], dtype=np.float64).reshape(N_SLOTS, SLOT_SIZE)


# ---------------------------------------------------------------------------- quaternions
def canonical_quat(q: np.ndarray) -> np.ndarray:
    """``q`` normalised, with the sign that makes ``w >= 0`` (q and -q are the same rotation)."""
    q = np.asarray(q, dtype=np.float64)
    n = float(np.linalg.norm(q))
    if n == 0.0:
        return IDENTITY_QUAT.copy()
    q = q / n
    return -q if q[0] < 0 else q


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a ⊗ b`` of (w, x, y, z) quaternions."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])


def quat_conj(q: np.ndarray) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]], dtype=np.float64)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``v`` rotated by the (not necessarily normalised) quaternion ``q``."""
    q = np.asarray(q, dtype=np.float64)
    n = float(q @ q)
    if n == 0.0:
        return np.asarray(v, dtype=np.float64).copy()
    w, u = q[0], q[1:]
    v = np.asarray(v, dtype=np.float64)
    t = 2.0 * np.cross(u, v)
    return v + (w * t + np.cross(u, t)) / n


def axis_angle_quat(axis: np.ndarray, angle: float) -> np.ndarray:
    """The quaternion of a rotation by ``angle`` about the unit ``axis``."""
    half = 0.5 * float(angle)
    return np.concatenate([[math.cos(half)], math.sin(half) * np.asarray(axis, dtype=np.float64)])


def angle_about(q: np.ndarray, axis: np.ndarray) -> float:
    """Rotation angle in (-pi, pi] of ``q`` about ``axis`` (exact when ``q`` is such a rotation).

    This is the twist of ``q`` about ``axis`` (swing-twist decomposition), so small tilts about
    other axes do not change it.
    """
    q = np.asarray(q, dtype=np.float64)
    a = 2.0 * math.atan2(float(np.dot(q[1:], axis)), float(q[0]))
    return math.atan2(math.sin(a), math.cos(a))


def local_point(state: np.ndarray, entity: str, offset: np.ndarray) -> np.ndarray:
    """World position of a point fixed at ``offset`` in ``entity``'s frame."""
    return pos(state, entity) + rotate(quat(state, entity), offset)
