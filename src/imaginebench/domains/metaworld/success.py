"""Success tests, task distances and rewards of MetaWorld-v0: pure functions of 91-dim states.

Every rule reads the state through :mod:`.layout` and uses Meta-World's own threshold for the
task (the constants below name the metaworld 3.1.1 source line they come from:
``metaworld/envs/sawyer_<task>_v3.py``, ``evaluate_state``).  Where metaworld reads something the
91 numbers do not hold, the rule derives it from the slots:

* **tool centre point** — reach and reach-wall measure the distance from the midpoint of the two
  finger tips (``tcp_center``); the state holds the hand body and the opening, so the rule uses
  :func:`tcp`: ``hand + TCP_OFFSET`` plus the midpoint's shift once the left finger has reached
  its limit (the hand keeps its orientation — the mocap weld holds it).
* **sites on moving parts** — the lock's ``lockStartLock``/``lockStartUnlock``, the window's
  ``handleOpenStart``/``handleCloseStart`` and the faucet's ``handleStartOpen``/``handleStartClose``
  are fixed points of the part whose pose the slot holds: ``pos + rotate(quat, offset)``.
* **nail depth** — hammer succeeds when ``NailSlideJoint`` exceeds 0.09; the nail's slide axis is
  +y and its block never moves, so the joint value is ``nail_y - NAIL_ZERO_Y``.

The agreement of these rules with metaworld's own ``info["success"]`` is measured on expert and
random episodes and published in ``notes/metaworld.md``.

Composite (staged) tasks carry a progress record ``[stages_done]`` (a latch, derived from the
states): *make-coffee* latches stage 1 when the mug is under the machine while the button is
not pressed, and succeeds when, after that, the button is pressed with the mug still in place;
*locked-door-open* latches stage 1 when the lock is open while the door is still closed, and
succeeds when, after that, the door is open.  Neither succeeds on its first stage alone.

Reward of a transition = ``SHAPING_SCALE * (distance(s) - distance(s'))`` (the distance after a
successful transition counts as 0) + ``SUCCESS_BONUS`` when ``s'`` succeeds.  Distances are in
metres: the tool centre's distance to the point it must act on (beyond ``APPROACH_RADIUS``)
plus the task's own distance beyond its threshold; staged tasks add ``STAGE_DISTANCE`` for
each stage still to do.

The per-row functions are the reference; the section at the end repeats them as array code over
``(n, 91)`` rows (``*_rows``, :func:`outcome_rows`) for batches of imagined transitions, with the
same answers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from imaginebench.domains.metaworld import layout as L

# ---------------------------------------------------------------------------- thresholds
REACH_RADIUS = 0.05
"""reach / reach-wall: ``tcp_to_target <= 0.05`` (sawyer_reach_v3.py, sawyer_reach_wall_v3.py)."""
PUSH_RADIUS = 0.05
"""push: ``target_to_obj <= self.TARGET_RADIUS`` with ``TARGET_RADIUS = 0.05`` (sawyer_push_v3.py)."""
PLACE_RADIUS = 0.07
"""pick-place, push-wall, pick-place-wall, coffee-push, soccer: ``obj_to_target <= 0.07``."""
BUTTON_RADIUS = 0.02
"""button-press: ``|target_y - button_tip_y| <= 0.02`` (sawyer_button_press_v3.py)."""
BUTTON_WALL_RADIUS = 0.03
"""button-press-wall: ``<= 0.03`` (sawyer_button_press_wall_v3.py)."""
LOCK_RADIUS = 0.02
"""door-lock (on z) and door-unlock (on x): ``obj_to_target <= 0.02``."""
DOOR_OPEN_RADIUS = 0.08
"""door-open: ``|handle_x - target_x| <= 0.08`` (sawyer_door_v3.py)."""
DOOR_CLOSE_RADIUS = 0.08
"""door-close: ``|handle - target| <= 0.08`` (sawyer_door_close_v3.py)."""
WINDOW_RADIUS = 0.05
"""window-open / window-close: ``|handle_x - target_x| <= TARGET_RADIUS (0.05)``."""
FAUCET_RADIUS = 0.07
"""faucet-open / faucet-close: ``target_to_obj <= 0.07`` (``_target_radius``)."""
COFFEE_BUTTON_RADIUS = 0.02
"""coffee-button: ``|target_y - button_y| <= 0.02`` (sawyer_coffee_button_v3.py)."""
NAIL_DEPTH = 0.09
"""hammer: ``NailSlideJoint.qpos > 0.09`` (sawyer_hammer_v3.py)."""

# ---------------------------------------------------------------------------- geometry (metaworld's model)
TCP_OFFSET = np.array([0.0, 0.0, -0.045])
"""Finger-tip midpoint minus hand position with the fingers open (the finger sites sit 0.045
below the hand when it is level; measured on the live model)."""
FINGER_GAP_OPEN = 0.1
"""Distance between the claw bodies with both finger joints at 0 (metaworld's opening is this
distance / 0.1, clipped to [0, 1])."""
LEFT_FINGER_TRAVEL = 0.03
"""The left finger stops at ``l_close = -0.03`` while the right one goes on to 0.04, so a gripper
closed further than a gap of ``FINGER_GAP_OPEN - 2 * 0.03`` has its finger midpoint shifted
toward +y by half the difference."""
LOCK_AXIS = np.array([0.0, 1.0, 0.0])
"""The lock's hinge axis in the door frame (``doorlockA.xml``)."""
LOCK_SITE_LOCK = np.array([0.09, -0.04, 0.01])
"""``lockStartLock`` in the ``lock_link`` frame (door-lock's observed point)."""
LOCK_SITE_UNLOCK = np.array([0.09, -0.04, -0.01])
"""``lockStartUnlock`` in the ``lock_link`` frame (door-unlock's observed point)."""
LOCK_UNLOCK_SHIFT = 0.1
"""door-unlock's target is ``lock_link + (0.1, -0.04, 0)``: the site must end 0.1 right of the hinge."""
DOOR_AXIS = np.array([0.0, 0.0, 1.0])
"""The door leaf's hinge axis (``doorjoint``); opening turns it to negative angles."""
DOOR_CLOSED_ANGLE = 0.15
"""locked-door-open: the door counts as closed while its leaf is turned less than this (rad)."""
WINDOW_OPEN_HANDLE = np.array([-0.04, -0.095, 0.0])
"""``handleOpenStart`` in the sash frame (window-open's observed point)."""
WINDOW_CLOSE_HANDLE = np.array([0.01, -0.095, 0.0])
"""``handleCloseStart`` in the sash frame (window-close's observed point)."""
FAUCET_OPEN_HANDLE = np.array([-0.015, -0.175, 0.0])
"""``handleStartOpen`` in the knob frame."""
FAUCET_CLOSE_HANDLE = np.array([0.015, -0.175, 0.0])
"""``handleStartClose`` in the knob frame."""
FAUCET_OBS_SHIFT = np.array([0.0, 0.0, -0.01])
"""metaworld's faucet observation is the handle site shifted by this."""
FAUCET_OPEN_SHIFT = np.array([-0.04, 0.0, 0.03])
"""faucet-open measures ``obs + (-0.04, 0, 0.03)`` against its target."""
MUG_GOAL_OFFSET = np.array([0.0, -0.22, 0.0])
"""coffee-push places the machine 0.22 behind the mug's target (make-coffee's first stage)."""
COFFEE_BUTTON_TARGET_OFFSET = np.array([0.0, -0.19, 0.3])
"""coffee-button's target, from the machine: ``buttonStart (0, -0.22, 0.3) + (0, 0.03, 0)``."""
NAIL_ZERO_Y = 0.64
"""y of ``nail_link`` at ``NailSlideJoint = 0`` (block fixed at (0.24, 0.85, 0), nail at -0.21)."""
NAIL_HEAD_OFFSET = np.array([0.0, -0.005, 0.0])
"""``nailHead`` site relative to ``nail_link``."""
HAMMER_HEAD_OFFSET = np.array([0.16, 0.0, 0.0])
"""Centre of the hammer head in the hammer frame (``HammerHead`` geom)."""

# ---------------------------------------------------------------------------- reward
SHAPING_SCALE = 1.0
"""Reward per metre of decrease of the task distance."""
SUCCESS_BONUS = 1.0
"""Reward added on a transition whose next state succeeds."""
APPROACH_RADIUS = 0.02
"""The tool centre counts as at its point of action within this distance (no shaping inside)."""
STAGE_DISTANCE = 0.3
"""Distance added for each stage of a composite task still to do."""

P_STAGES = 0
PROGRESS_DIM = 1
"""Progress record: ``[stages_done]`` (always 0 for single-stage tasks)."""

Params = Mapping[str, Any]


# ---------------------------------------------------------------------------- derived points
def tcp(s: np.ndarray) -> np.ndarray:
    """The tool centre point (midpoint of the finger tips) implied by the hand position and the
    gripper opening (fingers closing freely: symmetric, then only the right one moves)."""
    shift = max(0.0, 0.5 * (FINGER_GAP_OPEN - 2 * LEFT_FINGER_TRAVEL - 0.1 * float(s[L.GRIPPER])))
    return L.hand(s) + TCP_OFFSET + np.array([0.0, shift, 0.0])


def lock_site(s: np.ndarray, offset: np.ndarray) -> np.ndarray:
    return L.local_point(s, "lock", offset)


def door_angle(s: np.ndarray) -> float:
    """The door leaf's hinge angle (0 closed, negative open), from the handle slot's quaternion."""
    return L.angle_about(L.quat(s, "handle"), DOOR_AXIS)


def lock_unlock_shift(s: np.ndarray) -> float:
    """x of ``lockStartUnlock`` relative to the lock hinge, in the door frame (0.1 when unlocked)."""
    relative = L.quat_mul(L.quat_conj(L.quat(s, "handle")), L.quat(s, "lock"))
    return float(L.rotate(relative, LOCK_SITE_UNLOCK)[0])


def window_handle(s: np.ndarray, offset: np.ndarray) -> np.ndarray:
    return L.local_point(s, "window", offset)


def faucet_point(s: np.ndarray, opening: bool) -> np.ndarray:
    """The point faucet-open (``opening``) or faucet-close compares with its target."""
    offset = FAUCET_OPEN_HANDLE if opening else FAUCET_CLOSE_HANDLE
    point = L.local_point(s, "faucet", offset) + FAUCET_OBS_SHIFT
    return point + FAUCET_OPEN_SHIFT if opening else point


def nail_depth(s: np.ndarray) -> float:
    """``NailSlideJoint`` value implied by the nail position."""
    return float(L.pos(s, "nail")[1] - NAIL_ZERO_Y)


def mug_goal(s: np.ndarray) -> np.ndarray:
    """Where make-coffee's first stage wants the mug: under the machine's spout."""
    return L.pos(s, "coffee_machine") + MUG_GOAL_OFFSET


def coffee_button_target(s: np.ndarray) -> np.ndarray:
    return L.pos(s, "coffee_machine") + COFFEE_BUTTON_TARGET_OFFSET


def _dist(a: np.ndarray, b: np.ndarray) -> float:
    d = a - b
    return math.sqrt(float(d @ d))


def _beyond(value: float, radius: float) -> float:
    return max(0.0, value - radius)


def _approach(s: np.ndarray, point: np.ndarray) -> float:
    return _beyond(_dist(tcp(s), point), APPROACH_RADIUS)


# ---------------------------------------------------------------------------- single-stage rules
def _reach(p: Params, s: np.ndarray) -> tuple[bool, float]:
    d = _dist(tcp(s), L.goal(s))
    return d <= p["radius"], _beyond(d, p["radius"])


def _place(p: Params, s: np.ndarray) -> tuple[bool, float]:
    obj = L.pos(s, p["slot"])
    d = _dist(obj, L.goal(s))
    return d <= p["radius"], _approach(s, obj) + _beyond(d, p["radius"])


def _button(p: Params, s: np.ndarray) -> tuple[bool, float]:
    tip = L.pos(s, "button")
    d = abs(float(L.goal(s)[1] - tip[1]))
    return d <= p["radius"], _approach(s, tip) + _beyond(d, p["radius"])


def _door_lock(p: Params, s: np.ndarray) -> tuple[bool, float]:
    site = lock_site(s, LOCK_SITE_LOCK)
    d = abs(float(L.goal(s)[2] - site[2]))
    return d <= p["radius"], _approach(s, site) + _beyond(d, p["radius"])


def _door_unlock(p: Params, s: np.ndarray) -> tuple[bool, float]:
    site = lock_site(s, LOCK_SITE_UNLOCK)
    d = abs(float(L.goal(s)[0] - site[0]))
    return d <= p["radius"], _approach(s, site) + _beyond(d, p["radius"])


def _door_open(p: Params, s: np.ndarray) -> tuple[bool, float]:
    handle = L.pos(s, "handle")
    d = abs(float(handle[0] - L.goal(s)[0]))
    return d <= p["radius"], _approach(s, handle) + _beyond(d, p["radius"])


def _door_close(p: Params, s: np.ndarray) -> tuple[bool, float]:
    handle = L.pos(s, "handle")
    d = _dist(handle, L.goal(s))
    return d <= p["radius"], _approach(s, handle) + _beyond(d, p["radius"])


def _window(offset: np.ndarray) -> Callable[[Params, np.ndarray], tuple[bool, float]]:
    def rule(p: Params, s: np.ndarray) -> tuple[bool, float]:
        handle = window_handle(s, offset)
        d = abs(float(handle[0] - L.goal(s)[0]))
        return d <= p["radius"], _approach(s, handle) + _beyond(d, p["radius"])

    return rule


def _faucet(opening: bool) -> Callable[[Params, np.ndarray], tuple[bool, float]]:
    def rule(p: Params, s: np.ndarray) -> tuple[bool, float]:
        point = faucet_point(s, opening)
        d = _dist(point, L.goal(s))
        return d <= p["radius"], _approach(s, point) + _beyond(d, p["radius"])

    return rule


def _coffee_button(p: Params, s: np.ndarray) -> tuple[bool, float]:
    button = L.pos(s, "coffee_button")
    d = abs(float(L.goal(s)[1] - button[1]))
    return d <= p["radius"], _approach(s, button) + _beyond(d, p["radius"])


def _hammer(p: Params, s: np.ndarray) -> tuple[bool, float]:
    depth = nail_depth(s)
    hammer = L.pos(s, "hammer")
    head = L.local_point(s, "hammer", HAMMER_HEAD_OFFSET)
    nail_head = L.pos(s, "nail") + NAIL_HEAD_OFFSET
    distance = _approach(s, hammer) + _dist(head, nail_head) + _beyond(p["depth"], depth)
    return depth > p["depth"], distance


SINGLE_RULES: Mapping[str, Callable[[Params, np.ndarray], tuple[bool, float]]] = {
    "reach": _reach,
    "place": _place,
    "button": _button,
    "door_lock": _door_lock,
    "door_unlock": _door_unlock,
    "door_open": _door_open,
    "door_close": _door_close,
    "window_open": _window(WINDOW_OPEN_HANDLE),
    "window_close": _window(WINDOW_CLOSE_HANDLE),
    "faucet_open": _faucet(True),
    "faucet_close": _faucet(False),
    "coffee_button": _coffee_button,
    "hammer": _hammer,
}
"""Single-stage families: ``rule(params, state) -> (success, distance)``."""


# ---------------------------------------------------------------------------- composite: make-coffee
def mug_in_place(p: Params, s: np.ndarray) -> bool:
    return _dist(L.pos(s, "task_object"), mug_goal(s)) <= p["mug_radius"]


def coffee_button_pressed(p: Params, s: np.ndarray) -> bool:
    return abs(float(coffee_button_target(s)[1] - L.pos(s, "coffee_button")[1])) <= p["button_radius"]


def _make_coffee_stage(p: Params, s: np.ndarray) -> bool:
    return mug_in_place(p, s) and not coffee_button_pressed(p, s)


def _make_coffee(p: Params, s: np.ndarray, stages: float) -> tuple[bool, float]:
    mug = L.pos(s, "task_object")
    mug_off = _beyond(_dist(mug, mug_goal(s)), p["mug_radius"])
    button = L.pos(s, "coffee_button")
    press = _beyond(abs(float(coffee_button_target(s)[1] - button[1])), p["button_radius"])
    if stages < 1:
        return False, _approach(s, mug) + mug_off + STAGE_DISTANCE
    success = coffee_button_pressed(p, s) and mug_in_place(p, s)
    return success, _approach(s, button) + press + mug_off


# ---------------------------------------------------------------------------- composite: locked-door-open
def lock_open(p: Params, s: np.ndarray) -> bool:
    """The lock is turned open: door-unlock's rule, measured in the door's frame."""
    return abs(lock_unlock_shift(s) - LOCK_UNLOCK_SHIFT) <= p["lock_radius"]


def door_closed(s: np.ndarray) -> bool:
    return abs(door_angle(s)) < DOOR_CLOSED_ANGLE


def _locked_door_stage(p: Params, s: np.ndarray) -> bool:
    return lock_open(p, s) and door_closed(s)


def _locked_door_open(p: Params, s: np.ndarray, stages: float) -> tuple[bool, float]:
    handle = L.pos(s, "handle")
    open_off = _beyond(abs(float(handle[0] - L.goal(s)[0])), p["door_radius"])
    if stages < 1:
        site = lock_site(s, LOCK_SITE_UNLOCK)
        unlock_off = _beyond(abs(lock_unlock_shift(s) - LOCK_UNLOCK_SHIFT), p["lock_radius"])
        return False, _approach(s, site) + unlock_off + STAGE_DISTANCE
    return open_off == 0.0, _approach(s, handle) + open_off


STAGED_RULES: Mapping[str, tuple[Callable[[Params, np.ndarray], bool],
                                 Callable[[Params, np.ndarray, float], tuple[bool, float]]]] = {
    "make_coffee": (_make_coffee_stage, _make_coffee),
    "locked_door_open": (_locked_door_stage, _locked_door_open),
}
"""Staged families: ``(stage_latch(params, state), rule(params, state, stages_done))``."""

FAMILIES: tuple[str, ...] = (*SINGLE_RULES, *STAGED_RULES)


# ---------------------------------------------------------------------------- progress and dispatch
def initial_progress(family: str, params: Params, s0: np.ndarray) -> np.ndarray:
    """The progress record at the start of an episode (the latch counts the first state)."""
    return advance_progress(family, params, np.zeros(PROGRESS_DIM), s0)


def advance_progress(family: str, params: Params, progress: np.ndarray, next_state: np.ndarray) -> np.ndarray:
    p = np.array(progress, dtype=np.float64, copy=True).reshape(PROGRESS_DIM)
    if family in STAGED_RULES and p[P_STAGES] < 1 and STAGED_RULES[family][0](params, next_state):
        p[P_STAGES] = 1.0
    return p


def evaluate(family: str, params: Params, s: np.ndarray, progress: np.ndarray) -> tuple[bool, float]:
    """``(success, distance)`` of state ``s`` with the (already advanced) progress record."""
    if family in SINGLE_RULES:
        ok, d = SINGLE_RULES[family](params, s)
        return bool(ok), float(d)
    if family in STAGED_RULES:
        ok, d = STAGED_RULES[family][1](params, s, float(progress[P_STAGES]))
        return bool(ok), float(d)
    raise ValueError(f"Unknown MetaWorld task family {family!r}; valid: {', '.join(FAMILIES)}.")


def reward_terms(
    family: str, params: Params, state: np.ndarray, next_state: np.ndarray, progress: np.ndarray
) -> tuple[bool, np.ndarray, dict[str, float]]:
    """Success of ``next_state``, the advanced progress record and the named reward terms."""
    s = np.asarray(state, dtype=np.float64)
    ns = np.asarray(next_state, dtype=np.float64)
    p = np.asarray(progress, dtype=np.float64).reshape(PROGRESS_DIM)
    next_p = advance_progress(family, params, p, ns)
    _, before = evaluate(family, params, s, p)
    success, after = evaluate(family, params, ns, next_p)
    if success:
        after = 0.0
    return success, next_p, {
        "shaping": SHAPING_SCALE * (before - after),
        "success_bonus": SUCCESS_BONUS if success else 0.0,
    }


# ============================================================================ array versions
# The rules above over the rows of an ``(n, 91)`` array: the imagination stage's honest filter
# scores large batches of imagined transitions, where a Python call per row dominates.  Each
# function performs its per-row counterpart's float operations in the same order, so that the
# answers are the per-row ones bit for bit:
#
# * sums run left to right as written above; ``x @ y`` of two small vectors is the sequential
#   sum ``((0.0 + x0*y0) + x1*y1) + ...`` (what the BLAS ``ddot`` does for 3 and 4 entries);
# * Python's ``max(0.0, v)`` is ``v if v > 0.0 else 0.0`` (:func:`_max0`): a NaN becomes 0.0,
#   which ``np.maximum`` would not do;
# * rotations use ``np.cross`` exactly as :func:`.layout.rotate` does.
#
# Two things can still differ in the last bit: numpy's ``arctan2``/``sin``/``cos`` are not
# libm's (the door angle), and a BLAS build may sum a dot product in another order.  A success
# test or stage latch that reads such a value and lands within :data:`REFINE_TOLERANCE` of its
# threshold flags its row as *unsure*, and :func:`outcome_rows` recomputes that row with
# :func:`reward_terms`.  Non-finite states go through the same code (IEEE arithmetic is the same
# for numpy and Python floats), so they also get the per-row answers.

REFINE_TOLERANCE = 1e-9
"""A thresholded value computed through a dot product or a trigonometric function this close to
its threshold sends its row to the per-row code."""

RowRule = Callable[[Params, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
"""``rule(params, states) -> (success, distance, unsure)``, each ``(n,)``."""
StagedRowRule = Callable[[Params, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
"""``rule(params, states, stages_done) -> (success, distance, unsure)``."""
RowLatch = Callable[[Params, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``latch(params, states) -> (stage_done, unsure)``."""


def _pos_rows(s: np.ndarray, entity: str) -> np.ndarray:
    start = L.SLOTS_START + L.SLOT_SIZE * L.SLOT[entity]
    return s[:, start:start + 3]


def _quat_rows(s: np.ndarray, entity: str) -> np.ndarray:
    start = L.SLOTS_START + L.SLOT_SIZE * L.SLOT[entity] + 3
    return s[:, start:start + 4]


def _dot_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise ``a @ b`` summed as the per-row ``ddot`` sums it (``b`` may be one vector)."""
    out = 0.0 + a[:, 0] * b[..., 0]
    for k in range(1, a.shape[1]):
        out = out + a[:, k] * b[..., k]
    return out


def _dist_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = a - b
    return np.sqrt(_dot_rows(d, d))


def _max0(v: np.ndarray) -> np.ndarray:
    """Python's ``max(0.0, v)`` per entry (0.0 for NaN and for ``v <= 0``)."""
    return np.where(v > 0.0, v, 0.0)


def _near(value: np.ndarray, threshold: float) -> np.ndarray:
    """Where a value that may differ from the per-row one in its last bits sits at its threshold."""
    return np.abs(value - threshold) <= REFINE_TOLERANCE


def _none(s: np.ndarray) -> np.ndarray:
    return np.zeros(len(s), dtype=bool)


def _quat_mul_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise :func:`.layout.quat_mul`."""
    aw, ax, ay, az = a.T
    bw, bx, by, bz = b.T
    return np.stack([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ], axis=1)


def _quat_conj_rows(q: np.ndarray) -> np.ndarray:
    return np.concatenate([q[:, :1], -q[:, 1:]], axis=1)


def _rotate_rows(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise :func:`.layout.rotate` of the fixed vector ``v`` (a zero quaternion leaves it)."""
    n = _dot_rows(q, q)
    t = 2.0 * np.cross(q[:, 1:], v)
    turned = v + (q[:, :1] * t + np.cross(q[:, 1:], t)) / n[:, None]
    return np.where((n == 0.0)[:, None], v, turned)


def _local_point_rows(s: np.ndarray, entity: str, offset: np.ndarray) -> np.ndarray:
    return _pos_rows(s, entity) + _rotate_rows(_quat_rows(s, entity), offset)


def tcp_rows(s: np.ndarray) -> np.ndarray:
    """:func:`tcp` of every row."""
    shift = np.zeros((len(s), 3))
    shift[:, 1] = _max0(0.5 * (FINGER_GAP_OPEN - 2 * LEFT_FINGER_TRAVEL - 0.1 * s[:, L.GRIPPER]))
    return s[:, L.HAND] + TCP_OFFSET + shift


def door_angle_rows(s: np.ndarray) -> np.ndarray:
    """:func:`door_angle` of every row (numpy's trigonometry: may differ in the last bits)."""
    q = _quat_rows(s, "handle")
    a = 2.0 * np.arctan2(_dot_rows(q[:, 1:], DOOR_AXIS), q[:, 0])
    return np.arctan2(np.sin(a), np.cos(a))


def lock_unlock_shift_rows(s: np.ndarray) -> np.ndarray:
    """:func:`lock_unlock_shift` of every row."""
    relative = _quat_mul_rows(_quat_conj_rows(_quat_rows(s, "handle")), _quat_rows(s, "lock"))
    return _rotate_rows(relative, LOCK_SITE_UNLOCK)[:, 0]


def faucet_point_rows(s: np.ndarray, opening: bool) -> np.ndarray:
    """:func:`faucet_point` of every row."""
    offset = FAUCET_OPEN_HANDLE if opening else FAUCET_CLOSE_HANDLE
    point = _local_point_rows(s, "faucet", offset) + FAUCET_OBS_SHIFT
    return point + FAUCET_OPEN_SHIFT if opening else point


def _approach_rows(s: np.ndarray, point: np.ndarray) -> np.ndarray:
    return _max0(_dist_rows(tcp_rows(s), point) - APPROACH_RADIUS)


def _goal_rows(s: np.ndarray) -> np.ndarray:
    return s[:, L.GOAL]


# ---------------------------------------------------------------------------- single-stage rules, rows
def _reach_rows(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = _dist_rows(tcp_rows(s), _goal_rows(s))
    return d <= p["radius"], _max0(d - p["radius"]), _near(d, p["radius"])


def _place_rows(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    obj = _pos_rows(s, p["slot"])
    d = _dist_rows(obj, _goal_rows(s))
    return d <= p["radius"], _approach_rows(s, obj) + _max0(d - p["radius"]), _near(d, p["radius"])


def _button_rows(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    tip = _pos_rows(s, "button")
    d = np.abs(_goal_rows(s)[:, 1] - tip[:, 1])
    return d <= p["radius"], _approach_rows(s, tip) + _max0(d - p["radius"]), _none(s)


def _door_lock_rows(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    site = _local_point_rows(s, "lock", LOCK_SITE_LOCK)
    d = np.abs(_goal_rows(s)[:, 2] - site[:, 2])
    return d <= p["radius"], _approach_rows(s, site) + _max0(d - p["radius"]), _near(d, p["radius"])


def _door_unlock_rows(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    site = _local_point_rows(s, "lock", LOCK_SITE_UNLOCK)
    d = np.abs(_goal_rows(s)[:, 0] - site[:, 0])
    return d <= p["radius"], _approach_rows(s, site) + _max0(d - p["radius"]), _near(d, p["radius"])


def _door_open_rows(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    handle = _pos_rows(s, "handle")
    d = np.abs(handle[:, 0] - _goal_rows(s)[:, 0])
    return d <= p["radius"], _approach_rows(s, handle) + _max0(d - p["radius"]), _none(s)


def _door_close_rows(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    handle = _pos_rows(s, "handle")
    d = _dist_rows(handle, _goal_rows(s))
    return d <= p["radius"], _approach_rows(s, handle) + _max0(d - p["radius"]), _near(d, p["radius"])


def _window_rows(offset: np.ndarray) -> RowRule:
    def rule(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        handle = _local_point_rows(s, "window", offset)
        d = np.abs(handle[:, 0] - _goal_rows(s)[:, 0])
        return d <= p["radius"], _approach_rows(s, handle) + _max0(d - p["radius"]), _near(d, p["radius"])

    return rule


def _faucet_rows(opening: bool) -> RowRule:
    def rule(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        point = faucet_point_rows(s, opening)
        d = _dist_rows(point, _goal_rows(s))
        return d <= p["radius"], _approach_rows(s, point) + _max0(d - p["radius"]), _near(d, p["radius"])

    return rule


def _coffee_button_rows(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    button = _pos_rows(s, "coffee_button")
    d = np.abs(_goal_rows(s)[:, 1] - button[:, 1])
    return d <= p["radius"], _approach_rows(s, button) + _max0(d - p["radius"]), _none(s)


def _hammer_rows(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    depth = _pos_rows(s, "nail")[:, 1] - NAIL_ZERO_Y
    hammer = _pos_rows(s, "hammer")
    head = _local_point_rows(s, "hammer", HAMMER_HEAD_OFFSET)
    nail_head = _pos_rows(s, "nail") + NAIL_HEAD_OFFSET
    distance = _approach_rows(s, hammer) + _dist_rows(head, nail_head) + _max0(p["depth"] - depth)
    return depth > p["depth"], distance, _none(s)


SINGLE_ROW_RULES: Mapping[str, RowRule] = {
    "reach": _reach_rows,
    "place": _place_rows,
    "button": _button_rows,
    "door_lock": _door_lock_rows,
    "door_unlock": _door_unlock_rows,
    "door_open": _door_open_rows,
    "door_close": _door_close_rows,
    "window_open": _window_rows(WINDOW_OPEN_HANDLE),
    "window_close": _window_rows(WINDOW_CLOSE_HANDLE),
    "faucet_open": _faucet_rows(True),
    "faucet_close": _faucet_rows(False),
    "coffee_button": _coffee_button_rows,
    "hammer": _hammer_rows,
}
""":data:`SINGLE_RULES` over rows."""


# ---------------------------------------------------------------------------- composite rules, rows
def _mug_rows(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mug and its distance from :func:`mug_goal`."""
    mug = _pos_rows(s, "task_object")
    return mug, _dist_rows(mug, _pos_rows(s, "coffee_machine") + MUG_GOAL_OFFSET)


def _press_rows(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The coffee button and its y distance from :func:`coffee_button_target`."""
    button = _pos_rows(s, "coffee_button")
    target = _pos_rows(s, "coffee_machine") + COFFEE_BUTTON_TARGET_OFFSET
    return button, np.abs(target[:, 1] - button[:, 1])


def _make_coffee_stage_rows(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    _, mug_d = _mug_rows(s)
    _, press_d = _press_rows(s)
    return (mug_d <= p["mug_radius"]) & ~(press_d <= p["button_radius"]), _near(mug_d, p["mug_radius"])


def _make_coffee_rows(p: Params, s: np.ndarray, stages: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mug, mug_d = _mug_rows(s)
    mug_off = _max0(mug_d - p["mug_radius"])
    button, press_d = _press_rows(s)
    press = _max0(press_d - p["button_radius"])
    first = stages < 1
    success = ~first & (press_d <= p["button_radius"]) & (mug_d <= p["mug_radius"])
    distance = np.where(first, _approach_rows(s, mug) + mug_off + STAGE_DISTANCE,
                        _approach_rows(s, button) + press + mug_off)
    return success, distance, ~first & _near(mug_d, p["mug_radius"])


def _lock_off_rows(s: np.ndarray) -> np.ndarray:
    """``|lock_unlock_shift - LOCK_UNLOCK_SHIFT|`` of every row (:func:`lock_open` compares it)."""
    return np.abs(lock_unlock_shift_rows(s) - LOCK_UNLOCK_SHIFT)


def _locked_door_stage_rows(p: Params, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lock_off = _lock_off_rows(s)
    angle = np.abs(door_angle_rows(s))
    unsure = _near(lock_off, p["lock_radius"]) | _near(angle, DOOR_CLOSED_ANGLE)
    return (lock_off <= p["lock_radius"]) & (angle < DOOR_CLOSED_ANGLE), unsure


def _locked_door_open_rows(p: Params, s: np.ndarray,
                           stages: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    handle = _pos_rows(s, "handle")
    open_off = _max0(np.abs(handle[:, 0] - _goal_rows(s)[:, 0]) - p["door_radius"])
    first = stages < 1
    site = _local_point_rows(s, "lock", LOCK_SITE_UNLOCK)
    unlock_off = _max0(_lock_off_rows(s) - p["lock_radius"])
    distance = np.where(first, _approach_rows(s, site) + unlock_off + STAGE_DISTANCE,
                        _approach_rows(s, handle) + open_off)
    return ~first & (open_off == 0.0), distance, _none(s)


STAGED_ROW_RULES: Mapping[str, tuple[RowLatch, StagedRowRule]] = {
    "make_coffee": (_make_coffee_stage_rows, _make_coffee_rows),
    "locked_door_open": (_locked_door_stage_rows, _locked_door_open_rows),
}
""":data:`STAGED_RULES` over rows."""


# ---------------------------------------------------------------------------- progress and reward, rows
def outcome_rows(
    family: str, params: Params, states: np.ndarray, next_states: np.ndarray, progress: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`reward_terms` of ``n`` transitions of one task: success ``(n,)``, total reward
    ``(n,)`` (``shaping + success_bonus``, summed as ``sum(terms.values())``) and the advanced
    progress records ``(n, PROGRESS_DIM)``.

    ``states``, ``next_states`` are float64 ``(n, 91)``, ``progress`` float64 ``(n, PROGRESS_DIM)``.
    Unsure rows (see the section comment) are recomputed with :func:`reward_terms`.
    """
    if family not in FAMILIES:
        raise ValueError(f"Unknown MetaWorld task family {family!r}; valid: {', '.join(FAMILIES)}.")
    next_p = np.array(progress, dtype=np.float64, copy=True)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # Python floats do not warn
        if family in STAGED_ROW_RULES:
            latch, rule = STAGED_ROW_RULES[family]
            open_stage = next_p[:, P_STAGES] < 1
            done, latch_unsure = latch(params, next_states)
            next_p[open_stage & done, P_STAGES] = 1.0
            _, before, _ = rule(params, states, progress[:, P_STAGES])
            success, after, unsure = rule(params, next_states, next_p[:, P_STAGES])
            unsure = unsure | (open_stage & latch_unsure)
        else:
            single = SINGLE_ROW_RULES[family]
            _, before, _ = single(params, states)
            success, after, unsure = single(params, next_states)
        after = np.where(success, 0.0, after)
        reward = (0.0 + SHAPING_SCALE * (before - after)) + np.where(success, SUCCESS_BONUS, 0.0)
    for i in np.flatnonzero(unsure):
        ok, next_p[i], terms = reward_terms(family, params, states[i], next_states[i], progress[i])
        success[i], reward[i] = ok, sum(terms.values())
    return success, reward, next_p
