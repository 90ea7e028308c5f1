"""The BabyAI instruction-following environment (``ImagineBench/BabyAI-v0``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from imaginebench.domains.babyai import expert
from imaginebench.domains.babyai import layout as L
from imaginebench.domains.babyai import success as S
from imaginebench.domains.babyai.domain import BabyAIDomain
from imaginebench.domains.babyai.grid import BabyAIWorld, sample_world
from imaginebench.domains.babyai.tasks import scene
from imaginebench.domains.base import Task
from imaginebench.domains.env_base import InstructionEnv



class BabyAIEnv(InstructionEnv):
    """A fully observed BabyAI room driven by natural-language instructions.

    ## Description

    One 8×8 room built from minigrid's ``Grid`` and objects: an outer wall, a 6×6 interior
    holding one ball, one box and one key (on distinct cells), and one door on a random
    non-corner wall cell.  Colours come from minigrid's six (index: 0 red, 1 green, 2 blue,
    3 purple, 4 yellow, 5 grey).  The agent has no heading; it walks over objects (it may
    stand on one), while walls and closed or locked doors block it.  An open doorway is
    walkable, but nothing lies beyond it.

    ## Instructions

    Tasks are parameterised by object type and colour, and every instruction names the
    colours the episode really has ("put the red ball next to the green box").
    ``train``/``rephrase``: go to X (ball, box, key, door), open the door, pick up X, put X
    next to Y — 264 tasks.  ``easy``: open the door then go to X, open the door then pick up
    X, go to a wall-side cell, go to the room centre — 38 tasks.  ``hard``: pick up the key
    then open the locked door, put the three objects in a line, gather them into a pile — 8
    tasks.  Banks: :mod:`imaginebench.domains.babyai.instructions`.

    ## Actions

    ``Discrete(7)``, absolute: 0 west, 1 east, 2 north, 3 south (step to the neighbouring
    cell if walkable, else stay), 4 pick up the object on the agent's cell (hands empty),
    5 drop the carried object on the agent's cell (interior, no object there), 6 toggle the
    door from the cell in front of it (open ↔ closed; a locked door opens only while the
    agent carries a key of the door's colour).  Anything else is a no-op.

    ## Observation

    17 integers as ``float32`` (layout: :mod:`imaginebench.domains.babyai.layout`):
    ball colour,row,col; box colour,row,col; key colour,row,col; door colour,row,col,state
    (0 open, 1 closed, 2 locked); agent row,col; carried type (0 nothing, 1 ball, 2 box,
    3 key), carried colour (-1 when nothing is carried).  A carried object's row/col are the
    agent's cell.  The instruction is ``info["instruction"]``.

    ## Reward

    ``shaping + success_bonus`` (both in ``info["reward_terms"]``): shaping is
    ``0.05 ×`` the decrease of the task distance (agent steps still needed); on success the
    bonus is ``1 − 0.9·t/128`` with ``t`` the steps taken including the last.  The step
    count lives in the domain's progress record (``steps, door_opened, key_carried``), so the
    reward stays a pure function of states and progress.

    ## Success/Termination

    ``info["is_success"]`` on every step; the episode terminates on success and truncates
    after 128 steps.  Rules: :mod:`imaginebench.domains.babyai.success`.  A reset never
    starts in a state where the task already holds.

    ## Registered ids

    ``ImagineBench/BabyAI-v0`` with ``level`` in ``train``, ``rephrase``, ``easy``, ``hard``.

    ## Version history

    * v0: initial version.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    domain_cls = BabyAIDomain
    reset_tries = 1000
    """Resets resample a room at most this many times to find one the task does not hold in."""
    domain: BabyAIDomain

    def __init__(self, level: str = "train", render_mode: str | None = None) -> None:
        super().__init__(level=level, render_mode=render_mode)
        self.world: BabyAIWorld | None = None
        self._expert_rng = np.random.default_rng(0)
        self.last_phase = ""
        """Phase label of the expert's latest action."""

    # ------------------------------------------------------------------ hooks
    def _sample_start(self, task: Task) -> np.ndarray:
        spec = scene(task)
        self.world = sample_world(self.np_random, spec.colors, spec.door_color, spec.door_state)
        return self.world.to_state()

    def _begin(self, task: Task, state: np.ndarray) -> np.ndarray:
        self._expert_rng = np.random.default_rng(int(self.np_random.integers(2**63)))
        return state

    def _simulate(self, action: Any) -> np.ndarray:
        assert self.world is not None
        self.world.step(int(action))
        return self.world.to_state()

    def set_state(self, state: np.ndarray) -> None:
        """Rebuild the room from a state vector (``ValueError`` if it is illegal).

        The progress record keeps its step count; its door/key latches also count ``state``.
        """
        self.world = BabyAIWorld.from_state(state)
        self.state = self.world.to_state()
        if self.progress.shape == (S.PROGRESS_DIM,):
            self.progress = np.maximum(self.progress, S.initial_progress(self.state))

    def _expert(self) -> int:
        assert self.task is not None
        self.last_phase, action = expert.plan(
            self.task.family, self.task.params, self.state, self.progress, self._expert_rng
        )
        return int(action)

    # ------------------------------------------------------------------ display
    def render_text(self) -> str:
        """ASCII picture of the room (see :meth:`BabyAIWorld.render_text`)."""
        return self.world.render_text() if self.world is not None else ""

    def render_state(self, state: np.ndarray, tile_size: int = 32) -> np.ndarray:
        """An upright RGB image (``8·tile_size`` square, uint8) of any 17-number state, real or
        imagined, drawn by minigrid's renderer on a room built for the picture (the episode's
        room is untouched; see :meth:`BabyAIWorld.for_display` for illegal states).  No OpenGL."""
        s = np.asarray(state, dtype=np.float64)
        if s.size != L.STATE_DIM or not np.all(np.isfinite(s)):
            raise ValueError(f"render_state needs a state of shape ({L.STATE_DIM},) of finite numbers, "
                             f"got shape {s.shape}{'' if s.size != L.STATE_DIM else ' with NaN or inf'}.")
        if int(tile_size) < 1:
            raise ValueError(f"tile_size must be a positive number of pixels, got {tile_size}.")
        return BabyAIWorld.for_display(s).render(int(tile_size))

    def render(self) -> np.ndarray | None:
        """``render_state(self.state)`` in ``rgb_array`` mode, else ``None``."""
        if self.render_mode != "rgb_array":
            return None
        return self.render_state(self.state)
