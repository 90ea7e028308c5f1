"""Scripted waypoint expert of LIBERO-v0 (no scripted policy ships with LIBERO).

Every task is a sequence of *moves*: carry object X to a point and let go of it there (the
point: a spot in the basket, beside another object, aside from its start, back on the floor),
or, for reach, bring the gripper to X.  A move runs these phases, each a waypoint for the end
effector (a proportional step toward it, clipped to the action box):

``approach`` (above X, gripper open) → ``descend`` (to X's grasp height) → ``grasp`` (close,
:data:`GRASP_STEPS` steps) → ``lift`` (to the carry height) → ``carry`` (above the drop point)
→ ``lower`` (to the drop height) → ``release`` (open, :data:`RELEASE_STEPS` steps) → ``retreat``
(up to the carry height), then the next move or ``hold``.

If X slips out of the fingers while lifted or carried (the end effector ends up more than
:data:`DROP_DISTANCE` from X), the move starts again from ``approach``.  The orientation is
held at the reset orientation (gripper pointing down, fingers closing along the world y axis,
across every object's narrow side), correcting any drift.

State slices read (:mod:`.layout`): end effector position and quaternion, finger joints, the
positions of the objects and the basket.  The expert keeps its phase between calls (a small
record, reset with :meth:`LiberoExpert.reset`); it draws no random numbers.  ``last_phase``
names the phase that chose the last action.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from imaginebench.domains.base import Task
from imaginebench.domains.libero import layout as L
from imaginebench.domains.libero import success as S
from imaginebench.domains.libero.tasks import spec_of

GAIN = 12.0
"""Action per metre of waypoint error (an action of 1 moves the OSC goal 0.05 m)."""
ORI_GAIN = 2.0
"""Rotation action per radian of orientation error (an action of 1 turns the goal 0.5 rad)."""
DOWN_QUAT = np.array([1.0, 0.0, 0.0, 0.0])
"""The gripper's orientation to hold (x, y, z, w): pointing down, as at LIBERO's reset
(the reset's 0.028 rad tilt about y is corrected)."""
GRASP_HEIGHT = {"alphabet_soup": 0.038, "cream_cheese": 0.012, "salad_dressing": 0.12}
"""End-effector height above the object's base at which the fingers close: the middle of the can,
the box's top, the bottle's neck (the palm sits 0.033 above the end effector and stops on the
bottle's cap lower down)."""
CLEARANCE = 0.18
"""While carrying, the object's base is this far above the basket's origin (the rim is 0.146)."""
APPROACH_ABOVE = 0.1
"""The approach waypoint is this far above the object's top."""
REACH_ABOVE = 0.03
"""reach: the end effector is sent this far above the object's origin."""
XY_TOLERANCE = 0.01
Z_TOLERANCE = 0.012
GRASP_STEPS = 8
RELEASE_STEPS = 6
DROP_DISTANCE = 0.06
DESCEND_STALL = 12
"""Steps of descent without getting closer before the fingers close anyway (the floor or the
object stops the hand)."""
RIM_CLEARANCE = 0.025
"""Over the basket, the end effector stays this far above the rim (finger tips reach 0.01 below
it), so short objects are dropped from just above the rim into the basket."""
LOWER_STALL = 4
"""Steps of lowering without getting 1 mm lower before the gripper opens anyway."""
RELEASE_GAP = 0.015
"""The object is let go this far above its resting height (m)."""
BASKET_SPOTS = {
    "alphabet_soup": np.array([-0.025, -0.025]),
    "cream_cheese": np.array([0.0, 0.035]),
    "salad_dressing": np.array([0.03, -0.03]),
}
"""Where each object goes in the basket, relative to the basket's origin (xy): three spots
that keep all three objects apart inside the walls (:mod:`.layout`)."""
NEXT_TO_GAP = 0.09
"""Centre distance at which an object is put down beside another (success: 0.12)."""
ASIDE_SHIFT = 0.13
"""How far an object is moved aside (success: more than 0.07)."""
FLOOR_BOUNDS = (np.array([-0.28, -0.3]), np.array([0.16, 0.2]))
"""xy box where the expert puts objects down on the floor (reachable, away from the base)."""
KEEP_AWAY = {"object": 0.1, "basket": 0.19}
"""Minimum centre distance from another object / the basket for a floor drop point."""
PHASES = ("approach", "descend", "grasp", "lift", "carry", "lower", "release", "retreat", "hold")


@dataclass
class _Move:
    obj: str
    kind: str
    """``basket``, ``floor`` or ``reach``."""
    target: np.ndarray | None = None
    """Drop point (xy); decided when the move starts."""


class LiberoExpert:
    """Waypoint controller for every LIBERO-v0 task (module docstring)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the episode's phase (call at every episode start)."""
        self.phase = "approach"
        self.counter = 0
        self.best = np.inf
        self.move_index = 0
        self.moves: list[_Move] = []
        self.task_name = ""
        self.last_phase = ""

    # ------------------------------------------------------------------ moves of a task
    def _plan(self, task: Task, s: np.ndarray) -> list[_Move]:
        spec = spec_of(task)
        o = spec.objects[0]
        if spec.family == "reach":
            return [_Move(o, "reach")]
        if spec.family == "pick":
            return [_Move(o, "pick")]
        if spec.family in ("place", "pick_place", "sequential"):
            return [_Move(obj, "basket") for obj in spec.objects]
        return [_Move(o, "floor")]

    def _floor_target(self, task: Task, s: np.ndarray, progress: np.ndarray, obj: str) -> np.ndarray:
        spec = spec_of(task)
        here = L.pos(s, obj)[:2]
        if spec.family == "out_of_basket":
            (x0, x1), (y0, y1) = L.START_REGIONS[obj]
            return np.array([(x0 + x1) / 2, (y0 + y1) / 2])
        if spec.family == "next_to":
            # beside the reference along x: the palm reaches 0.1 to either side along y (the
            # finger axis) and would land on the reference; along x it is narrow
            ref = L.pos(s, spec.reference)[:2]
            side = 1.0 if here[0] >= ref[0] else -1.0
            angles = [0, 180, 25, -25, 155, -155, 50, -50, 130, -130]
            candidates = [ref + NEXT_TO_GAP * np.array([side * np.cos(np.radians(a)), np.sin(np.radians(a))])
                          for a in angles]
            return self._first_clear(s, obj, candidates, ignore=spec.reference)
        start = S.start_xy(progress, obj)  # aside
        angles = np.radians(np.arange(0, 360, 30))
        candidates = [start + ASIDE_SHIFT * np.array([np.cos(a), np.sin(a)]) for a in angles]
        candidates.sort(key=lambda c: -self._clearance(s, obj, c))
        return candidates[0]

    def _clearance(self, s: np.ndarray, obj: str, point: np.ndarray, ignore: str = "") -> float:
        margins = [L.xy_distance(point, L.pos(s, "basket")) - KEEP_AWAY["basket"]]
        margins += [L.xy_distance(point, L.pos(s, o)) - KEEP_AWAY["object"]
                    for o in L.OBJECTS if o not in (obj, ignore)]
        lo, hi = FLOOR_BOUNDS
        margins += list(point - lo) + list(hi - point)
        return float(min(margins))

    def _first_clear(self, s: np.ndarray, obj: str, candidates: list[np.ndarray], ignore: str) -> np.ndarray:
        for c in candidates:
            if self._clearance(s, obj, c, ignore) >= 0.0:
                return c
        return max(candidates, key=lambda c: self._clearance(s, obj, c, ignore))

    # ------------------------------------------------------------------ action
    def act(self, task: Task, s: np.ndarray, progress: np.ndarray) -> np.ndarray:
        """The expert's action (float32, in [-1, 1]) for state ``s`` of ``task``."""
        s = np.asarray(s, dtype=np.float64)
        if task.name != self.task_name or not self.moves:
            self.reset()
            self.task_name = task.name
            self.moves = self._plan(task, s)
            obj = self.moves[0].obj
            if S.picked(s, obj):  # the episode starts with the object in the gripper
                self.phase = "lift"
        # skip moves already done (sequential tasks latch objects in the basket)
        while (self.move_index < len(self.moves) - 1 and self.moves[self.move_index].kind == "basket"
               and spec_of(task).family == "sequential" and S.latched(progress, self.moves[self.move_index].obj)
               and self.phase in ("approach", "hold")):
            self.move_index += 1
        move = self.moves[self.move_index]
        if move.kind == "floor" and move.target is None:
            move.target = self._floor_target(task, s, progress, move.obj)
        action = self._step(move, s)
        if self.phase == "hold" and self.move_index < len(self.moves) - 1:
            self.move_index += 1
            self.phase, self.counter, self.best = "approach", 0, np.inf
        return action

    def _to(self, s: np.ndarray, target: np.ndarray, grip: float) -> np.ndarray:
        delta = np.clip(GAIN * (target - L.eef(s)), -1.0, 1.0)
        rot = np.clip(ORI_GAIN * _rotation_error(s[L.EEF_QUAT], DOWN_QUAT), -1.0, 1.0)
        return np.concatenate([delta, rot, [grip]]).astype(np.float32)

    def _step(self, move: _Move, s: np.ndarray) -> np.ndarray:
        obj = move.obj
        eef, o = L.eef(s), L.pos(s, obj)
        basket = L.pos(s, "basket")
        base = float(o[2]) - L.HALF_HEIGHT[obj]
        grasp_z = base + GRASP_HEIGHT[obj]
        # while held, the object hangs where it was grasped: carry and drop heights use that
        hang = float(eef[2]) - base if self.phase in ("lift", "carry", "lower", "release") else GRASP_HEIGHT[obj]
        carry_z = float(basket[2]) + CLEARANCE + hang
        above_z = max(base + 2 * L.HALF_HEIGHT[obj] + APPROACH_ABOVE, grasp_z + 0.05)
        if self.phase in ("lift", "carry", "lower") and np.linalg.norm(eef - o) > DROP_DISTANCE:
            self.phase, self.counter, self.best = "approach", 0, np.inf  # the object slipped: start again
        if self.phase == "approach":
            self.last_phase = "approach"
            if self._xy_err(eef, o) > 0.05 and eef[2] < above_z - 0.03:
                return self._to(s, np.array([eef[0], eef[1], above_z]), -1.0)  # rise before moving over
            if self._xy_err(eef, o) < XY_TOLERANCE and abs(eef[2] - above_z) < 0.03:
                self.phase, self.best, self.counter = "descend", np.inf, 0
            return self._to(s, np.array([o[0], o[1], above_z]), -1.0)
        if self.phase == "descend":
            self.last_phase = "descend"
            target = np.array([o[0], o[1], grasp_z])
            if move.kind == "reach":
                # reach aims 0.03 above the origin (success: within 0.05 of it); on the bottle the
                # palm stops on the cap a little higher, still within 0.04
                target[2] = min(grasp_z, float(o[2]) + REACH_ABOVE)
            err = float(np.linalg.norm(target - eef))
            if err < self.best - 1e-3:
                self.best, self.counter = err, 0
            else:
                self.counter += 1
            if move.kind == "reach":
                if err < Z_TOLERANCE:
                    self.phase = "hold"
                return self._to(s, target, -1.0)
            if err < Z_TOLERANCE or self.counter >= DESCEND_STALL:
                self.phase, self.counter = "grasp", 0
            return self._to(s, target, -1.0)
        if self.phase == "grasp":
            self.last_phase = "grasp"
            self.counter += 1
            if self.counter >= GRASP_STEPS:
                self.phase, self.counter = "lift", 0
            return self._to(s, np.array([o[0], o[1], grasp_z]), 1.0)
        if self.phase == "lift":
            self.last_phase = "lift"
            if eef[2] > carry_z - 0.02:
                self.phase = "hold" if move.kind == "pick" else "carry"
            return self._to(s, np.array([eef[0], eef[1], carry_z]), 1.0)
        drop = self._drop_point(move, s)
        if self.phase == "carry":
            self.last_phase = "carry"
            if L.xy_distance(eef, drop) < XY_TOLERANCE:
                self.phase, self.best, self.counter = "lower", np.inf, 0
            return self._to(s, np.array([drop[0], drop[1], carry_z]), 1.0)
        if move.kind == "basket":
            # the fingers stay above the rim: the palm (0.2 long along the finger axis) cannot
            # enter the basket, and fingers closed on an object are 0.1 wide across it
            release_z = max(float(basket[2]) + L.BASKET_FLOOR + RELEASE_GAP + hang,
                            float(basket[2]) + L.BASKET_RIM + RIM_CLEARANCE)
        else:
            release_z = RELEASE_GAP + hang
        if self.phase == "lower":
            self.last_phase = "lower"
            if eef[2] < self.best - 1e-3:
                self.best, self.counter = float(eef[2]), 0
            else:
                self.counter += 1
            # let go at the drop height, or where the hand stops (the palm reaches 0.033 above the
            # end effector and 0.1 along the finger axis: it rests on the basket's rim or a
            # neighbour before a low object reaches the floor)
            if eef[2] < release_z + Z_TOLERANCE or self.counter >= LOWER_STALL:
                self.phase, self.counter = "release", 0
            return self._to(s, np.array([drop[0], drop[1], release_z]), 1.0)
        if self.phase == "release":
            self.last_phase = "release"
            self.counter += 1
            if self.counter >= RELEASE_STEPS:
                self.phase, self.counter = "retreat", 0
            return self._to(s, np.array([drop[0], drop[1], release_z]), -1.0)
        if self.phase == "retreat":
            self.last_phase = "retreat"
            if eef[2] > carry_z - 0.03:
                self.phase = "hold"
            return self._to(s, np.array([eef[0], eef[1], carry_z]), -1.0)
        self.last_phase = "hold"
        grip = 1.0 if move.kind == "pick" else -1.0
        return self._to(s, eef.copy(), grip)

    def _drop_point(self, move: _Move, s: np.ndarray) -> np.ndarray:
        if move.kind == "basket":
            return L.pos(s, "basket")[:2] + BASKET_SPOTS[move.obj]
        if move.target is not None:
            return move.target
        return L.eef(s)[:2]

    @staticmethod
    def _xy_err(eef: np.ndarray, o: np.ndarray) -> float:
        return L.xy_distance(eef, o)


def _rotation_error(current_xyzw: np.ndarray, target_xyzw: np.ndarray) -> np.ndarray:
    """World-frame axis-angle vector that turns ``current`` into ``target``."""
    r = L.rotation_matrix(target_xyzw) @ L.rotation_matrix(current_xyzw).T
    angle = float(np.arccos(np.clip((np.trace(r) - 1.0) / 2.0, -1.0, 1.0)))
    if angle < 1e-6:
        return np.zeros(3)
    axis = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]]) / (2.0 * np.sin(angle))
    return axis * angle
