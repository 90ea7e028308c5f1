"""The LIBERO scene: LIBERO's own BDDL machinery, robosuite's Panda and MuJoCo physics.

The scene is LIBERO-Object's floor scene (``Libero_Floor_Manipulation``) with exactly four
bodies — alphabet soup, cream cheese, salad dressing and the basket — written as a BDDL problem
(:data:`BDDL`) and built by ``libero.libero.envs.env_wrapper.ControlEnv`` (the class under
LIBERO's ``OffScreenRenderEnv``) with the OSC_POSE controller at 20 Hz, no cameras and no
renderer.  No LIBERO-Object task has exactly these four bodies (each of its ten has seven), so
the problem reuses the regions one of them gives these bodies.

The simulator is built once (~5–10 s) and reused: a reset writes a new layout into the same
MuJoCo model (robosuite's ``hard_reset=False`` path is not even needed: positions are written
directly) and lets it settle.  Layouts are drawn by :meth:`Scene.reset` from ``START_REGIONS``
with the caller's generator (LIBERO's own samplers draw from numpy's global generator).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Mapping

import mujoco
import numpy as np

from imaginebench.domains.libero import layout as L

BDDL = """(define (problem LIBERO_Floor_Manipulation)
  (:domain robosuite)
  (:language Pick the alphabet soup and place it in the basket)
    (:regions
      (bin_region (:target floor) (:ranges ((-0.01 0.25 0.01 0.27))))
      (soup_region (:target floor) (:ranges ((-0.145 -0.265 -0.095 -0.215))))
      (cheese_region (:target floor) (:ranges ((-0.175 0.035 -0.125 0.085))))
      (dressing_region (:target floor) (:ranges ((0.025 -0.125 0.075 -0.075))))
      (contain_region (:target basket_1))
    )
  (:fixtures
    floor - floor
  )
  (:objects
    alphabet_soup_1 - alphabet_soup
    cream_cheese_1 - cream_cheese
    salad_dressing_1 - salad_dressing
    basket_1 - basket
  )
  (:obj_of_interest
    alphabet_soup_1
    basket_1
  )
  (:init
    (On alphabet_soup_1 floor_soup_region)
    (On cream_cheese_1 floor_cheese_region)
    (On salad_dressing_1 floor_dressing_region)
    (On basket_1 floor_bin_region)
  )
  (:goal
    (And (In alphabet_soup_1 basket_1_contain_region))
  )
)
"""
"""The scene as a LIBERO BDDL problem (regions: LIBERO-Object's for these four bodies)."""

CONTROL_FREQ = 20
"""Actions per simulated second (LIBERO's default)."""
SETTLE_STEPS = 10
"""Zero actions run after a reset writes a layout (0.5 s), so objects come to rest."""
RESET_JOINTS = (0.0, -0.16103739, 0.0, -2.44459747, 0.0, 2.2267522, 0.78539816)
"""robosuite's ``OnTheGroundPanda`` initial joint angles (LIBERO's reset pose)."""
RESET_FINGERS = (0.020833, -0.020833)
"""robosuite's Panda gripper initial finger joints."""
OBS_KEYS = ("robot0_joint_pos", "robot0_eef_pos", "robot0_eef_quat", "robot0_gripper_qpos",
            *(f"{e}_1_{k}" for e in L.ENTITIES for k in ("pos", "quat")))
"""LIBERO's observation keys that make up the 44-dim state, in order."""


def _quiet_robosuite() -> None:
    """robosuite logs three warnings about a missing private macro file at import; silence them."""
    import logging

    logging.getLogger("robosuite_logs").setLevel(logging.ERROR)


def import_libero() -> Any:
    """``libero.libero.envs.env_wrapper`` or an ``ImportError`` naming the extra to install."""
    try:
        _quiet_robosuite()
        import robosuite  # noqa: F401
        from libero.libero.envs import env_wrapper
    except ImportError as exc:
        raise ImportError(
            f"LIBERO-v0 needs the libero extra ({exc}). "
            "Install it with: pip install 'imaginebench[libero]'"
        ) from None
    return env_wrapper


class Scene:
    """One LIBERO simulator for the four-body scene, reused across resets.

    ``read()`` returns the 44-dim state (LIBERO's observation keys, :data:`OBS_KEYS`);
    ``step(action)`` applies a 7-dim OSC_POSE action; ``write(state)`` puts a state vector into
    the simulator.
    """

    def __init__(self) -> None:
        env_wrapper = import_libero()
        with tempfile.TemporaryDirectory(prefix="imaginebench-libero-") as folder:
            path = os.path.join(folder, "libero_v0_scene.bddl")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(BDDL)
            self.control = env_wrapper.ControlEnv(
                bddl_file_name=path, use_camera_obs=False, has_renderer=False,
                has_offscreen_renderer=False, hard_reset=False, ignore_done=True, horizon=10**9,
                control_freq=CONTROL_FREQ, camera_names=[],
            )
            self.control.reset()  # builds the model; later resets write layouts directly
        self.env = self.control.env
        self.sim = self.env.sim
        self.robot = self.env.robots[0]
        model = self.sim.model
        self._arm_q = np.array(self.robot._ref_joint_pos_indexes)
        self._arm_v = np.array(self.robot._ref_joint_vel_indexes)
        self._finger_q = np.array(self.robot._ref_gripper_joint_pos_indexes)
        self._free_q = {e: model.get_joint_qpos_addr(f"{e}_1_joint0")[0] for e in L.ENTITIES}
        self._data = self.sim.data._data  # the raw MjData: reading it directly skips robosuite's observables
        self._eef_site = self.robot.eef_site_id
        self._eef_body = model.body_name2id(self.robot.robot_model.eef_name)
        self._bodies = np.array([self.env.obj_body_id[f"{e}_1"] for e in L.ENTITIES])
        self._renderer: Any = None
        self._render_data: Any = None

    # ------------------------------------------------------------------ state
    def read(self) -> np.ndarray:
        """The 44-dim state: exactly what LIBERO's observation keys :data:`OBS_KEYS` hold after a
        kinematics update (joint and finger ``qpos``, the ``grip_site`` position, the hand body's
        and the object bodies' poses, quaternions as (x, y, z, w)), read from the simulator."""
        d = self._data
        quats = d.xquat[self._bodies][:, [1, 2, 3, 0]]
        eef_quat = d.xquat[self._eef_body][[1, 2, 3, 0]]
        return np.concatenate([
            d.qpos[self._arm_q], d.site_xpos[self._eef_site], eef_quat, d.qpos[self._finger_q],
            np.concatenate([d.xpos[self._bodies], quats], axis=1).reshape(-1),
        ]).astype(np.float64)

    def observations(self) -> np.ndarray:
        """The 44-dim state assembled from LIBERO's own observations (force-updated); equal to
        :meth:`read` (tested), which is cheaper."""
        obs = self.env._get_observations(force_update=True)
        return np.concatenate([np.asarray(obs[k], dtype=np.float64).reshape(-1) for k in OBS_KEYS])

    def _refresh(self) -> np.ndarray:
        self.sim.forward()
        return self.read()

    def _write_qpos(self, joints: np.ndarray, fingers: np.ndarray,
                    poses: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> None:
        """Set joint angles, fingers and body poses (quaternions x, y, z, w); zero velocities;
        bring the controller and the gripper command in line with the new configuration.

        The simulator's data is reset first (time, solver warm start, applied forces): every
        ``qpos`` entry is written below, so nothing of the previous episode survives and the same
        reset seed and actions give the same episode bit for bit (gymnasium's determinism check)."""
        mujoco.mj_resetData(self.sim.model._model, self._data)
        data = self.sim.data
        data.qpos[self._arm_q] = joints
        data.qpos[self._finger_q] = fingers
        for entity, (p, q) in poses.items():
            a = self._free_q[entity]
            data.qpos[a:a + 3] = p
            wxyz = L.xyzw_to_wxyz(q)
            data.qpos[a + 3:a + 7] = wxyz / np.linalg.norm(wxyz)
        data.qvel[:] = 0.0
        if hasattr(data, "qacc_warmstart"):
            data.qacc_warmstart[:] = 0.0
        self.sim.forward()
        controller = self.robot.controller
        controller.update(force=True)
        controller.reset_goal()
        # robosuite's gripper command moves 0.01 per physics step toward the asked side; start it
        # where the fingers are (the command that holds them there), so the next action moves on
        # from the written configuration.
        opening = float(np.clip((fingers[0] - fingers[1]) / (2 * L.FINGER_OPEN), 0.0, 1.0))
        command = 2.0 * opening - 1.0
        self.robot.gripper.current_action = np.array([command, -command])
        self.sim.data.ctrl[:] = 0.0

    def write(self, state: np.ndarray) -> np.ndarray:
        """Put the simulator into ``state`` and return the state read back.

        Exact for every configuration coordinate (``qpos``: 7 arm joints, 2 fingers, 4 free-body
        poses).  Not restored: velocities (set to zero), the gripper command's history (started
        where the fingers are) and robosuite's observation history.  The end-effector pose of
        ``state`` is not written: it follows from the joint angles (read back from the model).
        """
        s = np.asarray(state, dtype=np.float64)
        poses = {e: (L.pos(s, e).copy(), L.quat(s, e).copy()) for e in L.ENTITIES}
        self._write_qpos(s[L.JOINTS], s[L.GRIPPER], poses)
        return self._refresh()

    def place(self, positions: Mapping[str, np.ndarray], quats: Mapping[str, np.ndarray] | None = None,
              settle: int = SETTLE_STEPS) -> np.ndarray:
        """Reset the arm to LIBERO's reset pose, put the bodies at ``positions`` (in their resting
        orientation unless ``quats`` says otherwise), let them settle and return the state."""
        quats = quats or {}
        poses = {e: (np.asarray(positions[e], dtype=np.float64),
                     np.asarray(quats.get(e, L.REST_QUAT[e]), dtype=np.float64)) for e in L.ENTITIES}
        self._write_qpos(np.array(RESET_JOINTS), np.array(RESET_FINGERS), poses)
        self._refresh()
        return self.settle(settle)

    def settle(self, steps: int = SETTLE_STEPS) -> np.ndarray:
        """Run ``steps`` zero actions (the arm holds its pose, the gripper command stays)."""
        state = self.read()
        for _ in range(steps):
            state = self.step(np.zeros(L.ACTION_DIM))
        return state

    @staticmethod
    def sample_layout(rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Each body's position drawn uniformly in its LIBERO-Object start region, at its resting
        height."""
        positions = {}
        for entity, ((x0, x1), (y0, y1)) in L.START_REGIONS.items():
            positions[entity] = np.array([rng.uniform(x0, x1), rng.uniform(y0, y1), L.REST_Z[entity]])
        return positions

    def reset(self, rng: np.random.Generator) -> np.ndarray:
        """A fresh layout (:meth:`sample_layout`), the arm in LIBERO's reset pose, settled."""
        return self.place(self.sample_layout(rng))

    def step(self, action: np.ndarray) -> np.ndarray:
        """One 20 Hz control step of LIBERO's env with a 7-dim OSC_POSE action.

        The state is read afresh after the step (kinematics recomputed, every observable
        updated): the observations robosuite returns from ``step`` were sampled before the last
        physics sub-step, so their end-effector pose lags the joint angles by up to 0.5 mm, and a
        state written back with :meth:`write` would not reproduce them.  Reading the simulator
        directly (:meth:`read`) instead of recomputing every observable keeps the step cheap.
        """
        self.env.step(np.asarray(action, dtype=np.float64))
        return self._refresh()

    # ------------------------------------------------------------------ rendering
    def render(self, state: np.ndarray, camera: str = "agentview", width: int = 256,
               height: int = 256) -> np.ndarray:
        """An RGB image (``height × width × 3``, uint8, upright) of ``state``, drawn on a copy of
        the model's data so the running episode is untouched.  Needs an OpenGL backend
        (``MUJOCO_GL=egl`` or ``osmesa``)."""
        import mujoco

        model = self.sim.model._model
        if self._renderer is None or self._renderer.width != width or self._renderer.height != height:
            if self._renderer is not None:
                self._renderer.close()
            try:
                self._renderer = mujoco.Renderer(model, height=height, width=width)
            except Exception as exc:  # mujoco raises FatalError or a GL library's own error
                self._renderer = None
                raise RuntimeError(
                    f"LIBERO-v0 cannot render: MuJoCo found no OpenGL context ({type(exc).__name__}: {exc}). "
                    "Set MUJOCO_GL=egl (Debian packages libegl1, libgl1-mesa-dri) or MUJOCO_GL=osmesa "
                    "(libosmesa6) before starting Python."
                ) from None
            self._render_data = mujoco.MjData(model)
        data = self._render_data
        data.qpos[:] = self.sim.data.qpos
        s = np.asarray(state, dtype=np.float64)
        data.qpos[self._arm_q] = s[L.JOINTS]
        data.qpos[self._finger_q] = s[L.GRIPPER]
        for entity in L.ENTITIES:
            a = self._free_q[entity]
            data.qpos[a:a + 3] = L.pos(s, entity)
            wxyz = L.xyzw_to_wxyz(L.quat(s, entity))
            data.qpos[a + 3:a + 7] = wxyz / np.linalg.norm(wxyz)
        mujoco.mj_forward(model, data)
        self._renderer.update_scene(data, camera=camera)
        return np.asarray(self._renderer.render(), dtype=np.uint8).copy()

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        control = getattr(self, "control", None)
        if control is not None and hasattr(control, "env"):
            control.close()
