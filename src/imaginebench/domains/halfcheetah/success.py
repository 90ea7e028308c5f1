"""HalfCheetah-v0 success and reward: pure functions of the state sequence.

Everything reads the 18-dim state (:mod:`.physics`) and a progress record carried from step to
step::

    progress = [t, x, x_half, jumps, in_jump, max_abs_x]

    t          steps taken
    x          net displacement since the start (sum of the states' dx; m)
    x_half     x after the first half of the horizon (sequential tasks; 0 before)
    jumps      completed jumps so far (see below; counted for the jump tasks only)
    in_jump    1 while the current flight has already been counted as a jump
    max_abs_x  largest |x| so far

Rules (thresholds justified in ``notes/halfcheetah.md``):

* ``run`` (run forward/backward): after at least ``MIN_RUN_STEPS`` steps, the average speed in
  the asked direction is at least ``RUN_SPEED``: ``sign·x ≥ RUN_SPEED·t·dt``.
* ``run_fast`` (…faster): the same with ``FAST_SPEED``.
* ``sequence`` (run forward then backward, and the reverse): at the end of the horizon, the first
  half's net displacement is at least ``SEQUENCE_DISTANCE`` in the first direction and the second
  half's at least that in the other.  The order is checked: each half is judged on its own.
* ``jump`` (jump forward/backward): at least ``JUMPS`` jumps, and the net displacement is at
  least ``JUMP_DISTANCE`` in the asked direction.
* ``jump_in_place``: at least ``JUMPS`` jumps, never further than ``IN_PLACE_RADIUS`` from the
  start.

A *jump* is a flight — every body part at least ``AIR_CLEARANCE`` above the floor — during which
the root height ``rootz`` reaches ``JUMP_HEIGHT`` (0.43 m above standing), upright
(``|pitch| ≤ MAX_PITCH``).
Each flight counts once.

Rewards (minus ``CTRL_COST``·|a|² in all): run tasks the velocity in the asked direction
(gymnasium's ``forward_reward``, signed); sequential tasks the velocity in the direction of the
current half; jump tasks ``HEIGHT_WEIGHT``·(torso rise while airborne and upright) plus the velocity in the
asked direction capped at ``JUMP_DRIFT_CAP`` (in place: minus the speed and
``IN_PLACE_PULL``·the distance beyond ``IN_PLACE_FREE`` from the start); the rise is
measured from the standing height ``STANDING_ROOTZ``, so that running is
not the best way to earn a jump task's reward.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from imaginebench.domains.halfcheetah import physics as P

HORIZON = 200
HALF = HORIZON // 2
CTRL_COST = 0.1
"""gymnasium's control-cost weight."""
RUN_SPEED = 1.4
"""m/s: 7 m in the first 100 steps (5 s), the original benchmark's run threshold."""
FAST_SPEED = 3.0
"""m/s: above what the run experts do (trained toward ``training.RUN_TARGET_SPEED`` = 2 m/s),
so the real run data does not already solve the faster tasks."""
MIN_RUN_STEPS = 100
"""Running is judged over at least the first 5 s (an initial burst does not count)."""
SEQUENCE_DISTANCE = 3.0
"""m of net displacement each half of a sequential task must make (the original's 3 m)."""
AIR_CLEARANCE = 0.02
"""m: every body part this far above the floor counts as airborne (MuJoCo's soft contacts let a
resting capsule sink a few mm)."""
JUMP_HEIGHT = 0.3
"""``rootz`` a flight must reach to be a jump: 0.43 m above standing (``STANDING_ROOTZ``)."""
MAX_PITCH = 1.0
"""rad: a jump is upright (flips and tumbles do not count)."""
JUMPS = 2
"""Jumps a jump task needs."""
JUMP_DISTANCE = 1.0
"""m of net displacement a directed jump task needs."""
IN_PLACE_RADIUS = 0.5
"""m: jumping in place never leaves this distance from the start."""
HEIGHT_WEIGHT = 10.0
STANDING_ROOTZ = -0.13
"""Root height of the cheetah standing still (measured: the rest pose settles at −0.132 under zero
torque); the jump reward counts the torso's rise above it."""
JUMP_DRIFT_CAP = 1.0
"""m/s: the most velocity a directed jump task's reward counts."""
IN_PLACE_PULL = 2.0
"""Per metre beyond ``IN_PLACE_FREE`` from the start: jumping in place's reward also pays for
distance, not only speed (with speed alone its expert drifted 0.8 m on average; with the pull
from the start itself, 2·|x|, it learned to stand still and never jumped in 50k steps)."""
IN_PLACE_FREE = 0.25
"""m around the start where jumping in place pays no distance (a soft wall at half the radius)."""

P_T, P_X, P_HALF, P_JUMPS, P_IN_JUMP, P_MAX_ABS = range(6)
PROGRESS_LAYOUT: tuple[str, ...] = ("t", "x", "x_half", "jumps", "in_jump", "max_abs_x")
FAMILIES: tuple[str, ...] = ("run", "run_fast", "sequence", "jump", "jump_in_place")


def initial_progress() -> np.ndarray:
    return np.zeros(len(PROGRESS_LAYOUT), dtype=np.float64)


def is_jump_apex(state: np.ndarray) -> bool:
    """Whether ``state`` is airborne, upright and high enough to make its flight a jump."""
    s = np.asarray(state, dtype=np.float64)
    return bool(s[P.ROOTZ] >= JUMP_HEIGHT and abs(s[P.ROOTY]) <= MAX_PITCH
                and P.lowest_point(s) >= AIR_CLEARANCE)


JUMP_FAMILIES = frozenset({"jump", "jump_in_place"})
"""Families that read the jump count (the others skip the airborne test: it costs forward kinematics)."""


def airborne(state: np.ndarray) -> bool:
    """Every body part at least ``AIR_CLEARANCE`` above the floor."""
    return P.lowest_point(state) >= AIR_CLEARANCE


def advance(progress: np.ndarray, next_state: np.ndarray, in_air: bool | None = None) -> np.ndarray:
    """The progress record after a step into ``next_state``.

    ``in_air``: whether ``next_state`` is airborne, when the caller knows; ``None`` computes it.
    """
    p = np.asarray(progress, dtype=np.float64).copy()
    s = np.asarray(next_state, dtype=np.float64)
    p[P_T] += 1
    p[P_X] += s[P.DX]
    if p[P_T] == HALF:
        p[P_HALF] = p[P_X]
    p[P_MAX_ABS] = max(p[P_MAX_ABS], abs(p[P_X]))
    if in_air is None:
        in_air = airborne(s)
    if not in_air:
        p[P_IN_JUMP] = 0.0
    elif p[P_IN_JUMP] == 0.0 and s[P.ROOTZ] >= JUMP_HEIGHT and abs(s[P.ROOTY]) <= MAX_PITCH:
        p[P_JUMPS] += 1
        p[P_IN_JUMP] = 1.0
    return p


def succeeded(family: str, params: Mapping[str, object], progress: np.ndarray) -> bool:
    """Whether the task holds given the progress record after the latest step."""
    p = progress
    t, x = float(p[P_T]), float(p[P_X])
    if family in ("run", "run_fast"):
        speed = RUN_SPEED if family == "run" else FAST_SPEED
        sign = float(params["sign"])
        return t >= MIN_RUN_STEPS and sign * x >= speed * t * P.DT
    if family == "sequence":
        first = float(params["first"])
        second_half = x - float(p[P_HALF])
        return (t >= HORIZON and first * float(p[P_HALF]) >= SEQUENCE_DISTANCE
                and -first * second_half >= SEQUENCE_DISTANCE)
    if family == "jump":
        return p[P_JUMPS] >= JUMPS and float(params["sign"]) * x >= JUMP_DISTANCE
    if family == "jump_in_place":
        return p[P_JUMPS] >= JUMPS and p[P_MAX_ABS] <= IN_PLACE_RADIUS
    raise ValueError(f"Unknown HalfCheetah-v0 task family {family!r}; valid: {', '.join(FAMILIES)}.")


def reward_terms(family: str, params: Mapping[str, object], action: np.ndarray, next_state: np.ndarray,
                 progress_before: np.ndarray, in_air: bool | None = None) -> dict[str, float]:
    """Named reward terms of the step ``--action--> next_state`` (progress as it was before;
    ``in_air`` as in :func:`advance`)."""
    s = np.asarray(next_state, dtype=np.float64)
    a = np.asarray(action, dtype=np.float64)
    velocity = float(s[P.DX]) / P.DT
    ctrl = -CTRL_COST * float(np.sum(np.square(a)))
    if family in ("run", "run_fast"):
        return {"velocity": float(params["sign"]) * velocity, "ctrl": ctrl}
    if family == "sequence":
        first = float(params["first"])
        sign = first if progress_before[P_T] < HALF else -first
        return {"velocity": sign * velocity, "ctrl": ctrl}
    if in_air is None:
        in_air = airborne(s)
    upright = abs(float(s[P.ROOTY])) <= MAX_PITCH
    height = HEIGHT_WEIGHT * max(0.0, float(s[P.ROOTZ]) - STANDING_ROOTZ) if in_air and upright else 0.0
    if family == "jump":
        drift = min(float(params["sign"]) * velocity, JUMP_DRIFT_CAP)
    elif family == "jump_in_place":
        x_after = float(progress_before[P_X]) + float(s[P.DX])
        drift = -abs(velocity) - IN_PLACE_PULL * max(0.0, abs(x_after) - IN_PLACE_FREE)
    else:
        raise ValueError(f"Unknown HalfCheetah-v0 task family {family!r}; valid: {', '.join(FAMILIES)}.")
    return {"height": height, "drift": drift, "ctrl": ctrl}


# ---------------------------------------------------------------- array versions
# The generation step scores thousands of imagined transitions per step: these give the per-row
# functions' answers for N rows at once.  Python's ``max(a, b)``/``min(a, b)`` are written as
# ``where`` so that NaN entries come out as they do per row (``np.maximum`` would spread them).

RUN, RUN_FAST, SEQUENCE, JUMP, JUMP_IN_PLACE = range(len(FAMILIES))
"""Codes of :data:`FAMILIES` in the array functions."""


def airborne_rows(next_states: np.ndarray) -> np.ndarray:
    """:func:`airborne` of every row of ``(N, 18)`` states, as ``(N,)`` bool."""
    return P.lowest_points(next_states) >= AIR_CLEARANCE


def advance_rows(progress: np.ndarray, next_states: np.ndarray, in_air: np.ndarray) -> np.ndarray:
    """:func:`advance` of every row: ``(N, 6)`` progress records after steps into ``next_states``."""
    p = np.array(progress, dtype=np.float64)
    s = np.asarray(next_states, dtype=np.float64)
    p[:, P_T] += 1
    p[:, P_X] += s[:, P.DX]
    half = p[:, P_T] == HALF
    p[half, P_HALF] = p[half, P_X]
    far = np.abs(p[:, P_X])
    p[:, P_MAX_ABS] = np.where(far > p[:, P_MAX_ABS], far, p[:, P_MAX_ABS])
    new_jump = (in_air & (p[:, P_IN_JUMP] == 0.0) & (s[:, P.ROOTZ] >= JUMP_HEIGHT)
                & (np.abs(s[:, P.ROOTY]) <= MAX_PITCH))
    p[~in_air, P_IN_JUMP] = 0.0
    p[new_jump, P_JUMPS] += 1
    p[new_jump, P_IN_JUMP] = 1.0
    return p


def family_codes(families: list[str]) -> np.ndarray:
    """Index into :data:`FAMILIES` of each name (``ValueError`` for an unknown one, as per row)."""
    for family in families:
        if family not in FAMILIES:
            raise ValueError(f"Unknown HalfCheetah-v0 task family {family!r}; valid: {', '.join(FAMILIES)}.")
    return np.array([FAMILIES.index(f) for f in families], dtype=np.intp)



def succeeded_rows(family: np.ndarray, direction: np.ndarray, progress: np.ndarray) -> np.ndarray:
    """:func:`succeeded` of every row: ``family`` codes (:func:`family_codes`), ``direction``
    (``sign``, or ``first`` for sequences) and ``(N, 6)`` progress after the step."""
    p = progress
    t, x, x_half, jumps = p[:, P_T], p[:, P_X], p[:, P_HALF], p[:, P_JUMPS]
    speed = np.where(family == RUN, RUN_SPEED, FAST_SPEED)
    run = (t >= MIN_RUN_STEPS) & (direction * x >= speed * t * P.DT)
    sequence = ((t >= HORIZON) & (direction * x_half >= SEQUENCE_DISTANCE)
                & (-direction * (x - x_half) >= SEQUENCE_DISTANCE))
    jump = (jumps >= JUMPS) & (direction * x >= JUMP_DISTANCE)
    in_place = (jumps >= JUMPS) & (p[:, P_MAX_ABS] <= IN_PLACE_RADIUS)
    return np.select([(family == RUN) | (family == RUN_FAST), family == SEQUENCE, family == JUMP,
                      family == JUMP_IN_PLACE], [run, sequence, jump, in_place], False)


def reward_rows(family: np.ndarray, direction: np.ndarray, actions: np.ndarray, next_states: np.ndarray,
                progress_before: np.ndarray, in_air: np.ndarray) -> np.ndarray:
    """The sum of :func:`reward_terms` of every row, added in the same order (``(N,)``)."""
    s = np.asarray(next_states, dtype=np.float64)
    velocity = s[:, P.DX] / P.DT
    ctrl = -CTRL_COST * np.sum(np.square(np.asarray(actions, dtype=np.float64)), axis=1)
    before_half = progress_before[:, P_T] < HALF
    moving = np.where(family == SEQUENCE, np.where(before_half, direction, -direction), direction) * velocity
    rise = s[:, P.ROOTZ] - STANDING_ROOTZ
    lifted = in_air & (np.abs(s[:, P.ROOTY]) <= MAX_PITCH)
    height = np.where(lifted, HEIGHT_WEIGHT * np.where(rise > 0.0, rise, 0.0), 0.0)
    drift = np.where(JUMP_DRIFT_CAP < moving, JUMP_DRIFT_CAP, moving)
    away = np.abs(progress_before[:, P_X] + s[:, P.DX]) - IN_PLACE_FREE
    stay = -np.abs(velocity) - IN_PLACE_PULL * np.where(away > 0.0, away, 0.0)
    jumping = np.where(family == JUMP, drift, stay)
    jumpy = (family == JUMP) | (family == JUMP_IN_PLACE)
    return np.where(jumpy, height + jumping + ctrl, moving + ctrl)
