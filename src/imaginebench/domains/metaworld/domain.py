"""The MetaWorld-v0 domain: state layout, tasks and the pure success/reward/legality functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from imaginebench.domains.base import BatchOutcome, Domain, StepOutcome, Task
from imaginebench.domains.metaworld import contact
from imaginebench.domains.metaworld import layout as L
from imaginebench.domains.metaworld import physics_prior, propulsion
from imaginebench.domains.metaworld import success as S
from imaginebench.domains.metaworld.tasks import build_tasks, rule_of

HAND_BOUNDS = (np.array([-0.525, 0.348, -0.0525]), np.array([0.525, 1.025, 0.7]))
"""metaworld's ``SawyerXYZEnv._HAND_SPACE`` (the hand's observation box)."""
WORKSPACE_BOUNDS = (np.array([-0.7, 0.2, -0.1]), np.array([0.7, 1.0, 0.8]))
"""Entity reference points and the goal lie above the table (x ±0.7, y 0.2–1.0, retaining
walls on all sides) and below the arm's reach."""
BOUND_TOLERANCE = 0.02
"""Positions may lie this far outside their box."""
GRIPPER_TOLERANCE = 0.02
"""The gripper opening may lie this far outside [0, 1]."""
QUAT_TOLERANCE = 0.02
"""An occupied slot's quaternion has a norm within this of 1."""
EMPTY_TOLERANCE = 1e-3
"""A slot whose seven numbers are all at most this in magnitude counts as empty."""
SCENES: tuple[frozenset[int], ...] = tuple(
    frozenset(L.SLOT[e] for e in entities) for entities in dict.fromkeys(L.SCENE_ENTITIES.values())
)
"""The slot sets that a scene fills."""


def legality_errors(state: np.ndarray) -> list[str]:
    """Why ``state`` is not a physically valid MetaWorld-v0 state (empty when it is).

    Checks: 91 finite numbers; hand inside metaworld's hand box; gripper opening in [0, 1];
    goal in the workspace; every slot either empty (all zeros) or an in-workspace position with a
    unit quaternion; the occupied slots are one scene's entities plus at most one distractor.
    """
    s = np.asarray(state, dtype=np.float64)
    if s.shape != (L.STATE_DIM,):
        return [f"expected {L.STATE_DIM} values, got shape {s.shape}"]
    if not np.all(np.isfinite(s)):
        return ["non-finite values"]
    errors = []
    tol = BOUND_TOLERANCE
    if np.any(L.hand(s) < HAND_BOUNDS[0] - tol) or np.any(L.hand(s) > HAND_BOUNDS[1] + tol):
        errors.append(f"hand {np.round(L.hand(s), 3)} outside the hand box")
    if not -GRIPPER_TOLERANCE <= s[L.GRIPPER] <= 1 + GRIPPER_TOLERANCE:
        errors.append(f"gripper opening {s[L.GRIPPER]:.3f} outside [0, 1]")
    lo, hi = WORKSPACE_BOUNDS
    if np.any(L.goal(s) < lo - tol) or np.any(L.goal(s) > hi + tol):
        errors.append(f"goal {np.round(L.goal(s), 3)} outside the workspace")
    occupied = set()
    for i, row in enumerate(L.slots(s)):
        if np.all(np.abs(row) <= EMPTY_TOLERANCE):
            continue
        occupied.add(i)
        name = L.ENTITIES[i]
        if np.any(row[:3] < lo - tol) or np.any(row[:3] > hi + tol):
            errors.append(f"{name} position {np.round(row[:3], 3)} outside the workspace")
        norm = float(np.linalg.norm(row[3:]))
        if abs(norm - 1.0) > QUAT_TOLERANCE:
            errors.append(f"{name} quaternion norm {norm:.3f} is not 1")
    if not any(scene <= occupied and len(occupied - scene) <= 1 for scene in SCENES):
        names = ", ".join(L.ENTITIES[i] for i in sorted(occupied)) or "none"
        errors.append(f"occupied slots ({names}) are not one scene plus at most one distractor")
    return errors


_SCENE_MASKS = np.array([sum(1 << i for i in scene) for scene in SCENES], dtype=np.int64)
"""Each scene's slots as a bit mask (bit ``i``: slot ``i``)."""
_SLOT_BITS = np.array([1 << i for i in range(L.N_SLOTS)], dtype=np.int64)


def legal_rows(states: np.ndarray) -> np.ndarray:
    """Whether each row of ``(N, 91)`` states has no :func:`legality_errors` (``(N,)`` bool;
    non-finite rows are illegal): the same checks as array code, for imagined batches.

    A quaternion norm is a BLAS dot product per row, whose summation order a build may choose;
    rows with a norm within ``S.REFINE_TOLERANCE`` of its bound are decided by :func:`legality_errors`.
    """
    s = np.asarray(states, dtype=np.float64)
    finite = np.isfinite(s).all(axis=1)
    legal = finite.copy()
    s = np.where(finite[:, None], s, 0.0)
    tol = BOUND_TOLERANCE
    hand = s[:, L.HAND]
    legal &= ~(np.any(hand < HAND_BOUNDS[0] - tol, axis=1) | np.any(hand > HAND_BOUNDS[1] + tol, axis=1))
    grip = s[:, L.GRIPPER]
    legal &= (-GRIPPER_TOLERANCE <= grip) & (grip <= 1 + GRIPPER_TOLERANCE)
    lo, hi = WORKSPACE_BOUNDS
    goal = s[:, L.GOAL]
    legal &= ~(np.any(goal < lo - tol, axis=1) | np.any(goal > hi + tol, axis=1))
    slots = s[:, L.SLOTS_START:].reshape(len(s), L.N_SLOTS, L.SLOT_SIZE)
    occupied = ~np.all(np.abs(slots) <= EMPTY_TOLERANCE, axis=2)
    outside = np.any(slots[..., :3] < lo - tol, axis=2) | np.any(slots[..., :3] > hi + tol, axis=2)
    legal &= ~np.any(occupied & outside, axis=1)
    q = slots[..., 3:]
    norm = np.sqrt(((0.0 + q[..., 0] * q[..., 0]) + q[..., 1] * q[..., 1]) + q[..., 2] * q[..., 2]
                   + q[..., 3] * q[..., 3])  # np.linalg.norm of a 4-vector, summed as its ddot
    off = np.abs(norm - 1.0)
    legal &= ~np.any(occupied & (off > QUAT_TOLERANCE), axis=1)
    bits = (occupied * _SLOT_BITS).sum(axis=1)
    extra = bits[:, None] & ~_SCENE_MASKS  # occupied slots outside each scene
    one_scene = ((bits[:, None] & _SCENE_MASKS) == _SCENE_MASKS) & ((extra & (extra - 1)) == 0)
    legal &= one_scene.any(axis=1)
    unsure = np.any(occupied & (np.abs(off - QUAT_TOLERANCE) <= S.REFINE_TOLERANCE), axis=1)
    for i in np.flatnonzero(unsure & finite):
        legal[i] = not legality_errors(s[i])
    return legal


class MetaWorldDomain(Domain):
    """Sawyer-arm manipulation tasks of Meta-World on one 91-dim entity-slot state (see :mod:`.env`).

    The progress record is ``[stages_done]`` (:mod:`.success`): a latch for the two composite
    tasks, always 0 for the others.
    """

    env_id: ClassVar[str] = "MetaWorld-v0"
    state_dim: ClassVar[int] = L.STATE_DIM
    horizon: ClassVar[int] = 100
    discrete_actions: ClassVar[bool] = False
    action_dim: ClassVar[int] = L.ACTION_DIM
    state_layout: ClassVar[tuple[str, ...]] = L.STATE_LAYOUT
    progress_layout: ClassVar[tuple[str, ...]] = ("stages_done",)
    transition_tolerance: ClassVar[float] = 0.1
    """``set_state`` cannot restore velocities, the mocap lead or the fingers' motion; over 16,232 real
    expert transitions (all 22 tasks) ``set_state`` + step differs from the recorded next state by at
    most 0.073 in any entry (hand <= 0.025 m, gripper opening <= 0.071, object positions <= 0.034 m,
    quaternions <= 0.073; notes/metaworld.md), so real expert data scores 100%."""
    paper_episodes: ClassVar[Mapping[str, int]] = MappingProxyType(
        {"real": 20_000, "rephrase": 72_400, "easy": 8_000, "hard": 4_000})
    """The paper's dataset sizes (docs/benchmark.md §3.6): real rollouts and imaginary rollouts per level."""
    algo_defaults: ClassVar[Mapping[str, Mapping[str, object]]] = MappingProxyType(
        {"bc": MappingProxyType({"lr_decay": "cosine", "instruction_projection": 64}),
         "td3bc": MappingProxyType({"lr_decay": "cosine", "instruction_projection": 64, "alpha": 0.25})})
    """BC as on LIBERO's card: the rate anneals to 0 over the run and a learned 64-wide map of the
    instruction embedding joins the state.  Train level at ``small`` (2,000 episodes, 20,000 steps,
    3 seeds, last-five mean of the protocol): d3rlpy's defaults 76.7, annealed alone 79.0, annealed
    with the projection 86.0, the projection alone 85.0 (6,000 episodes under the defaults: 82.3).
    TD3+BC takes the same two and weighs its Q term at alpha 0.25, as on LIBERO: 83.0 (82 / 81 / 86)
    against 54.3 at d3rlpy's settings; with the paper's alpha 2.5 the projection and annealing alone
    were at 50-70% per seed at 12,000 of 20,000 steps (stopped there).  notes/metaworld.md "Session 58"."""

    def _build_tasks(self) -> Mapping[str, Sequence[Task]]:
        return build_tasks()

    def initial_progress(self, task: Task, state: np.ndarray) -> np.ndarray:
        return S.initial_progress(task.family, rule_of(task), np.asarray(state, dtype=np.float64))

    def outcome(
        self,
        task: Task,
        state: np.ndarray,
        action: np.ndarray | int,
        next_state: np.ndarray,
        progress: np.ndarray,
    ) -> StepOutcome:
        success, next_p, terms = S.reward_terms(task.family, rule_of(task), state, next_state, progress)
        return StepOutcome(success=success, reward=float(sum(terms.values())), progress=next_p, terms=terms)

    def outcome_batch(
        self,
        tasks: Sequence[Task],
        states: np.ndarray,
        actions: np.ndarray,
        next_states: np.ndarray,
        progress: Sequence[np.ndarray],
    ) -> BatchOutcome:
        """:meth:`outcome` of every row as array code (the honest filter scores large imagined
        batches): rows are grouped by task, whose family and rule parameters they share, and
        each group is scored by :func:`.success.outcome_rows`; results keep the rows' order."""
        return self._outcome_batch_by_task(
            tasks, states, actions, next_states, progress, S.PROGRESS_DIM,
            lambda task, s, ns, p: S.outcome_rows(task.family, rule_of(task), s, ns, p))

    def success(self, task: Task, state: np.ndarray, progress: np.ndarray | None = None) -> bool:
        """Whether ``task`` holds in ``state`` (``progress``: the record so far; default: the
        record of an episode starting in ``state``)."""
        s = np.asarray(state, dtype=np.float64)
        p = self.initial_progress(task, s) if progress is None else np.asarray(progress, dtype=np.float64)
        rule = rule_of(task)
        return S.evaluate(task.family, rule, s, S.advance_progress(task.family, rule, p, s))[0]

    def holds(self, task: Task, state: np.ndarray) -> bool:
        """Whether an episode starting in ``state`` would already count as solved (resets resample)."""
        return self.success(task, state)

    def distance(self, task: Task, state: np.ndarray, progress: np.ndarray) -> float:
        """The task distance the shaping reward is built from (metres)."""
        return S.evaluate(task.family, rule_of(task), np.asarray(state, dtype=np.float64),
                          np.asarray(progress, dtype=np.float64))[1]

    def legality_errors(self, state: np.ndarray) -> list[str]:
        """Why ``state`` is illegal (empty when legal)."""
        return legality_errors(state)

    def complete_states(self, states: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
        """Imagined states put back on the layout: the entity slots empty in the episode's real
        initial state (``starts``) are exactly empty (the scene's entities neither appear nor
        vanish during an episode), every occupied slot's quaternion is unit with ``w >= 0``
        (:func:`.layout.canonical_quat`; a quaternion of norm below 0.5 is left alone, still
        illegal), and the gripper opening is clipped to [0, 1] as the layout defines it.  Without
        ``starts``: the quaternions and the gripper.  Real states are unchanged (their quaternions
        are unit to float precision).  Everything else — the hand, the goal, an occupied slot's
        position — is the model's own and still judged by :meth:`is_legal`."""
        out = np.array(states, dtype=np.float64, copy=True)
        out[:, L.GRIPPER] = np.clip(out[:, L.GRIPPER], 0.0, 1.0)
        slots = out[:, L.SLOTS_START:].reshape(len(out), L.N_SLOTS, L.SLOT_SIZE)
        if starts is not None:
            first = np.asarray(starts, dtype=np.float64)[:, L.SLOTS_START:].reshape(len(out), L.N_SLOTS, L.SLOT_SIZE)
            slots[np.all(first == 0.0, axis=2)] = 0.0
        quats = slots[..., 3:]
        norm = np.linalg.norm(quats, axis=-1, keepdims=True)
        unit = np.where(norm >= 0.5, quats / np.maximum(norm, 1e-12), quats)
        unit = np.where(unit[..., :1] < 0, -unit, unit)
        slots[..., 3:] = unit
        out[:, L.SLOTS_START:] = slots.reshape(len(out), -1)
        return out.astype(np.asarray(states).dtype, copy=False)

    def is_legal_batch(self, states: np.ndarray) -> np.ndarray:
        """:meth:`is_legal` of every row of an ``(N, 91)`` array, as array code."""
        return legal_rows(self._check_states("states", states, None))

    def constrain_step(self, previous: np.ndarray, actions: np.ndarray, states: np.ndarray) -> np.ndarray:
        """Imagined next states with the physics prior imposed (``imagine generate --physics-prior``):
        the hand where the arm's position control takes it, untouched entities where they were
        (:func:`.physics_prior.constrain_step`)."""
        return physics_prior.constrain_step(previous, actions, states)

    def unpowered(self, states: np.ndarray, actions: np.ndarray) -> bool:
        """The imagined hand strays from where the rollout's own first actions move it
        (:func:`.propulsion.unpowered`: the arm is position-controlled)."""
        acts = np.asarray(actions, np.float64).reshape(len(actions), self.action_dim)
        return propulsion.unpowered(self._check_states("states", states, len(acts) + 1), acts)

    def untouched_steps(self, states: np.ndarray) -> np.ndarray:
        """Steps that move an entity the hand is not touching (:func:`.contact.untouched_steps`):
        the faucet does not turn, nor the button go in, untouched."""
        return contact.untouched_steps(self._check_states("states", states, None))
