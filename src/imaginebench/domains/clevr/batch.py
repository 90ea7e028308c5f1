"""CLEVR-Robot success, task distance and reward over a batch of rows, as array code.

Rows are grouped by task family; each family is scored with numpy operations over all of its
rows at once (every family is vectorised, none falls back to a per-row loop).  Per-row task
parameters (ball indices, directions, line order, circle centre) are gathered from small
tables built once per distinct task.

The formulas are those of :mod:`.success`, operation for operation.  One difference is
handled explicitly: numpy's SIMD ``arctan2`` and ``hypot`` may differ from Python's
``math`` in the last bits, so every angle or length compared against a success threshold
that lands within :data:`REFINE_TOLERANCE` of it is recomputed with the per-row scalar
code.  Success is therefore bit-for-bit the per-row answer; distances (and so rewards)
agree to rounding (about 1e-15).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from imaginebench.domains.base import Task, index_tasks, per_task_cache
from imaginebench.domains.clevr import success as S
from imaginebench.domains.clevr.layout import N_BALLS

REFINE_TOLERANCE = 1e-9
"""Vector angles/lengths this close to a success threshold are recomputed with ``math``."""

FAMILIES: tuple[str, ...] = (
    "relation", "sequential_move", "one_step_move", "make_line", "put_pile", "make_circle",
)
_RING_OTHERS = np.array([[i for i in range(N_BALLS) if i != c] for c in range(N_BALLS)], dtype=np.intp)
"""Row ``c``: the ball indices other than ``c``, in order (``np.delete`` of :mod:`.success`)."""
_QUADRANT_PERMUTATIONS = np.array(list(itertools.permutations(range(S.CIRCLE_QUADRANTS))), dtype=np.intp)
_QUADRANT_BOUNDARIES = tuple(k * math.pi / 2 for k in range(-2, 3))
"""Angles where the quadrant of an ``atan2`` value changes."""


# ---------------------------------------------------------------------------- task tables
GOAL_SLOTS = 3
"""Relation goals per row in the parameter tables (more only when a task has more goals)."""
_SCALARS = ("family", "move_ball", "move_angle", "move_cos", "move_sin", "circle_centre")
_GOAL_FIELDS = ("goal_valid", "goal_balls", "goal_anchors", "goal_angles", "goal_cos", "goal_sin")
_GOAL_FILL = {"goal_valid": 0.0, "goal_balls": 0.0, "goal_anchors": 1.0, "goal_angles": 0.0,
              "goal_cos": 1.0, "goal_sin": 0.0}
"""Padding of unused goal slots: a harmless goal (red relative to blue, never read)."""
_INTEGER_FIELDS = ("family", "move_ball", "circle_centre", "line_order", "goal_balls", "goal_anchors")


def task_values(task: Task) -> dict[str, tuple[float, ...]]:
    """The numeric parameters of ``task``, field by field (``ValueError`` for an unknown family).

    Directions are radians from +x, with the ``math.cos``/``math.sin`` that rotate into their
    frame (as :func:`S._rotate` computes them); fields a family does not use keep defaults.
    """
    if task.family not in FAMILIES:
        raise ValueError(f"Unknown CLEVR task family {task.family!r}.")
    params = task.params
    goals = params["goals"] if task.family in ("relation", "sequential_move") else ()
    angles = tuple(S.RELATION_ANGLES[g[1]] for g in goals)
    move_angle = S.RELATION_ANGLES[params["direction"]] if task.family == "one_step_move" else 0.0
    order = params["order"] if task.family == "make_line" else range(N_BALLS)
    return {
        "family": (FAMILIES.index(task.family),),
        "move_ball": (S._ball(params["ball"]) if task.family == "one_step_move" else 0,),
        "move_angle": (move_angle,),
        "move_cos": (math.cos(move_angle),),
        "move_sin": (math.sin(move_angle),),
        "circle_centre": (S._ball(params["centre"]) if task.family == "make_circle" else 0,),
        "line_order": tuple(S._ball(c) for c in order),
        "goal_valid": (1.0,) * len(goals),
        "goal_balls": tuple(S._ball(g[0]) for g in goals),
        "goal_anchors": tuple(S._ball(g[2]) for g in goals),
        "goal_angles": angles,
        "goal_cos": tuple(map(math.cos, angles)),
        "goal_sin": tuple(map(math.sin, angles)),
    }


def _flatten(values: dict[str, tuple[float, ...]], n_goals: int) -> np.ndarray:
    """One table row: the fields in :func:`_columns` order, goals padded to ``n_goals``."""
    goals = [values[f] + (_GOAL_FILL[f],) * (n_goals - len(values[f])) for f in _GOAL_FIELDS]
    return np.array([x for f in (*_SCALARS, "line_order") for x in values[f]] + [x for g in goals for x in g])


def _columns(n_goals: int) -> dict[str, slice | int]:
    """Where each field lies in a flattened row."""
    columns: dict[str, slice | int] = {name: i for i, name in enumerate(_SCALARS)}
    columns["line_order"] = slice(len(_SCALARS), len(_SCALARS) + N_BALLS)
    first = len(_SCALARS) + N_BALLS
    for k, name in enumerate(_GOAL_FIELDS):
        columns[name] = slice(first + k * n_goals, first + (k + 1) * n_goals)
    return columns


@dataclass(frozen=True)
class TaskCodes:
    """A task's parameters: by field, and flattened into a table row."""

    values: dict[str, tuple[float, ...]]
    n_goals: int
    row: np.ndarray


def _task_codes(task: Task) -> TaskCodes:
    values = task_values(task)
    n_goals = max(GOAL_SLOTS, len(values["goal_valid"]))
    return TaskCodes(values, n_goals, _flatten(values, n_goals))


_cached_codes = per_task_cache(_task_codes)
"""Task codes memoised per task object."""


@dataclass(frozen=True)
class RowParams:
    """Per-row task parameters of a batch, as arrays with one row per batch row."""

    family: np.ndarray  # (N,) int
    move_ball: np.ndarray  # (N,) int
    move_angle: np.ndarray  # (N,) float
    move_cos: np.ndarray  # (N,) float
    move_sin: np.ndarray  # (N,) float
    circle_centre: np.ndarray  # (N,) int
    line_order: np.ndarray  # (N, 5) int
    goal_valid: np.ndarray  # (N, G) bool
    goal_balls: np.ndarray  # (N, G) int
    goal_anchors: np.ndarray  # (N, G) int
    goal_angles: np.ndarray  # (N, G) float
    goal_cos: np.ndarray  # (N, G) float
    goal_sin: np.ndarray  # (N, G) float

    @classmethod
    def of(cls, tasks: Sequence[Task]) -> RowParams:
        unique, row_task = index_tasks(tasks)
        codes = [_cached_codes(task) for task in unique]
        n_goals = max(c.n_goals for c in codes)
        table = np.array([c.row if c.n_goals == n_goals else _flatten(c.values, n_goals) for c in codes])
        rows = table[row_task]
        fields = {name: rows[:, where] for name, where in _columns(n_goals).items()}
        for name in _INTEGER_FIELDS:
            fields[name] = fields[name].astype(np.intp)
        fields["goal_valid"] = fields["goal_valid"] != 0.0
        return cls(**fields)

    def take(self, rows: np.ndarray) -> RowParams:
        """The parameters of the given rows."""
        return RowParams(**{name: value[rows] for name, value in vars(self).items()})


# ---------------------------------------------------------------------------- scalar semantics
def _py_max(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """Elementwise Python ``max(a, b)`` (``a`` unless ``b > a``; NaN handled the same way)."""
    return np.where(b > a, b, a)


def _py_min(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """Elementwise Python ``min(a, b)`` (``a`` unless ``b < a``)."""
    return np.where(b < a, b, a)


def _refine_near(values: np.ndarray, thresholds: Sequence[float], exact: Callable[[tuple], float]) -> np.ndarray:
    """``values`` with the entries within :data:`REFINE_TOLERANCE` of a threshold set to ``exact(index)``."""
    near = np.zeros(values.shape, dtype=bool)
    for threshold in thresholds:
        near |= np.abs(values - threshold) <= REFINE_TOLERANCE
    if not near.any():
        return values
    values = values.copy()
    for index in zip(*np.nonzero(near)):
        values[index] = exact(index)
    return values


# ---------------------------------------------------------------------------- geometry
def _wrap(angle: np.ndarray) -> np.ndarray:
    return np.arctan2(np.sin(angle), np.cos(angle))


def _angle_off(v: np.ndarray, direction: np.ndarray | float) -> np.ndarray:
    """Absolute angle between each vector ``v[..., :]`` and ``direction`` (vector form)."""
    return np.abs(_wrap(np.arctan2(v[..., 1], v[..., 0]) - direction))


def _angle_within(v: np.ndarray, direction: np.ndarray | float, half_angle: float) -> np.ndarray:
    """``S._angle_off(v, direction) <= half_angle`` for every vector, exactly as per row."""
    direction = np.broadcast_to(direction, v.shape[:-1])
    off = _refine_near(_angle_off(v, direction), [half_angle],
                       lambda i: S._angle_off(v[i], float(direction[i])))
    return off <= half_angle


def _length(v: np.ndarray, threshold: float) -> np.ndarray:
    """``math.hypot`` of every vector, exact where it is near ``threshold``."""
    r = np.hypot(v[..., 0], v[..., 1])
    return _refine_near(r, [threshold], lambda i: math.hypot(v[i][0], v[i][1]))


def _rotate(v: np.ndarray, cos: np.ndarray | float, sin: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    return cos * v[..., 0] + sin * v[..., 1], -sin * v[..., 0] + cos * v[..., 1]


def _dist_to_wedge(
    v: np.ndarray, cos: np.ndarray | float, sin: np.ndarray | float, half_angle: float, max_len: float
) -> np.ndarray:
    """Vector form of :func:`S._dist_to_wedge`, the direction given by its ``math.cos``/``math.sin``."""
    x, y = _rotate(v, cos, sin)
    inside = np.abs(np.arctan2(y, x)) <= half_angle
    ex, ey = math.cos(half_angle), np.copysign(math.sin(half_angle), y)
    t = _py_min(_py_max(x * ex + y * ey, 0.0), max_len)
    with np.errstate(invalid="ignore"):
        return np.where(inside, _py_max(0.0, np.hypot(x, y) - max_len), np.hypot(x - t * ex, y - t * ey))


def _sum_columns(values: np.ndarray) -> np.ndarray:
    """Left-to-right sum over the last axis (Python's ``sum`` order)."""
    total = values[..., 0]
    for k in range(1, values.shape[-1]):
        total = total + values[..., k]
    return total


# ---------------------------------------------------------------------------- families
def _relations(p: np.ndarray, rp: RowParams) -> tuple[np.ndarray, np.ndarray]:
    """Success and distance of relation/sequential rows: every goal holds; sum of goal distances."""
    rows = np.arange(len(p))[:, None]
    v = p[rows, rp.goal_balls] - p[rows, rp.goal_anchors]  # (n, G, 2)
    holds = _angle_within(v, rp.goal_angles, S.RELATION_HALF_ANGLE)
    holds &= _length(v, S.RELATION_MAX_DISTANCE) < S.RELATION_MAX_DISTANCE
    distance = _dist_to_wedge(v, rp.goal_cos, rp.goal_sin, S.RELATION_HALF_ANGLE, S.RELATION_MAX_DISTANCE)
    success = np.all(holds | ~rp.goal_valid, axis=1)
    return success, _sum_columns(np.where(rp.goal_valid, distance, 0.0))


def _move(p: np.ndarray, start: np.ndarray, rp: RowParams) -> tuple[np.ndarray, np.ndarray]:
    """Success and distance of one-step-move rows (displacement of the named ball from ``start``)."""
    rows = np.arange(len(p))
    d = p[rows, rp.move_ball] - start[rows, rp.move_ball]
    success = _length(d, S.MOVE_MIN_DISTANCE) >= S.MOVE_MIN_DISTANCE
    success &= _angle_within(d, rp.move_angle, S.MOVE_HALF_ANGLE)
    x, y = _rotate(d, rp.move_cos, rp.move_sin)
    inside = np.abs(np.arctan2(y, x)) <= S.MOVE_HALF_ANGLE
    ex, ey = math.cos(S.MOVE_HALF_ANGLE), np.copysign(math.sin(S.MOVE_HALF_ANGLE), y)
    t = _py_max(x * ex + y * ey, S.MOVE_MIN_DISTANCE)
    distance = np.where(inside, _py_max(0.0, S.MOVE_MIN_DISTANCE - np.hypot(x, y)),
                        np.hypot(x - t * ex, y - t * ey))
    return success, distance


def _line(p: np.ndarray, rp: RowParams) -> tuple[np.ndarray, np.ndarray]:
    """Success and distance of make-line rows (consecutive gaps within 30 degrees of +x)."""
    ordered = p[np.arange(len(p))[:, None], rp.line_order]
    v = ordered[:, 1:] - ordered[:, :-1]  # (n, 4, 2)
    success = np.all(_angle_within(v, 0.0, S.LINE_HALF_ANGLE), axis=1)
    distance = _dist_to_wedge(v, math.cos(0.0), math.sin(0.0), S.LINE_HALF_ANGLE, math.inf)
    return success, _sum_columns(distance)


def _pile(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Success and distance of put-pile rows (every ball near the centroid)."""
    r = np.linalg.norm(p - p.mean(axis=1, keepdims=True), axis=-1)  # (n, 5)
    success = np.all(r <= S.PILE_RADIUS, axis=1)
    return success, np.maximum(r - S.PILE_RADIUS, 0.0).sum(axis=1)


def _quadrants(offsets: np.ndarray) -> np.ndarray:
    """:func:`S._quadrant` of every offset (0 where the angle is not finite)."""
    angle = np.arctan2(offsets[..., 1], offsets[..., 0])
    angle = np.where(np.isfinite(angle), angle, math.pi / 4)  # NaN rows fail the ring test anyway
    quadrant = (np.remainder(angle, 2 * math.pi) // (math.pi / 2)).astype(np.intp) % S.CIRCLE_QUADRANTS
    near = np.zeros(angle.shape, dtype=bool)
    for boundary in _QUADRANT_BOUNDARIES:
        near |= np.abs(angle - boundary) <= REFINE_TOLERANCE
    for index in zip(*np.nonzero(near)):
        quadrant[index] = S._quadrant(offsets[index])
    return quadrant


def _ring_sector_distances(offsets: np.ndarray) -> np.ndarray:
    """``(..., 4)``: :func:`S._dist_to_ring_quadrant` of every offset to every quadrant."""
    lo, hi = S.CIRCLE_RING
    x, y = offsets[..., 0], offsets[..., 1]
    r = np.hypot(x, y)
    radial = _py_max(_py_max(0.0, lo - r), r - hi)
    out = []
    for q in range(S.CIRCLE_QUADRANTS):
        a0 = q * math.pi / 2
        inside = _angle_off(offsets, a0 + math.pi / 4) <= math.pi / 4
        best = np.full(r.shape, math.inf)
        for edge in (a0, a0 + math.pi / 2):
            ex, ey = math.cos(edge), math.sin(edge)
            t = _py_min(_py_max(x * ex + y * ey, lo), hi)
            best = _py_min(best, np.hypot(x - t * ex, y - t * ey))
        out.append(np.where(inside, radial, best))
    return np.stack(out, axis=-1)


def _circle(p: np.ndarray, rp: RowParams) -> tuple[np.ndarray, np.ndarray]:
    """Success and distance of make-circle rows (ring around the centre ball, all quadrants)."""
    rows = np.arange(len(p))
    offsets = p[rows[:, None], _RING_OTHERS[rp.circle_centre]] - p[rows, rp.circle_centre][:, None]
    lo, hi = S.CIRCLE_RING
    radii = np.linalg.norm(offsets, axis=-1)
    in_ring = np.all((radii >= lo) & (radii <= hi), axis=1)
    occupied = np.bitwise_or.reduce(1 << _quadrants(offsets), axis=1)
    success = in_ring & (occupied == (1 << S.CIRCLE_QUADRANTS) - 1)
    cost = _ring_sector_distances(offsets)  # (n, 4 balls, 4 quadrants)
    sums = cost[:, np.arange(S.CIRCLE_QUADRANTS), _QUADRANT_PERMUTATIONS].sum(axis=-1)  # (n, 24)
    distance = sums[:, 0]
    for k in range(1, sums.shape[1]):
        distance = _py_min(distance, sums[:, k])
    return success, distance


def _family_scores(family: str, p: np.ndarray, start: np.ndarray, rp: RowParams) -> tuple[np.ndarray, np.ndarray]:
    if family in ("relation", "sequential_move"):
        return _relations(p, rp)
    if family == "one_step_move":
        return _move(p, start, rp)
    if family == "make_line":
        return _line(p, rp)
    if family == "put_pile":
        return _pile(p)
    return _circle(p, rp)


# ---------------------------------------------------------------------------- batch outcome
def outcome_arrays(
    tasks: Sequence[Task], states: np.ndarray, next_states: np.ndarray, starts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Success ``(N,)`` and reward ``(N,)`` of a batch, as :func:`S.reward_terms` per row.

    ``states``, ``next_states`` and ``starts`` (the progress records: episode start states)
    are float64 ``(N, 10)`` arrays.
    """
    n = len(tasks)
    success = np.zeros(n, dtype=bool)
    reward = np.zeros(n, dtype=np.float64)
    if n == 0:
        return success, reward
    params = RowParams.of(tasks)
    p, next_p, start_p = (a.reshape(n, N_BALLS, 2) for a in (states, next_states, starts))
    with np.errstate(invalid="ignore", over="ignore"):
        for code, family in enumerate(FAMILIES):
            rows = np.flatnonzero(params.family == code)
            if not len(rows):
                continue
            rp = params.take(rows)
            _, before = _family_scores(family, p[rows], start_p[rows], rp)
            ok, after = _family_scores(family, next_p[rows], start_p[rows], rp)
            shaping = S.SHAPING_SCALE * (before - after)
            success[rows] = ok
            reward[rows] = shaping + np.where(ok, S.SUCCESS_BONUS, 0.0)
    return success, reward
