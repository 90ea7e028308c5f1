"""Success tests, task distances and rewards of CLEVR-Robot: pure functions of state vectors.

Every function reads ball centres through :func:`~imaginebench.domains.clevr.physics.positions`
(state layout ``[red_x, red_y, blue_x, blue_y, ...]``, one (x, y) pair per ball), so the same
code scores live episodes, stored real rollouts and imagined rollouts.

Each task family has a *success test* (exactly the rule of docs/benchmark.md §3.1) and a *task distance*: a
length that is zero on the success set (so success implies distance 0; the converse fails
only on the set's boundary) and grows with how far the balls are from it.  The
reward of a transition is ``SHAPING_SCALE * (distance before - distance after)`` plus
``SUCCESS_BONUS`` when the next state succeeds.

Families (``Task.family``) and their ``Task.params``:

===================  ==============================================  =====
family               params                                          level
===================  ==============================================  =====
``relation``         ``goals``: one ``(ball, direction, anchor)``    train
``one_step_move``    ``ball``, ``direction``                         easy
``sequential_move``  ``goals``: two or three relation triples        hard
``make_line``        ``order``: colours from left to right           hard
``put_pile``         (none)                                          hard
``make_circle``      ``centre``: the colour in the middle            hard
===================  ==============================================  =====

Sequential-move success is the conjunction of its relation sub-goals **at one moment**, in any
order of achievement (docs/benchmark.md §3.1: "all satisfied at once"; the original benchmark's check does the
same on the final state). "Sequential" names how an agent gets there — one relation after the
other, as the "first …, then …" phrasings and the expert do — not an extra order test: the last
sub-goal achieved can undo an earlier one, so holding all at once is the hard part. Chance
success of the two-goal tasks is about 5% (``notes/clevr_calibration.md``).
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Mapping

import numpy as np

from imaginebench.domains.clevr.layout import BALL_RADIUS, COLOURS, positions

# ---------------------------------------------------------------------------- thresholds
RELATION_ANGLES: Mapping[str, float] = {
    "right": 0.0,
    "behind": math.pi / 2,
    "left": math.pi,
    "front": -math.pi / 2,
}
"""Direction of each spatial relation (and of each one-step move), as an angle from +x."""
RELATIONS: tuple[str, ...] = ("left", "right", "front", "behind")
"""The four relation/move directions in task order."""
RELATION_HALF_ANGLE = math.pi / 4
"""A relation holds when the angle of (ball - anchor) is within 45 degrees of its direction."""
RELATION_MAX_DISTANCE = 0.39
"""...and the two centres are closer than this."""
MOVE_MIN_DISTANCE = 0.05
"""A one-step move succeeds when the named ball moved at least this far..."""
MOVE_HALF_ANGLE = math.radians(67.5)
"""...and its displacement lies within 67.5 degrees of the named direction."""
LINE_HALF_ANGLE = math.radians(30.0)
"""make-line: each consecutive displacement (next colour minus previous) within 30 degrees of +x."""
PILE_RADIUS = 0.15
"""put-pile: every ball centre within this distance of the five balls' centroid."""
CIRCLE_RING = (2 * BALL_RADIUS, 0.3)
"""make-circle: every other ball's distance to the centre ball lies in this closed interval..."""
CIRCLE_QUADRANTS = 4
"""...and the other balls occupy all four quadrants around the centre ball (table axes)."""
SHAPING_SCALE = 1.0
"""Reward per unit decrease of the task distance."""
SUCCESS_BONUS = 1.0
"""Reward added on a transition whose next state succeeds."""

BALL_INDEX: Mapping[str, int] = {c: i for i, c in enumerate(COLOURS)}


# ---------------------------------------------------------------------------- geometry
def _wrap(angle: float) -> float:
    """Angle folded into (-pi, pi]."""
    return math.atan2(math.sin(angle), math.cos(angle))


def _angle_off(v: tuple[float, float] | np.ndarray, direction: float) -> float:
    """Absolute angle in [0, pi] between vector ``v`` and the direction ``direction``."""
    return abs(_wrap(math.atan2(v[1], v[0]) - direction))


def _rotate(v: tuple[float, float] | np.ndarray, angle: float) -> tuple[float, float]:
    """``v`` rotated by ``-angle`` (into the frame whose +x is ``angle``)."""
    c, s = math.cos(angle), math.sin(angle)
    return c * v[0] + s * v[1], -s * v[0] + c * v[1]


def _dist_to_wedge(v: tuple[float, float] | np.ndarray, direction: float, half_angle: float, max_len: float) -> float:
    """Distance from point ``v`` to the wedge of radius ``max_len`` (may be inf) around ``direction``.

    The wedge ``{r * u(t) : 0 <= r <= max_len, |t - direction| <= half_angle}`` is convex for
    ``half_angle <= pi/2``; outside its angle the nearest point lies on an edge segment.
    """
    x, y = _rotate(v, direction)
    if abs(math.atan2(y, x)) <= half_angle:
        return max(0.0, math.hypot(x, y) - max_len)
    ex, ey = math.cos(half_angle), math.copysign(math.sin(half_angle), y)
    t = min(max(x * ex + y * ey, 0.0), max_len)
    return math.hypot(x - t * ex, y - t * ey)


def _ball(name_or_index: str | int) -> int:
    return BALL_INDEX[name_or_index] if isinstance(name_or_index, str) else int(name_or_index)


def _offset(state: np.ndarray, ball: str | int, other: str | int, start: np.ndarray | None = None) -> tuple[float, float]:
    """``ball``'s centre minus ``other``'s (or minus ``ball``'s centre in ``start``), as floats.

    The same arithmetic as subtracting rows of :func:`positions` (in the state's own dtype),
    read entry by entry: two-element array operations cost more than the maths.
    """
    s = state if isinstance(state, np.ndarray) and state.ndim == 1 else np.asarray(state).reshape(-1)
    i = 2 * _ball(ball)
    if start is None:
        j, b = 2 * _ball(other), s
    else:
        j, b = i, start if isinstance(start, np.ndarray) and start.ndim == 1 else np.asarray(start).reshape(-1)
    return float(s[i] - b[j]), float(s[i + 1] - b[j + 1])


# ---------------------------------------------------------------------------- relation
def relation_holds(state: np.ndarray, ball: str | int, direction: str, anchor: str | int) -> bool:
    """``ball`` lies in ``direction``'s 90-degree sector of ``anchor`` and closer than 0.39."""
    v = _offset(state, ball, anchor)
    return bool(
        _angle_off(v, RELATION_ANGLES[direction]) <= RELATION_HALF_ANGLE
        and math.hypot(v[0], v[1]) < RELATION_MAX_DISTANCE
    )


def relation_distance(state: np.ndarray, ball: str | int, direction: str, anchor: str | int) -> float:
    """Distance from ``ball`` to the success sector around ``anchor`` (0 inside it)."""
    v = _offset(state, ball, anchor)
    return _dist_to_wedge(v, RELATION_ANGLES[direction], RELATION_HALF_ANGLE, RELATION_MAX_DISTANCE)


# ---------------------------------------------------------------------------- one-step move
def move_holds(start: np.ndarray, state: np.ndarray, ball: str | int, direction: str) -> bool:
    """``ball`` moved at least 0.05 from ``start`` and within 67.5 degrees of ``direction``."""
    d = _offset(state, ball, ball, start)
    return bool(
        math.hypot(d[0], d[1]) >= MOVE_MIN_DISTANCE
        and _angle_off(d, RELATION_ANGLES[direction]) <= MOVE_HALF_ANGLE
    )


def move_distance(start: np.ndarray, state: np.ndarray, ball: str | int, direction: str) -> float:
    """Distance from ``ball``'s displacement to the success set of the move.

    The set ``{d : |d| >= 0.05, angle(d, direction) <= 67.5 deg}`` is a wedge with a disk cut
    out; outside the wedge's angle the nearest point lies on an edge ray beyond the disk.
    """
    d = _offset(state, ball, ball, start)
    x, y = _rotate(d, RELATION_ANGLES[direction])
    if abs(math.atan2(y, x)) <= MOVE_HALF_ANGLE:
        return max(0.0, MOVE_MIN_DISTANCE - math.hypot(x, y))
    ex, ey = math.cos(MOVE_HALF_ANGLE), math.copysign(math.sin(MOVE_HALF_ANGLE), y)
    t = max(x * ex + y * ey, MOVE_MIN_DISTANCE)
    return math.hypot(x - t * ex, y - t * ey)


# ---------------------------------------------------------------------------- make-line
def line_holds(state: np.ndarray, order: tuple[str, ...] = COLOURS) -> bool:
    """Each consecutive displacement (next ball minus previous, in ``order``) within 30 deg of +x."""
    p = positions(state)[[_ball(c) for c in order]]
    return all(_angle_off(v, 0.0) <= LINE_HALF_ANGLE for v in np.diff(p, axis=0))


def line_distance(state: np.ndarray, order: tuple[str, ...] = COLOURS) -> float:
    """Sum over consecutive pairs of the next ball's distance to the previous ball's +x cone."""
    p = positions(state)[[_ball(c) for c in order]]
    return float(sum(_dist_to_wedge(v, 0.0, LINE_HALF_ANGLE, math.inf) for v in np.diff(p, axis=0)))


# ---------------------------------------------------------------------------- put-pile
def pile_holds(state: np.ndarray) -> bool:
    """Every ball centre within ``PILE_RADIUS`` of the centroid of the five balls."""
    p = positions(state)
    return bool(np.all(np.linalg.norm(p - p.mean(axis=0), axis=1) <= PILE_RADIUS))


def pile_distance(state: np.ndarray) -> float:
    """Sum over balls of how far each lies outside the pile radius around the centroid."""
    p = positions(state)
    r = np.linalg.norm(p - p.mean(axis=0), axis=1)
    return float(np.maximum(r - PILE_RADIUS, 0.0).sum())


# ---------------------------------------------------------------------------- make-circle
def _quadrant(v: np.ndarray) -> int:
    """0 right-behind, 1 left-behind, 2 left-front, 3 right-front (angle from +x, CCW)."""
    return int(math.atan2(v[1], v[0]) % (2 * math.pi) // (math.pi / 2)) % CIRCLE_QUADRANTS


def _ring_offsets(state: np.ndarray, centre: str | int) -> np.ndarray:
    p = positions(state)
    c = _ball(centre)
    return np.delete(p, c, axis=0) - p[c]


def circle_holds(state: np.ndarray, centre: str | int = "green") -> bool:
    """The other four balls lie in the ring around ``centre`` and occupy all four quadrants."""
    lo, hi = CIRCLE_RING
    offsets = _ring_offsets(state, centre)
    radii = np.linalg.norm(offsets, axis=1)
    if not np.all((radii >= lo) & (radii <= hi)):
        return False
    return len({_quadrant(v) for v in offsets}) == CIRCLE_QUADRANTS


def _dist_to_ring_quadrant(v: np.ndarray, q: int) -> float:
    """Distance from ``v`` to the closed ring sector of quadrant ``q``."""
    lo, hi = CIRCLE_RING
    r = math.hypot(v[0], v[1])
    a0 = q * math.pi / 2
    if _angle_off(v, a0 + math.pi / 4) <= math.pi / 4:
        return max(0.0, lo - r, r - hi)
    best = math.inf
    for edge in (a0, a0 + math.pi / 2):  # nearest point lies on a radial edge segment
        ex, ey = math.cos(edge), math.sin(edge)
        t = min(max(v[0] * ex + v[1] * ey, lo), hi)
        best = min(best, math.hypot(v[0] - t * ex, v[1] - t * ey))
    return best


def circle_distance(state: np.ndarray, centre: str | int = "green") -> float:
    """Smallest total distance of the other balls to distinct ring quadrants (best assignment)."""
    offsets = _ring_offsets(state, centre)
    cost = np.array([[_dist_to_ring_quadrant(v, q) for q in range(CIRCLE_QUADRANTS)] for v in offsets])
    rows = np.arange(CIRCLE_QUADRANTS)
    return float(min(cost[rows, list(perm)].sum() for perm in itertools.permutations(rows)))


# ---------------------------------------------------------------------------- dispatch
def task_success(family: str, params: Mapping[str, Any], state: np.ndarray, start: np.ndarray) -> bool:
    """Whether a task of ``family`` with ``params`` holds in ``state`` (``start``: episode start)."""
    if family in ("relation", "sequential_move"):
        return all(relation_holds(state, *goal) for goal in params["goals"])
    if family == "one_step_move":
        return move_holds(start, state, params["ball"], params["direction"])
    if family == "make_line":
        return line_holds(state, params["order"])
    if family == "put_pile":
        return pile_holds(state)
    if family == "make_circle":
        return circle_holds(state, params["centre"])
    raise ValueError(f"Unknown CLEVR task family {family!r}.")


def task_distance(family: str, params: Mapping[str, Any], state: np.ndarray, start: np.ndarray) -> float:
    """The task distance of ``state`` (0 on the success set, up to its boundary)."""
    if family in ("relation", "sequential_move"):
        return float(sum(relation_distance(state, *goal) for goal in params["goals"]))
    if family == "one_step_move":
        return move_distance(start, state, params["ball"], params["direction"])
    if family == "make_line":
        return line_distance(state, params["order"])
    if family == "put_pile":
        return pile_distance(state)
    if family == "make_circle":
        return circle_distance(state, params["centre"])
    raise ValueError(f"Unknown CLEVR task family {family!r}.")


def success_and_distance(family: str, params: Mapping[str, Any], state: np.ndarray,
                         start: np.ndarray) -> tuple[bool, float]:
    """``(task_success, task_distance)`` of ``state`` in one pass (each relation's offset read once)."""
    if family in ("relation", "sequential_move"):
        holds, total = True, 0.0
        for ball, direction, anchor in params["goals"]:
            v = _offset(state, ball, anchor)
            angle = RELATION_ANGLES[direction]
            holds = holds and (_angle_off(v, angle) <= RELATION_HALF_ANGLE
                               and math.hypot(v[0], v[1]) < RELATION_MAX_DISTANCE)
            total += _dist_to_wedge(v, angle, RELATION_HALF_ANGLE, RELATION_MAX_DISTANCE)
        return holds, float(total)
    return task_success(family, params, state, start), task_distance(family, params, state, start)


def reward_terms(
    family: str, params: Mapping[str, Any], state: np.ndarray, next_state: np.ndarray, start: np.ndarray
) -> tuple[bool, dict[str, float]]:
    """Success of ``next_state`` and the named reward terms of ``state -> next_state``."""
    before = task_distance(family, params, state, start)
    after = task_distance(family, params, next_state, start)
    success = task_success(family, params, next_state, start)
    return success, terms_from(before, after, success)


def terms_from(before: float, after: float, success: bool) -> dict[str, float]:
    """The reward terms of a transition from its task distances before and after and its success."""
    return {"shaping": SHAPING_SCALE * (before - after), "success_bonus": SUCCESS_BONUS if success else 0.0}
