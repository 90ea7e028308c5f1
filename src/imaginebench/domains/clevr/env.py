"""The CLEVR-Robot environment (``ImagineBench/CLEVR-v0``)."""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

from imaginebench.domains.base import Task
from imaginebench.domains.clevr.domain import ClevrDomain
from imaginebench.domains.clevr.expert import ClevrExpert
from imaginebench.domains.clevr.physics import (
    TABLE_X,
    TABLE_Y,
    Physics,
    TableView,
    positions,
    sample_positions,
)
from imaginebench.domains.clevr.success import BALL_INDEX
from imaginebench.domains.env_base import InstructionEnv

MOVE_ROOM = 0.07
"""One-step moves start with the named ball at least this far from the wall ahead of it
(closer, no push can move it the 0.05 that success needs: the instruction is impossible)."""


class ClevrEnv(InstructionEnv):
    """Five balls on a table, moved by pushes, following a language instruction.

    ## Description

    A MuJoCo table with five balls — red, blue, green, purple, cyan, always in this order —
    sliding on a walled table (ball centres in x ∈ [-0.5, 0.5], y ∈ [-0.3, 0.57], ball radius
    0.05).  Each step pushes one ball; it slides about 0.15, knocks any ball it hits, and the
    step ends when every ball is at rest.  Axes: +x is "right", -x "left", +y "behind",
    -y "front".

    ## Instructions

    * ``train`` / ``rephrase`` (80 tasks): "move ball A to direction D of ball B" for the 20
      ordered colour pairs and D ∈ {left, right, front, behind}, e.g. ``red_left_of_blue``:
      "push the red ball to the left of the blue ball".  ``rephrase`` uses held-out
      conversational, indirect and emotional paraphrases of the same tasks.
    * ``easy`` (20 tasks): one-step moves, e.g. ``move_red_right``: "move the red ball to the
      right" (each ball along each of the 4 axis directions).
    * ``hard`` (15 tasks): 12 sequential-moves (two or three relations that must hold at
      once), ``make_line`` (red, blue, green, purple, cyan from left to right), ``put_pile``
      (all balls gathered together) and ``make_circle`` (the other balls around the green one).

    ## Actions

    ``Discrete(40)``: action ``a`` pushes ball ``a // 8`` (colour order) in direction
    ``a % 8``, where direction ``k`` is at ``45 * k`` degrees counter-clockwise from +x:
    0 right, 1 right-behind, 2 behind, 3 left-behind, 4 left, 5 left-front, 6 front,
    7 right-front (:data:`~imaginebench.domains.clevr.physics.DIRECTION_NAMES`).

    ## Observation

    ``Box(10,)`` float32: ``[red_x, red_y, blue_x, blue_y, green_x, green_y, purple_x,
    purple_y, cyan_x, cyan_y]``.  ``imaginebench.make`` appends the instruction embedding.

    ## Reward

    ``SHAPING_SCALE * (d(s) - d(s'))`` with the task distance ``d`` (0 on the success set:
    distance of the ball to the target sector for relations, summed over sub-goals;
    distance still to travel for one-step moves; summed cone/radius/ring violations for
    make-line, put-pile and make-circle), plus ``SUCCESS_BONUS`` (1.0) when ``s'`` succeeds.
    ``info["reward_terms"]`` holds ``shaping`` and ``success_bonus``.

    ## Success/Termination

    * relation: the angle of (A - B) is within 45 degrees of D and |A - B| < 0.39;
    * one-step move: the ball moved ≥ 0.05 and within 67.5 degrees of the named direction;
    * sequential-move: every relation sub-goal holds;
    * make-line: each consecutive displacement (in colour order) within 30 degrees of +x;
    * put-pile: every ball within 0.15 of the balls' centroid;
    * make-circle: each other ball 0.1–0.3 from the green ball, one in each quadrant.

    The episode terminates on success and truncates at the horizon: 50 steps, 1 step for
    the one-step moves.  Initial states are uniform non-overlapping positions, resampled
    while the task already holds (and, for one-step moves, while the named ball is closer
    than 0.07 to the wall it must move toward, which makes the move impossible).

    ## Registered ids

    ``ImagineBench/CLEVR-v0`` (``imaginebench.make("CLEVR-v0", level=...)``), levels
    ``train``, ``rephrase``, ``easy``, ``hard``.

    ## Version history

    * v0: initial release.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}
    domain_cls = ClevrDomain
    reset_tries = 1000
    """Initial states sampled per reset before giving up (a task almost never holds at random)."""
    domain: ClevrDomain

    def __init__(self, level: str = "train", render_mode: str | None = None) -> None:
        super().__init__(level=level, render_mode=render_mode)
        self.physics = Physics()
        self.expert = ClevrExpert()  # owns a separate simulator for its look-ahead
        self._view: TableView | None = None
        """Made on the first :meth:`render_state` (it needs OpenGL)."""

    def _sample_start(self, task: Task) -> np.ndarray | None:
        state = sample_positions(self.np_random)
        return state if self._possible(task, state) else None

    @staticmethod
    def _possible(task: Task, state: np.ndarray) -> bool:
        """One-step moves need room ahead of the ball (:data:`MOVE_ROOM`); other tasks always pass."""
        if task.family != "one_step_move":
            return True
        x, y = positions(state)[BALL_INDEX[task.params["ball"]]]
        room = {"left": x - TABLE_X[0], "right": TABLE_X[1] - x,
                "front": y - TABLE_Y[0], "behind": TABLE_Y[1] - y}[task.params["direction"]]
        return room >= MOVE_ROOM

    def _simulate(self, action: Any) -> np.ndarray:
        return self.physics.push(self.state, int(action))

    def set_state(self, state: np.ndarray) -> None:
        """Put the table into ``state`` (10 ball coordinates); balls are at rest between pushes.

        Illegal but finite states (overlapping balls, balls past a wall, as imagined rollouts
        may contain) are accepted: the next push resolves them with the simulator's contacts
        and joint limits.
        """
        state = np.asarray(state, dtype=np.float64).reshape(-1)
        if state.shape != (self.domain.state_dim,):
            raise ValueError(f"Expected a state of {self.domain.state_dim} values, got {state.shape}.")
        if not np.all(np.isfinite(state)):
            raise ValueError(f"State contains NaN or inf: {state}.")
        self.state = state.copy()

    def _expert(self) -> int:
        assert self.task is not None
        return self.expert.act(self.task.family, self.task.params, self.state, self.progress,
                               self.np_random)

    # ------------------------------------------------------------------ rendering
    def render_state(self, state: np.ndarray, width: int = 256, height: int = 256,
                     camera: str | int | mujoco.MjvCamera | None = None) -> np.ndarray:
        """An upright RGB image (``height × width × 3``, uint8) of any 10-dim state, real or
        imagined, without touching the episode.

        The default camera looks down on the whole table from above and slightly in front
        (:meth:`TableView.default_camera`): +x (right) is right, +y (behind) is up.  Needs an
        OpenGL backend for MuJoCo: ``MUJOCO_GL=egl`` (Debian packages ``libegl1``,
        ``libgl1-mesa-dri``) or ``MUJOCO_GL=osmesa`` (``libosmesa6``).
        """
        s = np.asarray(state, dtype=np.float64)
        n = self.domain.state_dim
        if s.size != n or not np.all(np.isfinite(s)):
            raise ValueError(f"render_state needs a state of shape ({n},) (x, y of the 5 balls) of finite "
                             f"numbers, got shape {s.shape}{'' if s.size != n else ' with NaN or inf'}.")
        if self._view is None:
            self._view = TableView()
        return self._view.render(s.reshape(-1), width=width, height=height, camera=camera)

    def render(self) -> np.ndarray | None:
        """``render_state(self.state)`` in ``rgb_array`` mode, else ``None``."""
        if self.render_mode != "rgb_array":
            return None
        return self.render_state(self.state)

    def close(self) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None
        super().close()
