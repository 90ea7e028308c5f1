"""Success tests, task distances and rewards of LIBERO-v0: pure functions of 44-dim states.

Thresholds (docs/benchmark.md §3.4, checked against the scene's measured geometry, :mod:`.layout`):

* **reach X** — the end effector within :data:`REACH_RADIUS` (0.05) of X's origin.
* **pick X** — the end effector within :data:`PICK_RADIUS` (0.05) of X's origin, and X lifted:
  its origin at least :data:`LIFT_HEIGHT` (0.05) above its resting height.
* **X in the basket** (place, pick-and-place, sequential) — X's origin within
  :data:`IN_BASKET_RADIUS` (0.08, xy) of the basket's origin and between
  :data:`IN_BASKET_Z` = (−0.02, 0.13) above it.  The first draft's 0.14 (xy) and 0.155–0.22 (z) do not
  fit this scene: the basket's inside is only ±0.062 × ±0.067 (an origin 0.14 away is outside
  the basket, beyond its wall), and the basket's origin sits 0.005 below the floor with its inner
  floor 0.021 above that, so an object resting inside has its origin 0.03 (cream cheese), 0.06
  (soup) or 0.095 (dressing) above the basket's origin.  0.13 is below the rim (0.146): an object
  held above the rim is not in; 0.08 lets an origin reach the inner corners (0.091 away) less
  the smallest half-width of an object (~0.018).
* **X next to Y** — X resting on the floor (origin at most :data:`REST_TOLERANCE` above its
  resting height), not in the basket, with its origin within :data:`NEXT_TO_RADIUS` (0.12, xy)
  of Y's.  Objects touch at 0.06–0.08 centre distance; at the start they are at least 0.15 apart.
* **X aside** (pick and place aside) — X has been lifted at some step (its origin
  :data:`LIFT_HEIGHT` above its resting height; a latch in the progress record) and is now
  resting on the floor, not in the basket, its origin moved more than :data:`ASIDE_DISTANCE`
  (0.07, xy) from where the episode started it (the progress record keeps the start).  Without
  the lift, an arm that knocks the standing bottle over would count: it then lies more than
  0.07 from its start (uniform random actions did so in 3 of 10 calibration episodes).
* **X out of the basket** — X resting on the floor with its origin more than
  :data:`OUT_RADIUS` (0.15, xy) from the basket's.  The first draft's "~0.35–0.45" was the distance
  of the original's objects from their basket at the start; here 0.15 already puts the whole
  object past the basket's outer wall (0.085 + the object's half-width + margin), and the
  objects' start regions are 0.30–0.55 from the basket.
* **sequential** (two or all three objects into the basket) — every named object has been in
  the basket at some step (a latch per object in the progress record; each named object is
  checked, none twice).

Progress record (:data:`PROGRESS_LAYOUT`): the xy of each object at the episode's start (6), then
one latch per object that has been in the basket (3), then one per object that has been lifted (3).

Reward of a transition = ``SHAPING_SCALE * (distance(s) - distance(s'))`` (0 after a success) +
``SUCCESS_BONUS`` when ``s'`` succeeds.  The distance (metres) is the end effector's distance to
the object it must act on next (beyond :data:`APPROACH_RADIUS`) plus the task's own distance
beyond its threshold (for sequential tasks: summed over the objects not yet latched).

The per-row functions are the reference; the section at the end repeats them as array code over
``(n, 44)`` rows (``*_rows``, :func:`outcome_rows`) for batches of imagined transitions, with the
same answers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from imaginebench.domains.libero import layout as L

# ---------------------------------------------------------------------------- thresholds
REACH_RADIUS = 0.05
PICK_RADIUS = 0.05
LIFT_HEIGHT = 0.05
IN_BASKET_RADIUS = 0.08
IN_BASKET_Z = (-0.02, 0.13)
REST_TOLERANCE = 0.02
NEXT_TO_RADIUS = 0.12
ASIDE_DISTANCE = 0.07
OUT_RADIUS = 0.15

# ---------------------------------------------------------------------------- reward
SHAPING_SCALE = 1.0
SUCCESS_BONUS = 1.0
APPROACH_RADIUS = 0.02
BASKET_TARGET_HEIGHT = 0.06
"""The in-basket distance is measured to this point above the basket's origin."""

PROGRESS_LAYOUT: tuple[str, ...] = (
    *(f"{o}_start_{c}" for o in L.OBJECTS for c in ("x", "y")),
    *(f"{o}_placed" for o in L.OBJECTS),
    *(f"{o}_lifted" for o in L.OBJECTS),
)
PROGRESS_DIM = len(PROGRESS_LAYOUT)
LATCH_START = 2 * len(L.OBJECTS)
LIFT_LATCH_START = 3 * len(L.OBJECTS)

Params = Mapping[str, Any]


# ---------------------------------------------------------------------------- predicates
def _dist(a: np.ndarray, b: np.ndarray) -> float:
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return math.sqrt(float(d @ d))


def _beyond(value: float, radius: float) -> float:
    return max(0.0, value - radius)


def eef_distance(s: np.ndarray, obj: str) -> float:
    return _dist(L.eef(s), L.pos(s, obj))


def lifted(s: np.ndarray, obj: str) -> bool:
    return float(L.pos(s, obj)[2]) >= L.REST_Z[obj] + LIFT_HEIGHT


def picked(s: np.ndarray, obj: str) -> bool:
    return eef_distance(s, obj) <= PICK_RADIUS and lifted(s, obj)


def in_basket(s: np.ndarray, obj: str) -> bool:
    o, b = L.pos(s, obj), L.pos(s, "basket")
    dz = float(o[2] - b[2])
    return L.xy_distance(o, b) <= IN_BASKET_RADIUS and IN_BASKET_Z[0] <= dz <= IN_BASKET_Z[1]


def resting(s: np.ndarray, obj: str) -> bool:
    """On the floor: the origin no higher than its resting height plus a tolerance (a bottle that
    has fallen over lies lower and still counts)."""
    return float(L.pos(s, obj)[2]) <= L.REST_Z[obj] + REST_TOLERANCE


def start_xy(progress: np.ndarray, obj: str) -> np.ndarray:
    i = 2 * L.OBJECTS.index(obj)
    return np.asarray(progress[i:i + 2], dtype=np.float64)


def latched(progress: np.ndarray, obj: str) -> bool:
    return bool(progress[LATCH_START + L.OBJECTS.index(obj)] >= 0.5)


def was_lifted(progress: np.ndarray, obj: str) -> bool:
    return bool(progress[LIFT_LATCH_START + L.OBJECTS.index(obj)] >= 0.5)


def basket_target(s: np.ndarray) -> np.ndarray:
    return L.pos(s, "basket") + np.array([0.0, 0.0, BASKET_TARGET_HEIGHT])


def _approach(s: np.ndarray, obj: str) -> float:
    return _beyond(eef_distance(s, obj), APPROACH_RADIUS)


# ---------------------------------------------------------------------------- rules: (success, distance)
def _reach(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[bool, float]:
    d = eef_distance(s, p["objects"][0])
    return d <= REACH_RADIUS, _beyond(d, REACH_RADIUS)


def _pick(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[bool, float]:
    obj = p["objects"][0]
    deficit = max(0.0, L.REST_Z[obj] + LIFT_HEIGHT - float(L.pos(s, obj)[2]))
    return picked(s, obj), _beyond(eef_distance(s, obj), PICK_RADIUS) + deficit


def _to_basket(s: np.ndarray, obj: str) -> float:
    return 0.0 if in_basket(s, obj) else _dist(L.pos(s, obj), basket_target(s))


def _place(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[bool, float]:
    obj = p["objects"][0]
    if in_basket(s, obj):
        return True, 0.0
    return False, _approach(s, obj) + _to_basket(s, obj)


def _next_to(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[bool, float]:
    obj, ref = p["objects"][0], p["reference"]
    d = L.xy_distance(L.pos(s, obj), L.pos(s, ref))
    ok = d <= NEXT_TO_RADIUS and resting(s, obj) and not in_basket(s, obj)
    return ok, _approach(s, obj) + _beyond(d, NEXT_TO_RADIUS) + (0.0 if resting(s, obj) else
                                                                  float(L.pos(s, obj)[2]) - L.REST_Z[obj])


def _aside(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[bool, float]:
    obj = p["objects"][0]
    moved = L.xy_distance(L.pos(s, obj), start_xy(progress, obj))
    up = was_lifted(progress, obj)
    ok = up and moved > ASIDE_DISTANCE and resting(s, obj) and not in_basket(s, obj)
    height = 0.0 if resting(s, obj) else float(L.pos(s, obj)[2]) - L.REST_Z[obj]
    lift_deficit = 0.0 if up else max(0.0, L.REST_Z[obj] + LIFT_HEIGHT - float(L.pos(s, obj)[2]))
    return ok, _approach(s, obj) + max(0.0, ASIDE_DISTANCE - moved) + height + lift_deficit


def _out_of_basket(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[bool, float]:
    obj = p["objects"][0]
    d = L.xy_distance(L.pos(s, obj), L.pos(s, "basket"))
    ok = d > OUT_RADIUS and resting(s, obj)
    height = 0.0 if resting(s, obj) else float(L.pos(s, obj)[2]) - L.REST_Z[obj]
    return ok, _approach(s, obj) + max(0.0, OUT_RADIUS - d) + height


def _sequential(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[bool, float]:
    todo = [o for o in p["objects"] if not latched(progress, o)]
    if not todo:
        return True, 0.0
    return False, _approach(s, todo[0]) + sum(_to_basket(s, o) for o in todo)


RULES: Mapping[str, Callable[[Params, np.ndarray, np.ndarray], tuple[bool, float]]] = {
    "reach": _reach,
    "pick": _pick,
    "place": _place,
    "pick_place": _place,
    "next_to": _next_to,
    "aside": _aside,
    "out_of_basket": _out_of_basket,
    "sequential": _sequential,
}
"""``rule(params, state, progress) -> (success, distance)`` of each family."""
FAMILIES: tuple[str, ...] = tuple(RULES)


# ---------------------------------------------------------------------------- progress and dispatch
def advance_progress(progress: np.ndarray, next_state: np.ndarray) -> np.ndarray:
    """The progress record after ``next_state``: latch every object now in the basket, and every
    object now lifted."""
    p = np.array(progress, dtype=np.float64, copy=True).reshape(PROGRESS_DIM)
    for i, obj in enumerate(L.OBJECTS):
        if p[LATCH_START + i] < 0.5 and in_basket(next_state, obj):
            p[LATCH_START + i] = 1.0
        if p[LIFT_LATCH_START + i] < 0.5 and lifted(next_state, obj):
            p[LIFT_LATCH_START + i] = 1.0
    return p


def initial_progress(s0: np.ndarray) -> np.ndarray:
    """The record at the start of an episode: the objects' start xy; the latch counts ``s0``."""
    p = np.zeros(PROGRESS_DIM)
    for i, obj in enumerate(L.OBJECTS):
        p[2 * i:2 * i + 2] = L.pos(s0, obj)[:2]
    return advance_progress(p, s0)


def evaluate(family: str, params: Params, s: np.ndarray, progress: np.ndarray) -> tuple[bool, float]:
    """``(success, distance)`` of state ``s`` with the (already advanced) progress record."""
    if family not in RULES:
        raise ValueError(f"Unknown LIBERO-v0 task family {family!r}; valid: {', '.join(FAMILIES)}.")
    ok, d = RULES[family](params, s, progress)
    return bool(ok), float(d)


def reward_terms(
    family: str, params: Params, state: np.ndarray, next_state: np.ndarray, progress: np.ndarray
) -> tuple[bool, np.ndarray, dict[str, float]]:
    """Success of ``next_state``, the advanced progress record and the named reward terms."""
    s = np.asarray(state, dtype=np.float64)
    ns = np.asarray(next_state, dtype=np.float64)
    p = np.asarray(progress, dtype=np.float64).reshape(PROGRESS_DIM)
    next_p = advance_progress(p, ns)
    _, before = evaluate(family, params, s, p)
    success, after = evaluate(family, params, ns, next_p)
    if success:
        after = 0.0
    return success, next_p, {
        "shaping": SHAPING_SCALE * (before - after),
        "success_bonus": SUCCESS_BONUS if success else 0.0,
    }


# ============================================================================ array versions
# The rules above over the rows of an ``(n, 44)`` array: the imagination stage's honest filter
# scores large batches of imagined transitions, where a Python call per row dominates.  Each
# function performs its per-row counterpart's float operations in the same order, so that the
# answers are the per-row ones bit for bit:
#
# * sums run left to right as written above (``sum`` over the objects still to do adds a 0.0
#   for each latched one, which leaves the sum unchanged: its terms are never -0.0);
#   ``x @ y`` of two 3-vectors is the sequential sum ``((0.0 + x0*y0) + x1*y1) + x2*y2``
#   (what the BLAS ``ddot`` does for so few entries);
# * Python's ``max(0.0, v)`` is ``v if v > 0.0 else 0.0`` (:func:`_max0`): a NaN becomes 0.0,
#   which ``np.maximum`` would not do;
# * xy distances are ``np.hypot`` of the same differences, as :func:`.layout.xy_distance` takes.
#
# Two things could still differ in the last bit on some builds: a BLAS may sum a dot product in
# another order, and a numpy build may run ``hypot`` over arrays through other code than over
# one element.  A comparison with a threshold that reads such a distance (a success test, an
# in-basket test, which also decides a distance's branch and the basket latches) and lands
# within :data:`REFINE_TOLERANCE` of the threshold flags its row as *unsure*, and
# :func:`outcome_rows` recomputes that row with :func:`reward_terms`.  Non-finite states and
# records go through the same code (IEEE arithmetic is the same for numpy and Python floats),
# so they also get the per-row answers.

REFINE_TOLERANCE = 1e-9
"""A thresholded distance computed through a dot product or ``hypot`` this close to its
threshold sends its row to the per-row code."""

RowRule = Callable[[Params, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
"""``rule(params, states, progress) -> (success, distance, unsure)``, each ``(n,)``."""


def _pos_rows(s: np.ndarray, entity: str) -> np.ndarray:
    return s[:, L.pos_slice(entity)]


def _dot_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise ``a @ b`` summed as the per-row ``ddot`` sums it."""
    out = 0.0 + a[:, 0] * b[:, 0]
    for k in range(1, a.shape[1]):
        out = out + a[:, k] * b[:, k]
    return out


def _dist_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = a - b
    return np.sqrt(_dot_rows(d, d))


def _xy_distance_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise :func:`.layout.xy_distance`."""
    return np.hypot(a[:, 0] - b[:, 0], a[:, 1] - b[:, 1])


def _max0(v: np.ndarray) -> np.ndarray:
    """Python's ``max(0.0, v)`` per entry (0.0 for NaN and for ``v <= 0``)."""
    return np.where(v > 0.0, v, 0.0)


def _near(value: np.ndarray, threshold: float) -> np.ndarray:
    """Where a value that may differ from the per-row one in its last bits sits at its threshold."""
    return np.abs(value - threshold) <= REFINE_TOLERANCE


def eef_distance_rows(s: np.ndarray, obj: str) -> np.ndarray:
    """:func:`eef_distance` of every row."""
    return _dist_rows(s[:, L.EEF_POS], _pos_rows(s, obj))


def lifted_rows(s: np.ndarray, obj: str) -> np.ndarray:
    """:func:`lifted` of every row (a plain comparison of the state's own numbers: exact)."""
    return _pos_rows(s, obj)[:, 2] >= L.REST_Z[obj] + LIFT_HEIGHT


def in_basket_rows(s: np.ndarray, obj: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`in_basket` of every row, and where its xy distance sits on :data:`IN_BASKET_RADIUS`."""
    o, b = _pos_rows(s, obj), _pos_rows(s, "basket")
    dz = o[:, 2] - b[:, 2]
    d = _xy_distance_rows(o, b)
    ok = (d <= IN_BASKET_RADIUS) & (IN_BASKET_Z[0] <= dz) & (dz <= IN_BASKET_Z[1])
    return ok, _near(d, IN_BASKET_RADIUS)


def resting_rows(s: np.ndarray, obj: str) -> np.ndarray:
    """:func:`resting` of every row."""
    return _pos_rows(s, obj)[:, 2] <= L.REST_Z[obj] + REST_TOLERANCE


def _height_rows(s: np.ndarray, obj: str, rest: np.ndarray) -> np.ndarray:
    """The rules' ``0.0 if resting(s, obj) else z - REST_Z[obj]``."""
    return np.where(rest, 0.0, _pos_rows(s, obj)[:, 2] - L.REST_Z[obj])


def _lift_deficit_rows(s: np.ndarray, obj: str) -> np.ndarray:
    """The rules' ``max(0.0, REST_Z[obj] + LIFT_HEIGHT - z)``."""
    return _max0((L.REST_Z[obj] + LIFT_HEIGHT) - _pos_rows(s, obj)[:, 2])


def _approach_rows(s: np.ndarray, obj: str) -> np.ndarray:
    return _max0(eef_distance_rows(s, obj) - APPROACH_RADIUS)


def _target_distance_rows(s: np.ndarray, obj: str) -> np.ndarray:
    """The object's distance from :func:`basket_target` in every row."""
    target = _pos_rows(s, "basket") + np.array([0.0, 0.0, BASKET_TARGET_HEIGHT])
    return _dist_rows(_pos_rows(s, obj), target)


def _to_basket_rows(s: np.ndarray, obj: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_to_basket` of every row, and where its in-basket branch is unsure."""
    inside, unsure = in_basket_rows(s, obj)
    return np.where(inside, 0.0, _target_distance_rows(s, obj)), unsure


# ---------------------------------------------------------------------------- rules, rows
def _reach_rows(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = eef_distance_rows(s, p["objects"][0])
    return d <= REACH_RADIUS, _max0(d - REACH_RADIUS), _near(d, REACH_RADIUS)


def _pick_rows(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    obj = p["objects"][0]
    d = eef_distance_rows(s, obj)
    success = (d <= PICK_RADIUS) & lifted_rows(s, obj)
    return success, _max0(d - PICK_RADIUS) + _lift_deficit_rows(s, obj), _near(d, PICK_RADIUS)


def _place_rows(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    obj = p["objects"][0]
    inside, unsure = in_basket_rows(s, obj)  # outside, _to_basket is the distance to the target
    return inside, np.where(inside, 0.0, _approach_rows(s, obj) + _target_distance_rows(s, obj)), unsure


def _next_to_rows(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    obj, ref = p["objects"][0], p["reference"]
    d = _xy_distance_rows(_pos_rows(s, obj), _pos_rows(s, ref))
    rest = resting_rows(s, obj)
    inside, unsure = in_basket_rows(s, obj)
    ok = (d <= NEXT_TO_RADIUS) & rest & ~inside
    distance = (_approach_rows(s, obj) + _max0(d - NEXT_TO_RADIUS)) + _height_rows(s, obj, rest)
    return ok, distance, unsure | _near(d, NEXT_TO_RADIUS)


def _aside_rows(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    obj = p["objects"][0]
    i = L.OBJECTS.index(obj)
    moved = _xy_distance_rows(_pos_rows(s, obj), progress[:, 2 * i:2 * i + 2])
    up = progress[:, LIFT_LATCH_START + i] >= 0.5
    rest = resting_rows(s, obj)
    inside, unsure = in_basket_rows(s, obj)
    ok = up & (moved > ASIDE_DISTANCE) & rest & ~inside
    lift_deficit = np.where(up, 0.0, _lift_deficit_rows(s, obj))
    distance = ((_approach_rows(s, obj) + _max0(ASIDE_DISTANCE - moved)) + _height_rows(s, obj, rest)) + lift_deficit
    return ok, distance, unsure | _near(moved, ASIDE_DISTANCE)


def _out_of_basket_rows(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    obj = p["objects"][0]
    d = _xy_distance_rows(_pos_rows(s, obj), _pos_rows(s, "basket"))
    rest = resting_rows(s, obj)
    ok = (d > OUT_RADIUS) & rest
    distance = (_approach_rows(s, obj) + _max0(OUT_RADIUS - d)) + _height_rows(s, obj, rest)
    return ok, distance, _near(d, OUT_RADIUS)


def _sequential_rows(p: Params, s: np.ndarray, progress: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``todo`` differs per row: each named object adds its distance where it is still to do,
    and the approach is to the first such object."""
    n = len(s)
    total = np.zeros(n)
    first = np.full(n, np.nan)
    pending = np.zeros(n, dtype=bool)
    unsure = np.zeros(n, dtype=bool)
    for obj in p["objects"]:
        todo = ~(progress[:, LATCH_START + L.OBJECTS.index(obj)] >= 0.5)
        to_basket, u = _to_basket_rows(s, obj)
        total = total + np.where(todo, to_basket, 0.0)
        first = np.where(todo & ~pending, _approach_rows(s, obj), first)
        pending |= todo
        unsure |= todo & u
    return ~pending, np.where(pending, first + total, 0.0), unsure


ROW_RULES: Mapping[str, RowRule] = {
    "reach": _reach_rows,
    "pick": _pick_rows,
    "place": _place_rows,
    "pick_place": _place_rows,
    "next_to": _next_to_rows,
    "aside": _aside_rows,
    "out_of_basket": _out_of_basket_rows,
    "sequential": _sequential_rows,
}
""":data:`RULES` over rows."""


# ---------------------------------------------------------------------------- progress and reward, rows
def advance_progress_rows(progress: np.ndarray, next_states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`advance_progress` of every row (a new ``(n, PROGRESS_DIM)`` array), and where an
    in-basket latch that was still open is unsure."""
    p = np.array(progress, dtype=np.float64, copy=True)
    unsure = np.zeros(len(p), dtype=bool)
    for i, obj in enumerate(L.OBJECTS):
        open_latch = p[:, LATCH_START + i] < 0.5
        inside, u = in_basket_rows(next_states, obj)
        p[open_latch & inside, LATCH_START + i] = 1.0
        unsure |= open_latch & u
        p[(p[:, LIFT_LATCH_START + i] < 0.5) & lifted_rows(next_states, obj), LIFT_LATCH_START + i] = 1.0
    return p, unsure


def outcome_rows(
    family: str, params: Params, states: np.ndarray, next_states: np.ndarray, progress: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`reward_terms` of ``n`` transitions of one task: success ``(n,)``, total reward
    ``(n,)`` (``shaping + success_bonus``, summed as ``sum(terms.values())``) and the advanced
    progress records ``(n, PROGRESS_DIM)``.

    ``states``, ``next_states`` are float64 ``(n, 44)``, ``progress`` float64 ``(n, PROGRESS_DIM)``.
    Unsure rows (see the section comment) are recomputed with :func:`reward_terms`.
    """
    if family not in ROW_RULES:
        raise ValueError(f"Unknown LIBERO-v0 task family {family!r}; valid: {', '.join(FAMILIES)}.")
    rule = ROW_RULES[family]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # Python floats do not warn
        next_p, unsure = advance_progress_rows(progress, next_states)
        _, before, unsure_before = rule(params, states, progress)
        success, after, unsure_after = rule(params, next_states, next_p)
        after = np.where(success, 0.0, after)
        reward = (0.0 + SHAPING_SCALE * (before - after)) + np.where(success, SUCCESS_BONUS, 0.0)
    for i in np.flatnonzero(unsure | unsure_before | unsure_after):
        ok, next_p[i], terms = reward_terms(family, params, states[i], next_states[i], progress[i])
        success[i], reward[i] = ok, sum(terms.values())
    return success, reward, next_p
