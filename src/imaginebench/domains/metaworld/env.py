"""The Meta-World environment (``ImagineBench/MetaWorld-v0``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from imaginebench.domains.base import Task
from imaginebench.domains.env_base import InstructionEnv
from imaginebench.domains.metaworld import layout as L
from imaginebench.domains.metaworld.domain import EMPTY_TOLERANCE, MetaWorldDomain, legality_errors
from imaginebench.domains.metaworld.expert import MetaWorldExpert
from imaginebench.domains.metaworld.physics import Scene, make_scene, sample_distractor
from imaginebench.domains.metaworld.tasks import spec_of


DRAWING_LOOKAT = (0.0, 0.65, 0.1)
"""Default camera of :meth:`MetaWorldEnv.render_state`: the middle of metaworld's workspace..."""
DRAWING_DISTANCE, DRAWING_AZIMUTH, DRAWING_ELEVATION = 1.5, 135.0, -30.0
"""... seen from the front right, above the table."""


class MetaWorldEnv(InstructionEnv):
    """Sawyer-arm manipulation from Meta-World (v3 tasks), following a language instruction.

    ## Description

    A Sawyer arm on a table, controlled through metaworld's mocap (the hand moves toward a target
    that each action shifts by up to 1 cm per axis) with a two-finger gripper.  Every task runs on
    metaworld's own v3 environment and physics (``metaworld`` 3.1.1, MuJoCo 3.3.0) with a random
    layout per episode.  Two hard tasks are composed on metaworld's scenes: make-coffee on
    coffee-push's scene (mug, coffee machine, button) and locked-door-open on door-unlock's safe
    with its door leaf put on a hinge and latched while locked (:mod:`.physics`).

    ## Instructions

    * ``train`` / ``rephrase`` (10 tasks): reach, push, pick_place, button_press, door_unlock,
      door_open, window_open, faucet_open, coffee_push, coffee_button.  ``rephrase`` uses held-out
      conversational, indirect and emotional paraphrases.
    * ``easy`` (8 tasks): reach_wall, push_wall, pick_place_wall, button_press_wall, door_lock,
      door_close, window_close, faucet_close.
    * ``hard`` (4 tasks): make_coffee (push the mug under the machine, then press its button),
      locked_door_open (unlock, then open), hammer, soccer.

    Banks: :mod:`imaginebench.domains.metaworld.instructions`.

    ## Actions

    ``Box(-1, 1, (4,))``: dx, dy, dz of the hand's mocap target (× 0.01 m) and the gripper
    effort (-1 open, +1 close), exactly metaworld's action.

    ## Observation

    ``Box(91,)`` float32, the entity-slot state (:mod:`.layout`): hand xyz, gripper opening,
    goal xyz, then 12 slots of position + quaternion (w, x, y, z) — task object, button, lock,
    handle, window, faucet, wall, coffee machine, coffee button, hammer, nail, soccer ball.  The
    scene's entities fill their slots; one other slot holds a fixed distractor pose drawn per
    episode; the rest are zero.  The instruction is ``info["instruction"]``.

    ## Reward

    ``shaping + success_bonus`` (both in ``info["reward_terms"]``): shaping is the decrease of the
    task distance in metres (the tool centre's distance to the part it must act on plus the task's
    distance beyond Meta-World's threshold; composite tasks add 0.3 per stage still to do), and
    the success bonus is 1.  Rules: :mod:`imaginebench.domains.metaworld.success`.

    ## Success/Termination

    Meta-World's own success test and threshold per task (reach 0.05, push 0.05, pick-place 0.07,
    button-press 0.02, door-open handle within 0.08 in x, …), computed from the state;
    make_coffee and locked_door_open succeed only when their last stage does, after the first
    (progress record ``[stages_done]``).  ``info["is_success"]`` on every step; the episode
    terminates on success and truncates at the task's horizon: 100 steps; 150 for door_open,
    pick_place_wall, door_lock, soccer and make_coffee; 300 for locked_door_open (the scripted
    expert needs them; notes/metaworld.md).  A reset never starts where the task
    already holds.

    ## Registered ids

    ``ImagineBench/MetaWorld-v0`` with ``level`` in ``train``, ``rephrase``, ``easy``, ``hard``.

    ## Version history

    * v0: initial version.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 80}
    domain_cls = MetaWorldDomain
    reset_tries = 100
    """Layouts drawn per reset until the task does not already hold (metaworld's layouts almost never
    start solved)."""
    domain: MetaWorldDomain

    def __init__(self, level: str = "train", render_mode: str | None = None) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"Unknown render_mode {render_mode!r}; valid: None, 'rgb_array'.")
        super().__init__(level=level, render_mode=render_mode)
        self._scenes: dict[str, Scene] = {}
        self._drawing: dict[str, tuple[Scene, Any]] = {}
        """Per task: a second scene that states are written into to be drawn, and its renderer."""
        self.scene: Scene | None = None
        """The metaworld scene of the current task."""
        self.distractor = np.zeros(L.STATE_DIM)
        """The episode's distractor slot (a full-size vector, zero outside that slot)."""
        self.expert = MetaWorldExpert()

    # ------------------------------------------------------------------ hooks
    def scene_for(self, task: Task) -> Scene:
        """The (cached) scene that runs ``task``."""
        if task.name not in self._scenes:
            spec = spec_of(task)
            self._scenes[task.name] = make_scene(spec.env_name, spec.scene, spec.family)
        return self._scenes[task.name]

    def _sample_start(self, task: Task) -> np.ndarray:
        self.scene = self.scene_for(task)
        return self.scene.reset(int(self.np_random.integers(2**63)))

    def _begin(self, task: Task, state: np.ndarray) -> np.ndarray:
        assert self.scene is not None
        unused = [e for e in L.ENTITIES if e not in self.scene.entities]
        entity = unused[int(self.np_random.integers(len(unused)))]
        self.distractor = np.zeros(L.STATE_DIM)
        self.distractor[L.slot_slice(entity)] = sample_distractor(entity, self.np_random)
        return state + self.distractor

    def _simulate(self, action: Any) -> np.ndarray:
        assert self.scene is not None
        return self.scene.step(np.asarray(action, dtype=np.float64)) + self.distractor

    def _state_of_task_scene(self, state: np.ndarray, verb: str) -> np.ndarray:
        """``state`` as a flat vector after checking that it is legal and holds every entity of the
        current task's scene (``ValueError`` naming what is wrong; ``verb``: what was asked)."""
        s = np.asarray(state, dtype=np.float64).reshape(-1)
        errors = legality_errors(s)
        if errors:
            raise ValueError(f"Cannot {verb} an illegal MetaWorld-v0 state: {'; '.join(errors)}.")
        if self.task is None:
            raise RuntimeError(f"Call reset() before asking to {verb} a state: the task decides the scene.")
        entities = L.SCENE_ENTITIES[spec_of(self.task).scene]
        missing = [e for e in entities if np.all(np.abs(s[L.slot_slice(e)]) <= EMPTY_TOLERANCE)]
        if missing:
            raise ValueError(f"Cannot {verb} this MetaWorld-v0 state under task {self.task.name!r}: its scene needs "
                             f"{', '.join(missing)}, which the state lacks; reset with a task of the state's scene "
                             f"first.")
        return s

    def set_state(self, state: np.ndarray) -> None:
        """Put the scene into a 91-dim state (``ValueError`` when it is not finite or illegal).

        The simulator takes what the state determines (:meth:`.physics.Scene.write`: arm by
        inverse kinematics, fingers, object poses, joint angles, goal; velocities zero).  Slots
        outside the scene are kept as the episode's distractor.  ``self.state`` becomes the
        state read back from the simulator; the progress record keeps its latch and also counts
        ``state``.
        """
        s = self._state_of_task_scene(state, "set")
        assert self.task is not None
        self.scene = self.scene_for(self.task)
        self.scene.write(s)
        self.distractor = s.copy()
        for entity in self.scene.entities:
            self.distractor[L.slot_slice(entity)] = 0.0
        self.distractor[: L.SLOTS_START] = 0.0
        self.state = self.scene.read() + self.distractor
        if self.progress.shape == (1,):
            self.progress = np.maximum(self.progress, self.domain.initial_progress(self.task, self.state))

    def _expert(self) -> np.ndarray:
        assert self.task is not None and self.scene is not None
        return self.expert.act(self.task, self.scene, self.state, self.progress)

    @property
    def last_phase(self) -> str:
        """Phase label of the expert's latest action."""
        return self.expert.last_phase

    # ------------------------------------------------------------------ rendering
    render_needs_task = True
    """:meth:`render_state` draws the current task's scene: reset with the rollout's task first
    (``imagine render`` does)."""

    def render_state(self, state: np.ndarray, width: int = 256, height: int = 256,
                     camera: str | None = None) -> np.ndarray:
        """An RGB image (``height × width × 3``, uint8) of any legal 91-dim state of the current
        task's scene, real or imagined, without touching the episode.

        The state is written (as :meth:`set_state` does) into a second copy of the task's
        metaworld scene and drawn with MuJoCo's renderer.  The default camera looks at the table
        from the front right, upright; ``camera`` names one of metaworld's own cameras instead
        (``corner``, ``corner2``, ``topview``, ``gripperPOV``, ...; some of them are mounted upside
        down and draw the scene so).  The distractor slot is not drawn: it exists in the state
        vector only.  Needs an OpenGL backend (``MUJOCO_GL=egl`` or ``osmesa``).
        """
        import mujoco

        s = self._state_of_task_scene(state, "draw")
        assert self.task is not None
        scene, renderer = self._drawing.get(self.task.name, (None, None))
        if scene is None:
            spec = spec_of(self.task)
            scene = make_scene(spec.env_name, spec.scene, spec.family)
        if renderer is None or renderer.width != width or renderer.height != height:
            if renderer is not None:
                renderer.close()
            try:
                renderer = mujoco.Renderer(scene.model, height=height, width=width)
            except Exception as exc:  # mujoco raises FatalError or a GL library's own error
                scene.close()
                raise RuntimeError(
                    f"MetaWorld-v0 cannot render: MuJoCo found no OpenGL context ({type(exc).__name__}: {exc}). "
                    "Set MUJOCO_GL=egl (Debian packages libegl1, libgl1-mesa-dri) or MUJOCO_GL=osmesa "
                    "(libosmesa6) before starting Python.") from None
        self._drawing[self.task.name] = (scene, renderer)
        scene.write(s)
        view: Any = camera
        if camera is None:
            view = mujoco.MjvCamera()
            view.lookat[:] = DRAWING_LOOKAT
            view.distance, view.azimuth, view.elevation = DRAWING_DISTANCE, DRAWING_AZIMUTH, DRAWING_ELEVATION
        renderer.update_scene(scene.data, camera=view)
        return np.asarray(renderer.render(), dtype=np.uint8).copy()

    def render(self) -> np.ndarray | None:
        """``render_state(self.state)`` in ``rgb_array`` mode, else ``None``."""
        if self.render_mode != "rgb_array" or self.task is None:
            return None
        return self.render_state(self.state)

    def close(self) -> None:
        for scene in self._scenes.values():
            scene.close()
        self._scenes.clear()
        for scene, renderer in self._drawing.values():
            renderer.close()
            scene.close()
        self._drawing.clear()
        super().close()
