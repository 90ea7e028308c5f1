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
the jump tasks reads.  :func:`lowest_points` is the same forward kinematics for many states at
once, as numpy on the model's arrays (every frame of the cheetah is a rotation about y).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
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


@dataclass(frozen=True)
class _Joint:
    """One joint of a planar body, as the fields forward kinematics reads."""

    hinge: bool
    column: int
    """State column of the joint's coordinate; -1 for the root's x (not in the state: 0)."""
    ref: float
    """The model's ``qpos0``: MuJoCo moves a joint by ``qpos - qpos0``."""
    axis_x: float
    """Slide: x of the axis in the body frame; hinge: +1 or -1 (the axis is ±y)."""
    axis_z: float
    anchor_x: float
    anchor_z: float


@dataclass(frozen=True)
class _Body:
    """One body of the planar chain: its offset from its parent and its joints."""

    parent: int
    x: float
    z: float
    angle: float
    """Rotation about y of ``body_quat`` (rad)."""
    joints: tuple[_Joint, ...]


@dataclass(frozen=True)
class _Chain:
    """The model's kinematic tree reduced to the x-z plane, plus the non-floor capsules."""

    bodies: tuple[_Body, ...]
    """Bodies 1..nbody-1 in model order (a parent always comes before its children)."""
    geom_body: np.ndarray
    geom_x: np.ndarray
    geom_z: np.ndarray
    geom_cos: np.ndarray
    geom_sin: np.ndarray
    half_length: np.ndarray
    radius: np.ndarray


_PURE_Y_TOL = 1e-12


def _y_angle(quat: np.ndarray, what: str) -> float:
    """Angle of a quaternion that must be a rotation about y (else ``ValueError``)."""
    w, x, y, z = (float(v) for v in quat)
    if abs(x) > _PURE_Y_TOL or abs(z) > _PURE_Y_TOL or abs(w * w + y * y - 1.0) > 1e-9:
        raise ValueError(f"HalfCheetah-v0 kinematics: {what} quaternion {tuple(quat)} is not a rotation about y; "
                         "lowest_points assumes a planar cheetah (every frame turns about y only).")
    return 2.0 * float(np.arctan2(y, w))


def _planar_chain(model: Any) -> _Chain:
    """Read ``model`` into a :class:`_Chain`, checking that it is planar about y (``ValueError`` if not)."""
    import mujoco

    def name(kind: Any, i: int) -> str:
        return mujoco.mj_id2name(model, kind, i) or f"#{i}"

    if model.nq != 1 + (QPOS_SLICE.stop - QPOS_SLICE.start):
        raise ValueError(f"HalfCheetah-v0 kinematics: the model has {model.nq} position coordinates, "
                         f"the 18-dim state layout reads {QPOS_SLICE.stop} (x included).")
    bodies = []
    for b in range(1, model.nbody):
        joints = []
        for j in range(model.body_jntadr[b], model.body_jntadr[b] + model.body_jntnum[b]):
            kind, axis, anchor = int(model.jnt_type[j]), model.jnt_axis[j], model.jnt_pos[j]
            jname = name(mujoco.mjtObj.mjOBJ_JOINT, j)
            if kind == mujoco.mjtJoint.mjJNT_HINGE:
                if abs(axis[0]) > _PURE_Y_TOL or abs(axis[2]) > _PURE_Y_TOL or abs(abs(axis[1]) - 1.0) > 1e-9:
                    raise ValueError(f"HalfCheetah-v0 kinematics: hinge {jname!r} turns about {tuple(axis)}, "
                                     "not y; lowest_points assumes a planar cheetah.")
                axis_x, axis_z = float(np.sign(axis[1])), 0.0
            elif kind == mujoco.mjtJoint.mjJNT_SLIDE:
                axis_x, axis_z = float(axis[0]), float(axis[2])  # its y part moves nothing in x-z
            else:
                raise ValueError(f"HalfCheetah-v0 kinematics: joint {jname!r} is neither a hinge nor a slide.")
            adr = int(model.jnt_qposadr[j])
            joints.append(_Joint(hinge=kind == mujoco.mjtJoint.mjJNT_HINGE, column=adr if adr > 0 else -1,
                                 ref=float(model.qpos0[adr]), axis_x=axis_x, axis_z=axis_z,
                                 anchor_x=float(anchor[0]), anchor_z=float(anchor[2])))
        bname = name(mujoco.mjtObj.mjOBJ_BODY, b)
        bodies.append(_Body(parent=int(model.body_parentid[b]), x=float(model.body_pos[b, 0]),
                            z=float(model.body_pos[b, 2]), angle=_y_angle(model.body_quat[b], f"body {bname!r}"),
                            joints=tuple(joints)))
    floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    geoms = [g for g in range(model.ngeom) if g != floor]
    for g in geoms:
        if model.geom_type[g] != mujoco.mjtGeom.mjGEOM_CAPSULE:
            raise ValueError(f"HalfCheetah-v0 kinematics: geom {name(mujoco.mjtObj.mjOBJ_GEOM, g)!r} is not a "
                             "capsule; the lowest point is computed for capsules only.")
    angles = np.array([_y_angle(model.geom_quat[g], f"geom {name(mujoco.mjtObj.mjOBJ_GEOM, g)!r}") for g in geoms])
    return _Chain(
        bodies=tuple(bodies),
        geom_body=model.geom_bodyid[geoms].astype(np.intp),
        geom_x=model.geom_pos[geoms, 0].copy(), geom_z=model.geom_pos[geoms, 2].copy(),
        geom_cos=np.cos(angles), geom_sin=np.sin(angles),
        half_length=model.geom_size[geoms, 1].copy(), radius=model.geom_size[geoms, 0].copy(),
    )


_CHAIN: _Chain | None = None


def _chain() -> _Chain:
    global _CHAIN
    if _CHAIN is None:
        _CHAIN = _planar_chain(_kinematics().model)
    return _CHAIN


def _rise(offset_x: float, offset_z: float, cos: np.ndarray, sin: np.ndarray) -> np.ndarray | float:
    """World height of a body-frame offset ``(x, z)`` in a frame pitched by θ (rotation about y)."""
    rise: np.ndarray | float = 0.0
    if offset_z:
        rise = offset_z * cos
    if offset_x:
        rise = rise - offset_x * sin
    return rise


def lowest_points(states: np.ndarray) -> np.ndarray:
    """:func:`lowest_point` of every row of ``(N, 18)`` states, as ``(N,)`` (equal to ~1e-15 m).

    Generation scores thousands of imagined states per step, and one MuJoCo call per state is
    the cost there.  The chain is planar, so each frame is a height and a pitch θ (a rotation
    about y); this follows MuJoCo's order (body offset, then each joint; a hinge turns about
    its anchor).  Non-finite rows give non-finite values, as MuJoCo does.
    """
    s = np.asarray(states, dtype=np.float64)
    if s.ndim != 2 or s.shape[1] != STATE_DIM:
        raise ValueError(f"lowest_points: expected states of shape (N, {STATE_DIM}), got {s.shape}")
    return _chain_lowest_points(_chain(), s)


def _chain_lowest_points(c: _Chain, s: np.ndarray) -> np.ndarray:
    """:func:`lowest_points` for any planar chain (the tests also run it on edited models)."""
    n = len(s)
    with np.errstate(invalid="ignore", over="ignore"):
        zero = np.zeros(n)
        heights, pitches, cosines, sines = [zero], [zero], [np.ones(n)], [zero]  # the world body
        for body in c.bodies:
            cos, sin = cosines[body.parent], sines[body.parent]
            height = heights[body.parent] + _rise(body.x, body.z, cos, sin)
            pitch = pitches[body.parent] + body.angle
            if body.angle:
                cos, sin = np.cos(pitch), np.sin(pitch)
            for joint in body.joints:
                q = s[:, joint.column] - joint.ref if joint.column >= 0 else np.full(n, -joint.ref)
                if not joint.hinge:
                    height = height + _rise(joint.axis_x, joint.axis_z, cos, sin) * q
                    continue
                anchor = height + _rise(joint.anchor_x, joint.anchor_z, cos, sin)
                pitch = pitch + joint.axis_x * q
                cos, sin = np.cos(pitch), np.sin(pitch)
                height = anchor - _rise(joint.anchor_x, joint.anchor_z, cos, sin)
            heights.append(height)
            pitches.append(pitch)
            cosines.append(cos)
            sines.append(sin)
        gb = c.geom_body
        cos, sin = np.stack(cosines, axis=1)[:, gb], np.stack(sines, axis=1)[:, gb]
        centre = np.stack(heights, axis=1)[:, gb] + (c.geom_z * cos - c.geom_x * sin)
        axis_z = cos * c.geom_cos - sin * c.geom_sin  # cos of the capsule's own pitch in the world
        low = centre - np.abs(axis_z) * c.half_length - c.radius
        return low.min(axis=1) if low.shape[1] else np.full(n, np.inf)


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
