"""The HalfCheetah-v0 Gymnasium environment."""

from __future__ import annotations

from typing import Any

import numpy as np

from imaginebench.domains.base import Task
from imaginebench.domains.env_base import InstructionEnv
from imaginebench.domains.halfcheetah import physics as P
from imaginebench.domains.halfcheetah import success as S
from imaginebench.domains.halfcheetah.domain import HalfCheetahDomain, legality_errors
from imaginebench.domains.halfcheetah.expert import HalfCheetahExpert


class HalfCheetahEnv(InstructionEnv):
    """## Description

    gymnasium's MuJoCo ``HalfCheetah-v5`` (a planar two-legged runner) following language
    instructions: run forward or backward, faster, one way then the other, or jump forward,
    backward or in place.

    ## Observation Space

    ``Box(-inf, inf, (18,), float32)``: the forward displacement since the last step, then
    gymnasium's 17-dim observation (``qpos`` without x: root height, pitch, six joint angles;
    ``qvel``: root vx, vz, pitch rate, six joint rates).  See :mod:`.physics`.

    ## Action Space

    ``Box(-1, 1, (6,), float32)``: torques of the six leg joints, as gymnasium's env.

    ## Rewards

    Per task (:mod:`.success`): the velocity in the asked direction for the running tasks (in
    the current half's direction for the sequential ones); for the jump tasks 10× the torso's
    rise above its standing height while airborne and upright plus the velocity in the asked direction capped at 1 m/s (in place: minus
    the speed); minus gymnasium's control cost 0.1·|a|² in all.

    ## Success/Termination

    Pure functions of the state history (:mod:`.success`): runs average at least 1.4 m/s
    (faster: 3 m/s) over at least 100 steps; sequential tasks make 3 m in the first direction in
    the first 100 steps and 3 m in the other in the last 100, checked at step 200; jumps need two
    upright flights that lift the torso 0.3 m, plus 1 m of net travel in the asked direction (in
    place: never 0.5 m from the start).  The episode terminates on success and truncates after
    200 steps.

    ## Starting State

    gymnasium's reset: joint positions uniform ±0.1 around the rest pose, velocities N(0, 0.1²).

    ## Registered ids

    ``ImagineBench/HalfCheetah-v0`` with ``level`` in ``train``, ``rephrase``, ``easy``, ``hard``.

    ## Version history

    * v0: initial version.
    """

    domain_cls = HalfCheetahDomain
    domain: HalfCheetahDomain

    def __init__(self, level: str = "train", render_mode: str | None = None) -> None:
        super().__init__(level=level, render_mode=render_mode)
        self.sim = P.Simulator()
        self.expert = HalfCheetahExpert()
        self._renderer: Any = None
        self._render_data: Any = None

    def _sample_start(self, task: Task) -> np.ndarray:
        return self.sim.reset(int(self.np_random.integers(2**31)))

    def _simulate(self, action: Any) -> np.ndarray:
        return self.sim.step(np.asarray(action, dtype=np.float64))

    def set_state(self, state: np.ndarray) -> None:
        """Put the simulator into an 18-dim state (``ValueError`` when it is not finite or illegal).

        Exact: the state holds the whole ``qpos`` but x, and ``qvel``; x does not enter the
        dynamics.  ``dx`` is kept as the state's history.  The progress record is left as it is.
        """
        s = np.asarray(state, dtype=np.float64).reshape(-1)
        errors = legality_errors(s)
        if errors:
            raise ValueError(f"Cannot set an illegal HalfCheetah-v0 state: {'; '.join(errors)}.")
        self.sim.write(s)
        self.state = self.sim.read()

    def _expert(self) -> np.ndarray:
        assert self.task is not None
        return self.expert.act(self.task, self.state, self.progress)

    # ------------------------------------------------------------------ rendering
    @staticmethod
    def track_x(states: np.ndarray) -> np.ndarray:
        """The cheetah's distance from its start at each state of an episode (the sum of the
        ``dx`` so far): the state vector itself holds no x, drawings need it to place the body."""
        s = np.asarray(states, dtype=np.float64)
        return np.concatenate([[0.0], np.cumsum(s[1:, P.DX])]) if len(s) else np.zeros(0)

    def render_state(self, state: np.ndarray, x: float = 0.0, width: int = 256, height: int = 192) -> np.ndarray:
        """An RGB image (``height × width × 3``, uint8) of an 18-dim state (real or imagined) with
        the root at ``x``, drawn by gymnasium's MuJoCo renderer on a private copy of the model's
        data, so the running episode is untouched.  The camera looks at the torso from the side;
        the chequered floor shows the travel.

        Needs an OpenGL backend for MuJoCo: ``MUJOCO_GL=egl`` (Debian packages ``libegl1``,
        ``libgl1-mesa-dri``) or ``MUJOCO_GL=osmesa`` (``libosmesa6``).
        """
        import mujoco

        s = np.asarray(state, dtype=np.float64).reshape(-1)
        if s.shape != (P.STATE_DIM,) or not np.all(np.isfinite(s)) or not np.isfinite(x):
            raise ValueError(f"render_state needs {P.STATE_DIM} finite numbers and a finite x, got shape {s.shape}.")
        model = self.sim.env.model
        if self._renderer is None or (self._renderer.width, self._renderer.height) != (width, height):
            self._close_renderer()
            from gymnasium.envs.mujoco.mujoco_rendering import MujocoRenderer

            self._render_data = mujoco.MjData(model)
            self._renderer = MujocoRenderer(model, self._render_data, width=width, height=height,
                                            default_cam_config={"distance": 4.0, "azimuth": 90.0, "elevation": -15.0})
        data = self._render_data
        data.qpos[:] = np.concatenate([[float(x)], s[P.QPOS_SLICE]])
        data.qvel[:] = s[P.QVEL_SLICE]
        mujoco.mj_forward(model, data)
        try:
            viewer = self._renderer._get_viewer("rgb_array")
        except Exception as exc:  # mujoco raises FatalError or a GL library's own error
            self._close_renderer()
            raise RuntimeError(
                f"HalfCheetah-v0 cannot render: MuJoCo found no OpenGL context ({type(exc).__name__}: {exc}). "
                "Set MUJOCO_GL=egl (Debian packages libegl1, libgl1-mesa-dri) or MUJOCO_GL=osmesa "
                "(libosmesa6) before starting Python."
            ) from None
        viewer.cam.lookat[:] = [float(x), 0.0, 0.4]
        return np.asarray(self._renderer.render("rgb_array"), dtype=np.uint8).copy()

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        x = float(self.progress[S.P_X]) if len(self.progress) else 0.0
        return self.render_state(self.state, x=x)

    def _close_renderer(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
        self._renderer = self._render_data = None

    def close(self) -> None:
        self._close_renderer()
        self.sim.close()
        super().close()
