"""MuJoCo model of the CLEVR-Robot table and the push action.

Five balls slide on a walled table.  Each ball has two slide joints (x, y) with viscous
damping, so a push (an initial velocity) decays exponentially and the ball comes to rest a
fixed distance away unless it hits something.  Ball–ball contacts are frictionless sphere
contacts, so a moving ball knocks the balls it hits (momentum is shared, the collision is
close to inelastic).  The walls are the slide joints' limits: a ball's centre cannot leave
:data:`TABLE_X` × :data:`TABLE_Y`, and a ball that reaches a wall stops there.  (Joint
limits cost far less than wall geoms in collision detection; the wall boxes in the model are
visual only.)

A push is a pure function of ``(state, action)``: the simulator is reset to the state with
zero velocities before every push, so replaying a transition from a stored state gives the
same next state bit for bit.

State layout (10 floats, the ball order is :data:`COLOURS`)::

    [red_x, red_y, blue_x, blue_y, green_x, green_y, purple_x, purple_y, cyan_x, cyan_y]

Axes: +x is "right", -x "left", +y "behind", -y "front".
"""

from __future__ import annotations

from typing import Sequence

import mujoco
import numpy as np

from imaginebench.domains.clevr.layout import (  # noqa: F401  (re-exported: the simulator's callers read them here)
    BALL_RADIUS,
    COLOURS,
    DIRECTION_ANGLES,
    DIRECTION_NAMES,
    DIRECTIONS,
    N_ACTIONS,
    N_BALLS,
    N_DIRECTIONS,
    TABLE_X,
    TABLE_Y,
    decode_action,
    encode_action,
    positions,
)

BALL_MASS = 0.1
DAMPING_TIME = 0.25
"""Seconds for a free ball's speed to drop by a factor e (joint damping = mass / time)."""
PUSH_DISTANCE = 0.15
"""Nominal travel of a free ball (push speed times damping time); since a push stops once
every ball is slower than :data:`REST_SPEED`, the actual travel is about 0.147."""
PUSH_SPEED = PUSH_DISTANCE / DAMPING_TIME
TIMESTEP = 0.02
CONTACT_TIME = 0.04
"""MuJoCo ``solref`` time constant of ball and wall contacts (at least two timesteps)."""
FIRST_STEPS = 45
"""Physics steps before the first rest check (a free push needs 50-55)."""
CHUNK_STEPS = 5
"""Physics steps between later rest checks."""
MAX_STEPS = 250
"""Hard cap on physics steps per push (5 s of simulated time)."""
REST_SPEED = 0.01
"""A push ends when every ball is slower than this (free travel left < 3 mm); the remaining
velocities are dropped, so the next push starts from rest."""
CLEAR_MARGIN = 0.005
"""Clearance (beyond contact) under which :meth:`Physics.free_pushes` calls a path blocked."""
START_GAP = 0.02
"""Minimum clearance between balls in sampled initial states."""

VIEW_LOOKAT = (0.0, (TABLE_Y[0] + TABLE_Y[1]) / 2, 0.0)
"""Point the default camera of :class:`TableView` looks at (the table's centre)."""
VIEW_DISTANCE = 2.0
VIEW_AZIMUTH = 90.0
"""Degrees; 90 puts the camera on the front (-y) side looking behind (+y), so +x is right in the image."""
VIEW_ELEVATION = -70.0
"""Degrees below the horizon: a view from above and slightly in front."""
MAX_VIEW_SIZE = 2048
"""Largest image side :class:`TableView` can draw (the offscreen buffer's size)."""


def model_xml(display: bool = False) -> str:
    """The MJCF of the table: five balls on limited slide joints, and visual walls.

    ``display=True`` adds what only pictures need (a floor, a light, a larger offscreen
    buffer): :class:`TableView` draws from that model, the simulator never does.
    """
    r = BALL_RADIUS
    x0, x1 = TABLE_X
    y0, y1 = TABLE_Y
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    hx, hy = (x1 - x0) / 2 + r, (y1 - y0) / 2 + r  # half extents of the walls' inner faces
    t = 0.05  # wall half thickness
    damping = BALL_MASS / DAMPING_TIME
    rgba = ("1 0 0 1", "0 0 1 1", "0 1 0 1", "0.6 0 0.8 1", "0 1 1 1")
    balls = "\n".join(
        f"""    <body name="{c}" pos="0 0 {r}">
      <joint name="{c}_x" type="slide" axis="1 0 0" range="{x0} {x1}"/>
      <joint name="{c}_y" type="slide" axis="0 1 0" range="{y0} {y1}"/>
      <geom name="{c}" type="sphere" size="{r}" mass="{BALL_MASS}" rgba="{rgba[i]}"/>
    </body>"""
        for i, c in enumerate(COLOURS)
    )
    lift = 0.001 if display else 0.0  # pictures: front/behind walls' tops above the side walls' (no z-fighting)
    walls = "\n".join(
        f'    <geom name="wall_{n}" type="box" pos="{px} {py} {r}" size="{sx} {sy} {2 * r + dz}" '
        f'contype="0" conaffinity="0" rgba="0.5 0.5 0.5 1"/>'
        for n, px, py, sx, sy, dz in (
            ("left", cx - hx - t, cy, t, hy + 2 * t, 0.0),
            ("right", cx + hx + t, cy, t, hy + 2 * t, 0.0),
            ("front", cx, cy - hy - t, hx + 2 * t, t, lift),
            ("behind", cx, cy + hy + t, hx + 2 * t, t, lift),
        )
    )
    visual = extras = ""
    if display:
        visual = (f'  <visual>\n    <global offwidth="{MAX_VIEW_SIZE}" offheight="{MAX_VIEW_SIZE}"/>\n'
                  '    <headlight ambient="0.3 0.3 0.3" diffuse="0.4 0.4 0.4"/>\n  </visual>\n')
        extras = (f'    <geom name="floor" type="plane" pos="{cx} {cy} 0" size="1.5 1.5 0.1" '
                  'contype="0" conaffinity="0" rgba="0.62 0.62 0.6 1"/>\n'
                  f'    <light name="top" pos="{cx} {cy} 2" dir="0 0 -1" directional="true" '
                  'diffuse="0.5 0.5 0.5"/>\n')
    return f"""<mujoco model="clevr_robot">
  <option timestep="{TIMESTEP}" gravity="0 0 0" integrator="implicitfast"/>
{visual}  <default>
    <joint damping="{damping}" limited="true" solreflimit="{CONTACT_TIME} 1"/>
    <geom condim="1" solref="{CONTACT_TIME} 1"/>
  </default>
  <worldbody>
{extras}{walls}
{balls}
  </worldbody>
</mujoco>
"""


class Physics:
    """A MuJoCo table that applies pushes to state vectors.

    Every instance owns its own model and data, so an expert can use a private copy for
    look-ahead without touching the environment's simulator.
    """

    def __init__(self) -> None:
        self.model = mujoco.MjModel.from_xml_string(model_xml())
        self.data = mujoco.MjData(self.model)
        self.last_steps = 0
        """Physics steps used by the last push."""
        self.free_displacement = self._free_displacements()
        """Displacement of a ball pushed with nothing in its way, per direction, ``(8, 2)``."""

    def push(self, state: np.ndarray, action: int) -> np.ndarray:
        """The state after pushing ``state`` with ``action`` and letting every ball come to rest."""
        ball, direction = decode_action(action)
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        d.qpos[:] = np.asarray(state, dtype=np.float64).reshape(-1)
        d.qvel[2 * ball : 2 * ball + 2] = PUSH_SPEED * DIRECTIONS[direction]
        mujoco.mj_step(m, d, FIRST_STEPS)
        steps = FIRST_STEPS
        while steps < MAX_STEPS and np.abs(d.qvel).max() >= REST_SPEED:
            mujoco.mj_step(m, d, CHUNK_STEPS)
            steps += CHUNK_STEPS
        self.last_steps = steps
        return d.qpos.copy()

    def predict(self, state: np.ndarray, action: int) -> np.ndarray:
        """:meth:`push`, short-cut analytically when the pushed ball's path is clear."""
        nexts, clear = self.free_pushes(state, [action])
        return nexts[0] if clear[0] else self.push(state, action)

    def free_pushes(self, state: np.ndarray, actions: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Outcomes of pushes whose ball has a clear path, without simulating.

        A push whose ball stays inside the table and passes no other ball closer than
        :data:`CLEAR_MARGIN` beyond contact moves only that ball, by exactly the free
        displacement of its direction (equal to :meth:`push` up to rounding).

        Returns:
            ``(next_states, clear)``: shape ``(n, 10)`` and a boolean mask of length ``n``;
            rows where ``clear`` is false are meaningless (simulate those pushes).
        """
        balls, dirs = np.divmod(np.asarray(actions, dtype=np.int64), N_DIRECTIONS)
        p = positions(state)
        n = len(balls)
        start = p[balls]  # (n, 2)
        move = self.free_displacement[dirs]  # (n, 2)
        end = start + move
        m = CLEAR_MARGIN
        clear = ((end[:, 0] >= TABLE_X[0] + m) & (end[:, 0] <= TABLE_X[1] - m)
                 & (end[:, 1] >= TABLE_Y[0] + m) & (end[:, 1] <= TABLE_Y[1] - m))
        rel = p[None, :, :] - start[:, None, :]  # (n, 5, 2): other balls seen from the mover
        t = np.clip((rel @ move[:, :, None])[..., 0] / np.sum(move * move, axis=1)[:, None], 0.0, 1.0)
        off = rel - t[..., None] * move[:, None, :]
        gaps = np.sum(off * off, axis=-1)
        gaps[np.arange(n), balls] = np.inf
        clear &= gaps.min(axis=1) >= (2 * BALL_RADIUS + m) ** 2
        nexts = np.repeat(p.reshape(1, -1), n, axis=0)
        nexts[np.arange(n), 2 * balls] = end[:, 0]
        nexts[np.arange(n), 2 * balls + 1] = end[:, 1]
        return nexts, clear

    def _free_displacements(self) -> np.ndarray:
        cx, cy = sum(TABLE_X) / 2, sum(TABLE_Y) / 2
        corners = [(x, y) for x in TABLE_X for y in TABLE_Y]
        state = np.concatenate([(cx, cy), *corners])
        return np.stack(
            [self.push(state, encode_action(0, k))[:2] - state[:2] for k in range(N_DIRECTIONS)]
        )


class TableView:
    """Draws state vectors of the table with MuJoCo's offscreen renderer.

    Owns a display model (the simulator's model plus a floor and a light, same joints), its own
    data and one ``mujoco.Renderer`` reused between calls, so drawing never touches a
    simulator.  Needs an OpenGL backend: ``MUJOCO_GL=egl`` or ``osmesa`` set before ``mujoco``
    is imported.  Call :meth:`close` to free the GL context.
    """

    def __init__(self) -> None:
        self.model = mujoco.MjModel.from_xml_string(model_xml(display=True))
        self.data = mujoco.MjData(self.model)
        self._renderer: mujoco.Renderer | None = None

    @staticmethod
    def default_camera() -> mujoco.MjvCamera:
        """A free camera above the table, slightly in front, showing all of it."""
        cam = mujoco.MjvCamera()
        cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        cam.lookat[:] = VIEW_LOOKAT
        cam.distance = VIEW_DISTANCE
        cam.azimuth = VIEW_AZIMUTH
        cam.elevation = VIEW_ELEVATION
        return cam

    def render(self, state: np.ndarray, width: int = 256, height: int = 256,
               camera: str | int | mujoco.MjvCamera | None = None) -> np.ndarray:
        """An upright RGB image (``height × width × 3``, uint8) of a 10-dim state.

        ``camera`` defaults to :meth:`default_camera`; a ``RuntimeError`` explains how to get an
        OpenGL context when MuJoCo finds none.
        """
        if not (1 <= width <= MAX_VIEW_SIZE and 1 <= height <= MAX_VIEW_SIZE):
            raise ValueError(f"CLEVR-v0 draws images of 1 to {MAX_VIEW_SIZE} pixels a side, got {width} × {height}.")
        if self._renderer is None or self._renderer.width != width or self._renderer.height != height:
            self.close()
            try:
                self._renderer = mujoco.Renderer(self.model, height=height, width=width)
            except Exception as exc:  # mujoco raises FatalError or a GL library's own error
                raise RuntimeError(
                    f"CLEVR-v0 cannot render: MuJoCo found no OpenGL context ({type(exc).__name__}: {exc}). "
                    "Set MUJOCO_GL=egl (Debian packages libegl1, libgl1-mesa-dri) or MUJOCO_GL=osmesa "
                    "(libosmesa6) before starting Python."
                ) from None
        d = self.data
        mujoco.mj_resetData(self.model, d)
        d.qpos[:] = np.asarray(state, dtype=np.float64).reshape(-1)
        mujoco.mj_forward(self.model, d)
        self._renderer.update_scene(d, camera=self.default_camera() if camera is None else camera)
        return np.asarray(self._renderer.render(), dtype=np.uint8).copy()

    def close(self) -> None:
        """Free the renderer's GL context (a later :meth:`render` makes a new one)."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


_PAIR_I, _PAIR_J = np.triu_indices(N_BALLS, k=1)
SAMPLE_BATCH = 4
"""Candidate tables drawn per try by :func:`sample_positions` (about 61% are free of overlaps)."""
_TABLE_LOW = np.array([TABLE_X[0], TABLE_Y[0]] * N_BALLS)
_TABLE_SPAN = np.array([TABLE_X[1] - TABLE_X[0], TABLE_Y[1] - TABLE_Y[0]] * N_BALLS)


def sample_positions(rng: np.random.Generator, gap: float = START_GAP) -> np.ndarray:
    """Ball centres uniform over the table, no two closer than ``2·radius + gap``, as a state vector.

    Uniform over the allowed configurations: whole tables of five uniform centres are drawn
    :data:`SAMPLE_BATCH` at a time and the first one with no overlap is kept (rejection sampling
    of the joint configuration, vectorised; the first batch almost always holds one).
    """
    min_sq = (2 * BALL_RADIUS + gap) ** 2
    while True:
        tables = rng.random((SAMPLE_BATCH, 2 * N_BALLS)) * _TABLE_SPAN + _TABLE_LOW
        x, y = tables[:, 0::2], tables[:, 1::2]
        dx, dy = x[:, _PAIR_I] - x[:, _PAIR_J], y[:, _PAIR_I] - y[:, _PAIR_J]
        fits = (dx * dx + dy * dy).min(axis=1) >= min_sq
        first = int(fits.argmax())
        if fits[first]:
            return tables[first]
