"""Scripted expert of MetaWorld-v0: metaworld's own scripted policies, composed stage by stage.

Single-stage tasks run the metaworld policy of their environment
(``metaworld.policies.ENV_POLICY_MAP[env_name]``) on the 39-dim observation metaworld's env
gives (:func:`metaworld_obs`: hand, gripper, the task's object padded to 14, the same 18 again as
the previous frame, goal).  The policies are deterministic; the expert takes no randomness.

Composite tasks pick the stage from the progress record (``stages_done``) and feed the next
stage's policy the observation that policy expects (its object's position in ``obs[4:7]``).
Between the two stages a short transition, read from the state alone, moves the hand clear of the
first stage's part so the second policy starts from where its own task would start it:

* make-coffee — ``push`` (coffee-push policy) → ``release`` (open the fingers in place) →
  ``rise`` (lift the fingers out of the mug, so it is not dragged along) → ``back_off`` (move
  toward the robot until the hand is in front of the machine's button, staying below it) →
  ``press`` (coffee-button policy on the button's position);
* locked-door-open — ``unlock`` (door-unlock policy) → ``release`` (open the fingers, which hold
  the lock bar) → ``drop`` (lower the wrist off the turned bar, which rests on it) → ``retreat``
  (out from under the lock, toward the robot) → ``lift`` (0.2 above the handle and over to its x,
  along the retreat line) → ``approach`` (forward to the point above the gap between handle bar
  and door that door-open's policy aims for first) → ``open`` (door-open policy on the handle's
  position; the latch has let go).

Soccer adds one phase to metaworld's policy.  That policy walks the hand straight to a push
point beside the ball (−y of it, or −x/+x of it when the ball is more than 5 cm left/right of
the goal), so whenever the ball has rolled past the hand — it overshoots sideways, or rebounds
off the goal frame — the walk there pushes the ball the wrong way, and the hand chases it off the
table (3 of 40 episodes at horizon 300 before this phase).  ``over``: while the hand is on the
far side of the ball from the push point, it rises to ``OVER_HEIGHT`` and crosses above the
ball; metaworld's policy takes over once the hand is on the push point's side.

State slices read: hand (0:3), gripper opening (3), and the slots of the task's entities
(task object, coffee machine, coffee button; lock, handle).  ``last_phase`` names the phase that
chose the last action.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from metaworld.policies import ENV_POLICY_MAP

from imaginebench.domains.base import Task
from imaginebench.domains.metaworld import layout as L
from imaginebench.domains.metaworld import success as S
from imaginebench.domains.metaworld.tasks import spec_of

GAIN = 25.0
"""Proportional gain of the transition moves (as metaworld's door policies)."""
RELEASE_OPENING = 0.9
"""make-coffee: the fingers count as open at this opening."""
RELEASE_RADIUS = 0.06
"""make-coffee: the hand releases the mug, and rises out of it, only while within this of it (xy)."""
MUG_CLEARANCE = 0.13
"""make-coffee: the hand rises to this above the mug's base (the mug is ~0.07 tall; the finger
tips hang ~0.065 below the hand)."""
BACK_OFF_Y = 0.1
"""make-coffee: the hand backs off until this far in front of the coffee button (y)..."""
BACK_OFF_BELOW = 0.1
"""...while it is more than this below the button."""
RETREAT_Y = 0.2
"""locked-door-open: after unlocking, the hand backs out to this far in front of the lock's hinge
(y), back over the hinge in x (the mocap target may still run ahead toward the handle)..."""
DROP_BELOW = 0.14
"""...after lowering the hand to this below the lock's hinge (the turned bar rests on the wrist,
and backing out with it drags the door open)..."""
HANDLE_CLEARANCE = 0.1
"""...while it is more than this left of the handle (the door-open policy works right of that)."""
LIFT_ABOVE = 0.2
"""Then it rises to this above the handle, and moves to door-open's approach point above the
gap between handle bar and door (``handle + (0.01, 0.02, 0.2)``), where door-open takes over."""
LIFT_MARGIN = 0.05
"""The hand counts as lifted within this of that height..."""
APPROACH_RADIUS = 0.03
"""...and as at the approach point within this (xy)."""

OVER_HEIGHT = 0.15
"""soccer: the hand crosses the ball at this height (the finger tips hang ~0.065 below the
hand, the ball's top is ~0.05 above the table)."""

warnings.filterwarnings("ignore", message=r"Constant\(s\) may be too high", category=UserWarning,
                        module="metaworld.policies.policy")
# metaworld's policies warn on every step whose proportional response exceeds 1; the env clips
# actions to [-1, 1] exactly as metaworld's own env does, so the warning carries no information.

PHASES = ("policy", "over", "push", "release", "rise", "back_off", "press",
          "unlock", "drop", "retreat", "lift", "approach", "open")
"""Labels of ``last_phase``: ``policy`` for single-stage tasks, soccer's ``over``, then
make-coffee's and locked-door-open's phases in order."""


def metaworld_obs(scene: Any, obj_pos: np.ndarray | None = None) -> np.ndarray:
    """The 39-dim observation metaworld's policies read, from the live scene (no side effects).

    ``obj_pos`` replaces the object position in ``obs[4:7]`` (and zeroes the rest of the object
    block), for a stage whose policy acts on another part of the scene.
    """
    env = scene.env
    current = np.asarray(env._get_curr_obs_combined_no_goal(), dtype=np.float64).copy()
    if obj_pos is not None:
        current[4:18] = 0.0
        current[4:7] = obj_pos
    return np.concatenate([current, current, np.asarray(env._target_pos, dtype=np.float64)])


def _move(hand: np.ndarray, target: np.ndarray, grab: float) -> np.ndarray:
    return np.concatenate([np.clip(GAIN * (target - hand), -1.0, 1.0), [grab]]).astype(np.float32)


class MetaWorldExpert:
    """metaworld's scripted policies per task, composed for the staged tasks (module docstring)."""

    def __init__(self) -> None:
        self._policies: dict[str, Any] = {}
        self.last_phase = ""

    def policy(self, env_name: str) -> Any:
        if env_name not in self._policies:
            self._policies[env_name] = ENV_POLICY_MAP[env_name]()
        return self._policies[env_name]

    def act(self, task: Task, scene: Any, state: np.ndarray, progress: np.ndarray) -> np.ndarray:
        """The expert's action (float32, in [-1, 1]) for ``state`` of ``task`` in the live ``scene``."""
        policies = spec_of(task).policies
        if task.family == "make_coffee":
            action = self._make_coffee(policies, scene, state, progress)
        elif task.family == "locked_door_open":
            action = self._locked_door(policies, scene, state, progress)
        elif policies[0] == "soccer-v3":
            action = self._soccer(policies, scene, state)
        else:
            self.last_phase = "policy"
            action = self.policy(policies[0]).get_action(metaworld_obs(scene))
        return np.clip(np.asarray(action, dtype=np.float32), -1.0, 1.0)

    def _soccer(self, policies, scene, s) -> np.ndarray:
        policy = self.policy(policies[0])
        obs = metaworld_obs(scene)
        hand, ball = L.hand(s), L.pos(s, "soccer_ball")
        # where the policy is heading: its push point, or the ball itself once it is there
        target = np.asarray(policy._desired_pos(policy._parse_obs(obs)), dtype=np.float64)
        if float(np.dot(target[:2] - ball[:2], hand[:2] - ball[:2])) < 0.0:
            self.last_phase = "over"
            if hand[2] < OVER_HEIGHT - 0.02:
                return _move(hand, np.array([hand[0], hand[1], OVER_HEIGHT]), 1.0)
            return _move(hand, np.array([target[0], target[1], OVER_HEIGHT]), 1.0)
        self.last_phase = "policy"
        return policy.get_action(obs)

    def _make_coffee(self, policies, scene, s, progress) -> np.ndarray:
        if progress[S.P_STAGES] < 1:
            self.last_phase = "push"
            return self.policy(policies[0]).get_action(metaworld_obs(scene))
        hand, button, mug = L.hand(s), L.pos(s, "coffee_button"), L.pos(s, "task_object")
        near_mug = np.linalg.norm(hand[:2] - mug[:2]) < RELEASE_RADIUS
        if s[L.GRIPPER] < RELEASE_OPENING and near_mug:
            self.last_phase = "release"
            return np.array([0.0, 0.0, 0.0, -1.0], dtype=np.float32)
        if near_mug and hand[2] < mug[2] + MUG_CLEARANCE:
            self.last_phase = "rise"  # the fingers are inside the mug: lift them out before moving away
            return _move(hand, np.array([hand[0], hand[1], mug[2] + MUG_CLEARANCE + 0.01]), -1.0)
        if hand[1] > button[1] - BACK_OFF_Y and hand[2] < button[2] - BACK_OFF_BELOW:
            self.last_phase = "back_off"
            return _move(hand, np.array([hand[0], button[1] - BACK_OFF_Y - 0.02, hand[2]]), -1.0)
        self.last_phase = "press"
        return self.policy(policies[1]).get_action(metaworld_obs(scene, button))

    def _locked_door(self, policies, scene, s, progress) -> np.ndarray:
        if progress[S.P_STAGES] < 1:
            self.last_phase = "unlock"
            return self.policy(policies[0]).get_action(metaworld_obs(scene))
        hand, lock, handle = L.hand(s), L.pos(s, "lock"), L.pos(s, "handle")
        closed = S.door_closed(s)
        left_of_handle = hand[0] < handle[0] - HANDLE_CLEARANCE
        lift_to = handle[2] + LIFT_ABOVE
        retreat_y = lock[1] - RETREAT_Y
        under_lock = closed and left_of_handle and hand[2] < lock[2] and hand[1] > retreat_y
        if under_lock and s[L.GRIPPER] < RELEASE_OPENING:
            self.last_phase = "release"  # let go of the lock bar, else backing out drags the door
            return _move(hand, np.array([lock[0], hand[1], hand[2]]), -1.0)
        if under_lock and hand[2] > lock[2] - DROP_BELOW:
            self.last_phase = "drop"  # the turned bar rests on the wrist: get clear of it first
            return _move(hand, np.array([lock[0], hand[1], lock[2] - DROP_BELOW - 0.01]), -1.0)
        if under_lock:
            self.last_phase = "retreat"
            return _move(hand, np.array([lock[0], retreat_y - 0.02, hand[2]]), -1.0)
        above_gap = handle[:2] + np.array([0.01, 0.02])  # door-open's first target: its pos_door + (0.06, 0.02)
        if closed and hand[1] < retreat_y + 0.02 and hand[2] < lift_to - LIFT_MARGIN:
            self.last_phase = "lift"  # up, and over to the handle's x, along the retreat line
            return _move(hand, np.array([above_gap[0], hand[1], lift_to]), 1.0)
        if closed and hand[2] >= lift_to - LIFT_MARGIN and np.linalg.norm(hand[:2] - above_gap) > APPROACH_RADIUS:
            self.last_phase = "approach"
            return _move(hand, np.array([above_gap[0], above_gap[1], lift_to]), 1.0)
        self.last_phase = "open"
        return self.policy(policies[1]).get_action(metaworld_obs(scene, handle))
