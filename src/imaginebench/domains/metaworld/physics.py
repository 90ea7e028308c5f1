"""Meta-World's simulators behind MetaWorld-v0: building them, reading the 91-dim state, setting it.

Every task runs on one of metaworld's own v3 environments (``metaworld.env_dict``), stepped with
metaworld's ``step`` (mocap displacement of 0.01 × action per step, finger position actuators,
frame skip 5 × 2.5 ms).  The wrapper only configures them as metaworld's goal-observable
benchmark envs do (goal in the observation, random initial layouts), seeds their layout draws from
the episode's generator, and translates between metaworld's model and the entity-slot state.

Composite scene **locked-door-open** (:class:`LockedDoorEnv`): metaworld's door-unlock env
(``sawyer_door_lock.xml``: a safe whose door carries the lock, but the door itself is fixed) with
its door leaf put on a hinge — the same ``doorjoint`` as door-open's ``doorlockB.xml`` (axis z,
range [-2, 0], damping 2, armature 0.001), added with ``mujoco.MjSpec`` when the model is
compiled.  No metaworld scene has both a lock and a hinged door: door-open's
``sawyer_door_pull.xml`` has the hinge but no lock.  A joint equality (the *latch*) holds the
leaf shut while the lock is not turned open and the door is closed, so a locked door does not
open.  make-coffee needs no new scene: coffee-push's ``sawyer_coffee.xml`` holds the mug, the
machine and its button.

``set_state`` (:meth:`Scene.write`) puts a scene into a 91-dim state as far as the state
determines it:

* hand: the 7 arm joints by task-priority damped least-squares inverse kinematics (the hand's
  position exactly, metaworld's fixed gripper orientation in the remaining freedom; started from
  the arm's posture after a fixed reset of the scene, so the result depends on the state only)
  and the mocap target at the hand's offset after metaworld's reset;
* gripper: both finger joints from the opening (as the fingers close freely: symmetric until the
  left one reaches its limit, then the right one);
* free objects (puck, mug, hammer, soccer ball): their joint pose from the slot;
* articulated parts: the joint angle or slide from the slot (lock, door leaf, faucet knob,
  button, window sash, coffee button, nail) and the base body's position from the slot or the
  goal (button box = goal + (0, 0.1, 0); window frame = goal minus its offset); joints may sit
  slightly past their (soft) limits, as real states do;
* goal: metaworld's ``_target_pos`` (make-coffee: the mug's target under the machine).

Approximations: every velocity is zero (the state holds none), the mocap target — which during
fast motion runs up to several centimetres ahead of the hand — is put at the hand's offset after
a reset,
the arm's redundant elbow posture and the hand's slight tilt are the IK's, not the original ones
(at the far edge of the reach the IK can miss the hand position by up to ~3 mm), and the solver's
warm start is cleared.  The measured effect on the next state is published in ``notes/metaworld.md`` and sets
``MetaWorldDomain.transition_tolerance``.
"""

from __future__ import annotations

import math
from typing import Any

import mujoco
import numpy as np
from metaworld.env_dict import ALL_V3_ENVIRONMENTS
from metaworld.envs.sawyer_door_unlock_v3 import SawyerDoorUnlockEnvV3
from metaworld.sawyer_xyz_env import SawyerXYZEnv

from imaginebench.domains.metaworld import layout as L
from imaginebench.domains.metaworld import success as S
from imaginebench.domains.metaworld.tasks import LOCKED_DOOR_ENV

HAND_QUAT = np.array([1.0, 0.0, 1.0, 0.0]) / math.sqrt(2.0)
"""The hand's orientation: metaworld's fixed mocap quaternion ``[1, 0, 1, 0]``, normalised."""
IK_ITERATIONS = 300
IK_DAMPING = 1e-4
"""Damping of the least-squares steps."""
IK_LIMIT_MARGIN = 0.05
"""The arm may sit this far past a joint limit (rad): MuJoCo's limits are soft, and the real arm
reaches the far end of the table with ``right_j1`` slightly past -0.5."""
IK_MAX_STEP = 0.2
"""Largest joint change per iteration (rad)."""
IK_TOLERANCE = 1e-9
"""Stop when the hand is this close to its target (m)."""
LATCH_SOLREF = (0.005, 1.0)
"""Stiffness of the locked-door latch (time constant 2 timesteps: the stiffest MuJoCo allows)."""
PHYSICAL_LOCK_RADIUS = S.LOCK_RADIUS
"""The latch lets go when the lock is open by door-unlock's own rule (``lock_radius``)."""
DOOR_OPEN_GOAL_OFFSET = np.array([-0.3, -0.45, 0.0])
"""door-open's target relative to the safe (``sawyer_door_v3.py``); locked-door-open uses it too."""
UNLOCK_GOAL_OFFSET = np.array([0.1, -0.04, 0.0])
"""door-unlock's target relative to ``lock_link`` (``sawyer_door_unlock_v3.py``)."""

JOINT_LIMIT_MARGIN = 0.1
"""``set_state`` keeps a part's joint within this fraction of its range past the range."""

ARM_JOINTS = tuple(f"right_j{i}" for i in range(7))


# ---------------------------------------------------------------------------- environments
def _configure(env: SawyerXYZEnv) -> SawyerXYZEnv:
    """Goal observable, layouts drawn from ``env.np_random``, no path-length cap (episodes are
    ended by ImagineBench)."""
    env._partially_observable = False
    del env.sawyer_observation_space  # recomputed for the observable goal
    env._freeze_rand_vec = False
    env.seeded_rand_vec = True
    env._set_task_called = True
    env.max_path_length = 2**31 - 1
    return env


def _joint_address(model: mujoco.MjModel, body: str) -> tuple[int, int]:
    """qpos and dof address of the (only) joint of ``body``."""
    j = int(model.body_jntadr[model.body(body).id])
    return int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])


class LockedDoorEnv(SawyerDoorUnlockEnvV3):
    """metaworld's door-unlock environment with a hinged door leaf and a latch (module docstring).

    Resets as door-unlock does (safe at a random place, lock turned shut, door closed).  Before
    each step the latch is engaged when the lock is not open and the leaf is within
    :data:`~.success.DOOR_CLOSED_ANGLE` of closed, and released otherwise.
    """

    def _initialize_simulation(self) -> tuple[mujoco.MjModel, mujoco.MjData]:
        spec = mujoco.MjSpec.from_file(self.fullpath)
        hinge = spec.body("door_link").add_joint(
            name="doorjoint", type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 0, 1], range=[-2.0, 0.0],
            damping=2.0, armature=0.001)
        hinge.limited = mujoco.mjtLimited.mjLIMITED_TRUE
        spec.add_equality(name="door_latch", type=mujoco.mjtEq.mjEQ_JOINT,
                          objtype=mujoco.mjtObj.mjOBJ_JOINT, name1="doorjoint", solref=list(LATCH_SOLREF))
        model = spec.compile()
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, self.width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, self.height)
        return model, mujoco.MjData(model)

    def _set_obj_xyz(self, pos: Any) -> None:
        """Turn the lock (door-unlock writes ``qpos[9]``, which is the door hinge here)."""
        qpos, qvel = self.data.qpos.copy(), self.data.qvel.copy()
        lock_q, lock_v = _joint_address(self.model, "lock_link")
        door_q, door_v = _joint_address(self.model, "door_link")
        qpos[lock_q], qvel[lock_v] = float(np.asarray(pos)), 0.0
        qpos[door_q], qvel[door_v] = 0.0, 0.0
        self.set_state(qpos, qvel)

    def update_latch(self) -> bool:
        """Engage or release the latch from the current lock and door angles; returns engaged."""
        m, d = self.model, self.data
        lock_angle = float(d.qpos[_joint_address(m, "lock_link")[0]])
        door_angle = float(d.qpos[_joint_address(m, "door_link")[0]])
        shift = L.rotate(L.axis_angle_quat(S.LOCK_AXIS, lock_angle), S.LOCK_SITE_UNLOCK)[0]
        unlocked = abs(shift - S.LOCK_UNLOCK_SHIFT) <= PHYSICAL_LOCK_RADIUS
        engaged = (not unlocked) and abs(door_angle) < S.DOOR_CLOSED_ANGLE
        d.eq_active[m.equality("door_latch").id] = engaged
        return engaged

    def step(self, action: Any) -> Any:
        self.update_latch()
        return super().step(action)


def make_metaworld_env(env_name: str) -> SawyerXYZEnv:
    """metaworld's environment ``env_name`` (or :data:`LOCKED_DOOR_ENV`), configured for ImagineBench."""
    if env_name == LOCKED_DOOR_ENV:
        return _configure(LockedDoorEnv())
    if env_name not in ALL_V3_ENVIRONMENTS:
        raise ValueError(f"Unknown metaworld environment {env_name!r}.")
    return _configure(ALL_V3_ENVIRONMENTS[env_name]())


# ---------------------------------------------------------------------------- scenes
class Scene:
    """One metaworld environment and the translation between its model and the 91-dim state.

    Subclasses name their entities (:data:`~.layout.SCENE_ENTITIES`) and implement
    :meth:`_read_entities` / :meth:`_write_entities`; the hand, gripper and goal are common.
    """

    kind: str = ""

    def __init__(self, env_name: str) -> None:
        self.env_name = env_name
        self.env = make_metaworld_env(env_name)
        m = self.env.model
        self.model, self.data = m, self.env.data
        self.hand_id = m.body("hand").id
        self.arm_q = np.array([m.jnt_qposadr[m.joint(j).id] for j in ARM_JOINTS])
        self.arm_v = np.array([m.jnt_dofadr[m.joint(j).id] for j in ARM_JOINTS])
        self.arm_range = np.array([m.jnt_range[m.joint(j).id] for j in ARM_JOINTS])
        self.env.np_random = np.random.default_rng(0)
        self.env.reset()  # metaworld's reset brings the arm to its working posture over the table
        mujoco.mj_forward(m, self.data)
        self.arm_home = self.data.qpos[self.arm_q].copy()
        """Start of the inverse kinematics: the arm after a reset (hand at the task's start)."""
        self.hand_offset = self.data.xpos[self.hand_id] - self.data.mocap_pos[0]
        """Hand minus mocap position after metaworld's reset (its 50 settling steps; the weld sags
        under gravity, ~5 mm): where ``set_state`` puts the mocap relative to the hand.  Every
        episode starts there, so a set start state replays its episode closely."""
        self.finger_q = (int(m.jnt_qposadr[m.joint("r_close").id]), int(m.jnt_qposadr[m.joint("l_close").id]))
        self.finger_range = (m.jnt_range[m.joint("r_close").id], m.jnt_range[m.joint("l_close").id])
        self.last_info: dict[str, Any] = {}
        """metaworld's ``info`` of the last step (its own ``success`` among it)."""

    @property
    def entities(self) -> tuple[str, ...]:
        return L.SCENE_ENTITIES[self.kind]

    # ------------------------------------------------------------------ episode
    def reset(self, seed: int) -> np.ndarray:
        """metaworld's reset with its layout drawn from ``seed``; returns the state (no distractor)."""
        self.env.np_random = np.random.default_rng(int(seed))
        self.env.reset()
        self._after_reset()
        mujoco.mj_forward(self.model, self.data)  # metaworld moves bodies after its last forward
        self.last_info = {}
        return self.read()

    def _after_reset(self) -> None:
        """Scene-specific fix-ups after metaworld's reset."""

    def step(self, action: np.ndarray) -> np.ndarray:
        _, _, _, _, info = self.env.step(np.asarray(action, dtype=np.float32))
        self.last_info = info
        return self.read()

    def close(self) -> None:
        self.env.close()

    # ------------------------------------------------------------------ reading
    def read(self) -> np.ndarray:
        """The 91-dim state of the simulator (unused slots zero)."""
        d = self.data
        s = np.zeros(L.STATE_DIM)
        s[L.HAND] = d.xpos[self.hand_id]
        gap = float(np.linalg.norm(d.body("rightclaw").xpos - d.body("leftclaw").xpos))
        s[L.GRIPPER] = min(max(gap / 0.1, 0.0), 1.0)
        s[L.GOAL] = self.goal()
        for entity, (position, quaternion) in self._read_entities().items():
            s[L.slot_slice(entity)] = np.concatenate([position, L.canonical_quat(quaternion)])
        return s

    def goal(self) -> np.ndarray:
        return np.array(self.env._target_pos, dtype=np.float64)

    def _body_pose(self, body: str) -> tuple[np.ndarray, np.ndarray]:
        b = self.data.body(body)
        return b.xpos.copy(), b.xquat.copy()

    def _read_entities(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        raise NotImplementedError

    # ------------------------------------------------------------------ writing
    def write(self, state: np.ndarray) -> None:
        """Put the simulator into ``state`` (module docstring: what is approximate)."""
        s = np.asarray(state, dtype=np.float64)
        m, d = self.model, self.data
        self._write_entities(s)
        self._write_goal(s)
        d.qvel[:] = 0.0
        d.qacc_warmstart[:] = 0.0
        if m.na:
            d.act[:] = 0.0
        self._write_fingers(float(s[L.GRIPPER]))
        self._write_hand(L.hand(s))
        mujoco.mj_forward(m, d)
        self.env._prev_obs = self.env._get_curr_obs_combined_no_goal()
        self.last_info = {}

    def _write_goal(self, s: np.ndarray) -> None:
        self.env._target_pos = L.goal(s).copy()

    def _write_fingers(self, opening: float) -> None:
        """Finger joints for an opening: both close symmetrically until the left one reaches its
        limit (``l_close = -0.03``), then the right one alone up to its limit (0.04); a gap
        narrower still (the actuators squeeze past the soft limits) is split evenly."""
        travel = max(0.0, S.FINGER_GAP_OPEN - 0.1 * min(max(opening, 0.0), 1.0))  # q_r - q_l
        (r_lo, r_hi), (l_lo, l_hi) = self.finger_range
        left_limit, right_limit = -l_lo, r_hi
        if travel <= 2 * left_limit:
            left = right = 0.5 * travel
        elif travel <= left_limit + right_limit:
            left, right = left_limit, travel - left_limit
        else:
            excess = 0.5 * (travel - left_limit - right_limit)
            left, right = left_limit + excess, right_limit + excess
        r, l = self.finger_q
        self.data.qpos[r] = right
        self.data.qpos[l] = -left

    def _write_hand(self, target: np.ndarray) -> None:
        """Arm joints by inverse kinematics from the home posture; mocap at the post-reset offset.

        Task-priority damped least squares: the hand's position first, metaworld's gripper
        orientation in what freedom is left (the real hand tilts a little under load anyway); a
        joint at a limit that a step would push past it is held there for that step.
        """
        m, d = self.model, self.data
        q = self.arm_home.copy()
        lo, hi = self.arm_range[:, 0] - IK_LIMIT_MARGIN, self.arm_range[:, 1] + IK_LIMIT_MARGIN
        jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        rot_err = np.zeros(3)
        eye = np.eye(len(q))
        for _ in range(IK_ITERATIONS):
            d.qpos[self.arm_q] = q
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            pos_err = target - d.xpos[self.hand_id]
            if float(pos_err @ pos_err) < IK_TOLERANCE**2:
                break
            mujoco.mju_subQuat(rot_err, HAND_QUAT, d.xquat[self.hand_id])  # in the hand's frame
            rot_err_world = L.rotate(d.xquat[self.hand_id], rot_err)
            mujoco.mj_jacBody(m, d, jacp, jacr, self.hand_id)
            jp_full, jr_full = jacp[:, self.arm_v], jacr[:, self.arm_v]
            free = np.ones(len(q), dtype=bool)
            for _pass in range(len(q)):  # joints at a limit that the step would push past are held
                jp, jr = jp_full * free, jr_full * free
                jp_pinv = jp.T @ np.linalg.inv(jp @ jp.T + IK_DAMPING * np.eye(3))
                step = jp_pinv @ pos_err
                null = (eye - jp_pinv @ jp) * free
                jr_null = jr @ null
                step = step + null @ (jr_null.T @ np.linalg.solve(jr_null @ jr_null.T + IK_DAMPING * np.eye(3),
                                                                  rot_err_world - jr @ step))
                blocked = free & (((q <= lo) & (step < 0)) | ((q >= hi) & (step > 0)))
                if not blocked.any():
                    break
                free &= ~blocked
            step *= min(1.0, IK_MAX_STEP / max(float(np.abs(step).max()), 1e-12))
            q = np.clip(q + step, lo, hi)
        d.qpos[self.arm_q] = q
        d.mocap_pos[0] = target - self.hand_offset
        d.mocap_quat[0] = np.array([1.0, 0.0, 1.0, 0.0])

    def _write_entities(self, s: np.ndarray) -> None:
        raise NotImplementedError

    def _set_free(self, body: str, position: np.ndarray, quaternion: np.ndarray) -> None:
        qa, _ = _joint_address(self.model, body)
        self.data.qpos[qa:qa + 3] = position
        self.data.qpos[qa + 3:qa + 7] = L.canonical_quat(quaternion)

    def _set_joint(self, body: str, value: float) -> None:
        """Set the joint of ``body``; a limited joint is kept within :data:`JOINT_LIMIT_MARGIN` of
        its range (MuJoCo's limits are soft: real states pass them slightly)."""
        qa, _ = _joint_address(self.model, body)
        j = int(self.model.body_jntadr[self.model.body(body).id])
        value = float(value)
        if self.model.jnt_limited[j]:
            lo, hi = self.model.jnt_range[j]
            margin = JOINT_LIMIT_MARGIN * (hi - lo)
            value = min(max(value, lo - margin), hi + margin)
        self.data.qpos[qa] = value


# ---------------------------------------------------------------------------- scene kinds
class PuckScene(Scene):
    """reach, push, pick-place (and the ``-wall`` variants): the puck ``obj`` (and the wall)."""

    kind = "puck"

    def _read_entities(self):
        return {"task_object": self._body_pose("obj")}

    def _write_entities(self, s):
        self._set_free("obj", L.pos(s, "task_object"), L.quat(s, "task_object"))


class _WithWall:
    """Mixin for the ``-wall`` scenes: the wall body is read into and written from its slot."""

    def _read_entities(self):
        return {**super()._read_entities(), "wall": self._body_pose("wall")}

    def _write_entities(self, s):
        super()._write_entities(s)
        self.model.body("wall").pos = L.pos(s, "wall")


class PuckWallScene(_WithWall, PuckScene):
    kind = "puck_wall"


BUTTON_TIP = np.array([0.0, -0.193, 0.0])
"""metaworld's button observation: the ``button`` body plus this (the tip)."""
BUTTON_HOLE = np.array([0.0, -0.1, 0.0])
"""The ``hole`` site (button-press's target) relative to the ``box`` body."""


class ButtonScene(Scene):
    """button-press: the button (slides along -y into its box); the box sits at goal - hole."""

    kind = "button"

    def _read_entities(self):
        position, quaternion = self._body_pose("button")
        return {"button": (position + BUTTON_TIP, quaternion)}

    def _write_entities(self, s):
        box = L.goal(s) - BUTTON_HOLE
        self.model.body("box").pos = box
        button_y = L.pos(s, "button")[1] - BUTTON_TIP[1]
        self._set_joint("button", box[1] - button_y)  # axis (0, -1, 0)


class ButtonWallScene(_WithWall, ButtonScene):
    kind = "button_wall"


def _handle_geom(model: mujoco.MjModel) -> int:
    """The door-handle geom of ``door_link`` (the mesh ``door_handle``; named ``handle`` in door-open)."""
    door = model.body("door_link").id
    for g in range(model.ngeom):
        if model.geom_bodyid[g] == door and model.geom_dataid[g] >= 0 \
                and model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH \
                and model.mesh(model.geom_dataid[g]).name == "door_handle":
            return g
    raise RuntimeError("No door handle in this model.")


class _DoorGeometry:
    """Shared door arithmetic: safe body ``door`` → leaf ``door_link`` (hinge) → handle geom."""

    def _door_init(self) -> None:
        m = self.model  # type: ignore[attr-defined]
        self.handle_geom = _handle_geom(m)
        self.handle_local = m.geom_pos[self.handle_geom].copy()
        self.leaf_local = m.body_pos[m.body("door_link").id].copy()
        self.safe_to_leaf = self.leaf_local + m.body_pos[int(m.body("door_link").parentid[0])].copy()

    def _handle_pose(self) -> tuple[np.ndarray, np.ndarray]:
        d = self.data  # type: ignore[attr-defined]
        return d.geom_xpos[self.handle_geom].copy(), d.body("door_link").xquat.copy()

    def _safe_from_handle(self, handle: np.ndarray, leaf_quat: np.ndarray) -> np.ndarray:
        """Position of the safe body ``door`` implied by the handle and the leaf's rotation."""
        hinge = handle - L.rotate(leaf_quat, self.handle_local)
        return hinge - self.safe_to_leaf


class DoorScene(Scene, _DoorGeometry):
    """door-open / door-close: the handle on the hinged leaf of ``doorlockB``."""

    kind = "door"

    def __init__(self, env_name: str) -> None:
        super().__init__(env_name)
        self._door_init()

    def _read_entities(self):
        return {"handle": self._handle_pose()}

    def _write_entities(self, s):
        leaf = L.quat(s, "handle")
        self.model.body("door").pos = self._safe_from_handle(L.pos(s, "handle"), leaf)
        self._set_joint("door_link", L.angle_about(leaf, S.DOOR_AXIS))


class DoorLockScene(Scene, _DoorGeometry):
    """door-lock / door-unlock: the lock on the (fixed) leaf of ``doorlockA`` and its handle."""

    kind = "door_lock"

    def __init__(self, env_name: str) -> None:
        super().__init__(env_name)
        self._door_init()
        m = self.model
        self.lock_local = m.body_pos[m.body("lock_link").id].copy()

    def _read_entities(self):
        return {"lock": self._body_pose("lock_link"), "handle": self._handle_pose()}

    def _write_entities(self, s):
        lock = L.pos(s, "lock")
        self.model.body("door").pos = lock - self.lock_local - self.safe_to_leaf
        self._set_joint("lock_link", L.angle_about(L.quat(s, "lock"), S.LOCK_AXIS))


class LockedDoorScene(DoorLockScene):
    """locked-door-open: :class:`LockedDoorEnv` (lock on a hinged leaf, latch); the goal is
    door-open's target for this safe."""

    kind = "locked_door"

    def goal(self) -> np.ndarray:
        return self.model.body("door").pos.copy() + DOOR_OPEN_GOAL_OFFSET

    def _write_entities(self, s):
        leaf = L.quat(s, "handle")
        self.model.body("door").pos = self._safe_from_handle(L.pos(s, "handle"), leaf)
        self._set_joint("door_link", L.angle_about(leaf, S.DOOR_AXIS))
        relative = L.quat_mul(L.quat_conj(leaf), L.quat(s, "lock"))
        self._set_joint("lock_link", L.angle_about(relative, S.LOCK_AXIS))

    def _write_goal(self, s):
        # metaworld's own target (door-unlock's) for the lock of the closed door
        safe = self.model.body("door").pos
        self.env._target_pos = safe + self.safe_to_leaf + self.lock_local + UNLOCK_GOAL_OFFSET


class WindowScene(Scene):
    """window-open / window-close: the sash ``windowb_a`` slides along +x in its frame ``window``;
    the frame sits at goal minus ``goal_offset`` (open: target 0.2 to the right; close: the frame)."""

    kind = "window"

    def __init__(self, env_name: str, goal_offset: np.ndarray) -> None:
        super().__init__(env_name)
        self.goal_offset = np.asarray(goal_offset, dtype=np.float64)

    def _read_entities(self):
        return {"window": self._body_pose("windowb_a")}

    def _write_entities(self, s):
        frame = L.goal(s) - self.goal_offset
        self.model.body("window").pos = frame
        self._set_joint("windowb_a", L.pos(s, "window")[0] - frame[0])


class FaucetScene(Scene):
    """faucet-open / faucet-close: the knob ``faucet_link2`` turns about z above ``faucetBase``."""

    kind = "faucet"

    def __init__(self, env_name: str) -> None:
        super().__init__(env_name)
        m = self.model
        knob = m.body("faucet_link2").id
        offset = np.zeros(3)
        b = knob
        while m.body(b).name != "faucetBase":
            offset += m.body_pos[b]
            b = int(m.body_parentid[b])
        self.base_to_knob = offset

    def _read_entities(self):
        return {"faucet": self._body_pose("faucet_link2")}

    def _write_entities(self, s):
        self.model.body("faucetBase").pos = L.pos(s, "faucet") - self.base_to_knob
        self._set_joint("faucet_link2", L.angle_about(L.quat(s, "faucet"), S.DOOR_AXIS))


COFFEE_BUTTON_START = np.array([0.0, -0.22, 0.3])
"""The ``buttonStart`` site relative to the ``cmbutton`` body (which slides along +y)."""


class CoffeeScene(Scene):
    """coffee-push / coffee-button / make-coffee: mug ``obj``, machine ``coffee_machine``, button
    ``cmbutton`` (slides along +y into the machine)."""

    kind = "coffee"

    def __init__(self, env_name: str, make_coffee: bool = False) -> None:
        super().__init__(env_name)
        self.make_coffee = make_coffee

    def goal(self) -> np.ndarray:
        if self.make_coffee:  # the final stage's target: the machine's button pressed
            return self.model.body("coffee_machine").pos.copy() + S.COFFEE_BUTTON_TARGET_OFFSET
        return super().goal()

    def _read_entities(self):
        position, quaternion = self._body_pose("cmbutton")
        return {"task_object": self._body_pose("obj"), "coffee_machine": self._body_pose("coffee_machine"),
                "coffee_button": (position + COFFEE_BUTTON_START, quaternion)}

    def _write_entities(self, s):
        machine = L.pos(s, "coffee_machine")
        self.model.body("coffee_machine").pos = machine
        self._set_free("obj", L.pos(s, "task_object"), L.quat(s, "task_object"))
        self._set_joint("cmbutton", L.pos(s, "coffee_button")[1] - (machine[1] + COFFEE_BUTTON_START[1]))

    def _write_goal(self, s):
        if self.make_coffee:  # metaworld's coffee-push target: the spot under the spout
            self.env._target_pos = L.pos(s, "coffee_machine") + S.MUG_GOAL_OFFSET
        else:
            super()._write_goal(s)


class HammerScene(Scene):
    """hammer: the free ``hammerbody`` (observed through its child ``hammer``) and the nail, which
    slides along +y in a block fixed at (0.24, 0.85, 0)."""

    kind = "hammer"

    def _read_entities(self):
        return {"hammer": self._body_pose("hammer"), "nail": self._body_pose("nail_link")}

    def _write_entities(self, s):
        self._set_free("hammerbody", L.pos(s, "hammer"), L.quat(s, "hammer"))
        self._set_joint("nail_link", S.nail_depth(s))


class SoccerScene(Scene):
    """soccer: the free ``soccer_ball``; the goal net ``goal_whole`` stands at the target.

    The ball collides as a uniform sphere (``objGeom``), so its orientation changes nothing in the
    dynamics, and while it rolls it spins too fast to follow from one state to the next without
    its angular velocity.  Its slot therefore holds the identity quaternion (the orientation is
    not recorded); ``write`` puts the ball upright.
    """

    kind = "soccer"

    def _read_entities(self):
        position, _ = self._body_pose("soccer_ball")
        return {"soccer_ball": (position, L.IDENTITY_QUAT.copy())}

    def _write_entities(self, s):
        self._set_free("soccer_ball", L.pos(s, "soccer_ball"), L.IDENTITY_QUAT)
        self.model.body("goal_whole").pos = L.goal(s)


def make_scene(env_name: str, scene: str, family: str = "") -> Scene:
    """The :class:`Scene` of kind ``scene`` on metaworld's ``env_name`` for a task of ``family``."""
    if scene == "puck":
        return PuckScene(env_name)
    if scene == "puck_wall":
        return PuckWallScene(env_name)
    if scene == "button":
        return ButtonScene(env_name)
    if scene == "button_wall":
        return ButtonWallScene(env_name)
    if scene == "door":
        return DoorScene(env_name)
    if scene == "door_lock":
        return DoorLockScene(env_name)
    if scene == "locked_door":
        return LockedDoorScene(env_name)
    if scene == "window":
        return WindowScene(env_name, np.array([0.2, 0.0, 0.0]) if env_name == "window-open-v3" else np.zeros(3))
    if scene == "faucet":
        return FaucetScene(env_name)
    if scene == "coffee":
        return CoffeeScene(env_name, make_coffee=family == "make_coffee")
    if scene == "hammer":
        return HammerScene(env_name)
    if scene == "soccer":
        return SoccerScene(env_name)
    raise ValueError(f"Unknown MetaWorld scene kind {scene!r}; valid: {', '.join(L.SCENE_ENTITIES)}.")


# ---------------------------------------------------------------------------- distractors
HAMMER_REST_QUAT = np.array([0.99956, 0.00016, -0.02975, 0.0])
"""The hammer's orientation lying on the table after metaworld's reset (measured)."""


def _u(rng: np.random.Generator, lo: tuple[float, ...], hi: tuple[float, ...]) -> np.ndarray:
    return rng.uniform(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))


def sample_distractor(entity: str, rng: np.random.Generator) -> np.ndarray:
    """A plausible pose (7 numbers) of ``entity`` at rest, drawn from metaworld's own reset ranges
    for the scene that holds it (the entity is not simulated: the pose stays fixed)."""
    identity = L.IDENTITY_QUAT
    if entity == "task_object":
        position, q = _u(rng, (-0.1, 0.6, 0.02), (0.1, 0.7, 0.02)), identity
    elif entity == "button":
        position, q = _u(rng, (-0.1, 0.85, 0.115), (0.1, 0.9, 0.115)) + BUTTON_TIP, identity
    elif entity == "lock":
        safe = _u(rng, (-0.1, 0.8, 0.15), (0.1, 0.85, 0.15))
        locked = bool(rng.integers(2))
        position = safe + np.array([0.0, -0.118, 0.061])
        q = L.axis_angle_quat(S.LOCK_AXIS, 1.5708 if locked else 0.0)
    elif entity == "handle":
        position, q = _u(rng, (0.0, 0.85, 0.15), (0.1, 0.95, 0.15)) + np.array([0.1907, -0.2071, 0.0]), identity
    elif entity == "window":
        position, q = _u(rng, (-0.1, 0.7, 0.16), (0.1, 0.9, 0.16)), identity
    elif entity == "faucet":
        position, q = _u(rng, (-0.05, 0.8, 0.124), (0.05, 0.85, 0.124)), identity
    elif entity == "wall":
        position, q = np.array([0.1, 0.75, 0.06]), identity
    elif entity == "coffee_machine":
        position, q = _u(rng, (-0.1, 0.8, 0.0), (0.1, 0.9, 0.0)), identity
    elif entity == "coffee_button":
        position, q = _u(rng, (-0.1, 0.8, 0.0), (0.1, 0.9, 0.0)) + COFFEE_BUTTON_START, identity
    elif entity == "hammer":
        position, q = _u(rng, (-0.1, 0.4, 0.0), (0.1, 0.5, 0.0)), HAMMER_REST_QUAT
    elif entity == "nail":
        position, q = np.array([0.24, S.NAIL_ZERO_Y, 0.11]), identity
    elif entity == "soccer_ball":
        position, q = _u(rng, (-0.1, 0.6, 0.03), (0.1, 0.7, 0.03)), identity
    else:
        raise ValueError(f"Unknown MetaWorld entity {entity!r}; valid: {', '.join(L.ENTITIES)}.")
    return np.concatenate([position, L.canonical_quat(q)])
