"""HalfCheetah-v0 physics: gymnasium's MuJoCo HalfCheetah, its 18-dim state, and the body
geometry the success rules read.

State (18 numbers)::

    0       dx       forward displacement of the root since the previous step (m; 0 at reset)
    1       rootz    root height relative to the model's rest pose (m; the torso body sits at
                     0.7 m + rootz)
    2       rooty    pitch of the root (rad)
    3..8    bthigh, bshin, bfoot, fthigh, fshin, ffoot   joint angles (rad)
    9..17   qvel     root vx, vz, pitch rate, then the six joint rates

``state[1:]`` is gymnasium's own 17-dim observation (``qpos`` without x, then ``qvel``); the
root's x is not in the state (the dynamics do not depend on it), which is why ``dx`` is.

:func:`lowest_point` and :func:`torso_height` are pure functions of the state (forward
kinematics of the planar chain, by MuJoCo on a private data buffer): what the airborne test of
the jump tasks reads.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

STATE_DIM = 18
ACTION_DIM = 6
JOINTS: tuple[str, ...] = ("bthigh", "bshin", "bfoot", "fthigh", "fshin", "ffoot")
STATE_LAYOUT: tuple[str, ...] = (
    ("dx", "rootz", "rooty") + JOINTS
    + ("vx", "vz", "vpitch") + tuple(f"v_{j}" for j in JOINTS)
)
DX, ROOTZ, ROOTY = 0, 1, 2
JOINT_SLICE = slice(3, 9)
QPOS_SLICE = slice(1, 9)
QVEL_SLICE = slice(9, 18)
VX, VZ = 9, 10
GYM_ID = "HalfCheetah-v5"
DT = 0.05
"""Seconds per step (gymnasium's frame skip 5 × MuJoCo timestep 0.01)."""
TORSO_REST_Z = 0.7
"""Height of the torso body when ``rootz`` is 0 (the model's rest pose)."""


def model_path() -> str:
    """gymnasium's ``half_cheetah.xml``."""
    import gymnasium

    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "half_cheetah.xml")


class _Kinematics(threading.local):
    """A MuJoCo model and a private data buffer per thread, for forward kinematics only."""

    def __init__(self) -> None:
        import mujoco

        self.mujoco = mujoco
        self.model = mujoco.MjModel.from_xml_path(model_path())
        self.data = mujoco.MjData(self.model)
        floor = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
        self.geoms = np.array([g for g in range(self.model.ngeom) if g != floor])
        self.radius = self.model.geom_size[self.geoms, 0].copy()
        self.half_length = self.model.geom_size[self.geoms, 1].copy()


_KIN: _Kinematics | None = None


def _kinematics() -> _Kinematics:
    global _KIN
    if _KIN is None:
        _KIN = _Kinematics()
    return _KIN


def lowest_point(state: np.ndarray) -> float:
    """Height above the floor of the lowest point of the cheetah's body (m; negative when a
    capsule sinks into the floor, as MuJoCo's soft contacts allow by a few mm).

    Every body part is a capsule along its local z: its lowest point is its centre's height less
    ``|axis_z|·half_length + radius``.
    """
    k = _kinematics()
    s = np.asarray(state, dtype=np.float64)
    k.data.qpos[0] = 0.0
    k.data.qpos[1:] = s[QPOS_SLICE]
    k.mujoco.mj_kinematics(k.model, k.data)
    centre_z = k.data.geom_xpos[k.geoms, 2]
    axis_z = k.data.geom_xmat[k.geoms, 8]
    return float(np.min(centre_z - np.abs(axis_z) * k.half_length - k.radius))


def torso_height(state: np.ndarray) -> float:
    """Height of the torso body (m): 0.7 + ``rootz``."""
    return TORSO_REST_Z + float(state[ROOTZ])


def joint_range() -> np.ndarray:
    """``(6, 2)`` limits of the six leg joints (rad), from the model."""
    k = _kinematics()
    return k.model.jnt_range[3:9].copy()


class Simulator:
    """gymnasium's HalfCheetah driven step by step, reporting the 18-dim state."""

    def __init__(self) -> None:
        import gymnasium as gym

        self.env: Any = gym.make(GYM_ID, exclude_current_positions_from_observation=False).unwrapped
        self.last_dx = 0.0

    def reset(self, seed: int) -> np.ndarray:
        """gymnasium's reset (uniform ±0.1 joint noise, N(0, 0.1²) velocities) with ``seed``."""
        self.env.reset(seed=seed)
        self.last_dx = 0.0
        return self.read()

    def step(self, action: np.ndarray) -> np.ndarray:
        x_before = float(self.env.data.qpos[0])
        self.env.do_simulation(np.asarray(action, dtype=np.float64), self.env.frame_skip)
        self.last_dx = float(self.env.data.qpos[0]) - x_before
        return self.read()

    def read(self) -> np.ndarray:
        d = self.env.data
        return np.concatenate([[self.last_dx], d.qpos[1:], d.qvel]).astype(np.float64)

    def write(self, state: np.ndarray) -> None:
        """Put the simulator into ``state`` (x stays where it is; ``dx`` is kept as history)."""
        s = np.asarray(state, dtype=np.float64)
        qpos = np.concatenate([[self.env.data.qpos[0]], s[QPOS_SLICE]])
        self.env.set_state(qpos, s[QVEL_SLICE].copy())
        self.last_dx = float(s[DX])

    def close(self) -> None:
        self.env.close()
