"""The HalfCheetah-v0 domain: state layout, tasks and the pure success/reward/legality functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from imaginebench.domains.base import BatchOutcome, Domain, StepOutcome, Task, index_tasks
from imaginebench.domains.halfcheetah import physics as P
from imaginebench.domains.halfcheetah import physics_prior, propulsion
from imaginebench.domains.halfcheetah import success as S
from imaginebench.domains.halfcheetah.tasks import build_tasks

JOINT_TOLERANCE = 0.3
"""rad a leg joint may lie beyond its limit: MuJoCo's limits are soft constraints, and the
experts' real states overshoot them by up to 0.19 rad (random flailing 0.14; notes/halfcheetah.md)."""
ROOTZ_BOUNDS = (-1.0, 2.0)
"""m: from lying on its back (about −0.6) to well above any jump."""
MAX_DX = 1.5
"""m per step (30 m/s)."""
MAX_ROOT_SPEED = 30.0
"""m/s of the root's linear velocity."""
MAX_PITCH_RATE = 60.0
"""rad/s of the root's pitch rate."""
MAX_JOINT_RATE = 100.0
"""rad/s of a leg joint."""
MIN_LOWEST_POINT = -0.15
"""m: no body part sinks deeper into the floor than this (MuJoCo's soft contacts let the fast
runners' feet sink up to 8.5 cm in real states)."""


def legality_errors(state: np.ndarray) -> list[str]:
    """Why ``state`` is not a physically plausible HalfCheetah-v0 state (empty when it is).

    Checks: 18 finite numbers; joints within their limits (± ``JOINT_TOLERANCE``); root height
    in ``ROOTZ_BOUNDS``; displacement per step, root speed, pitch rate and joint rates below
    their maxima; no body part deep in the floor.
    """
    s = np.asarray(state, dtype=np.float64)
    if s.shape != (P.STATE_DIM,):
        return [f"expected {P.STATE_DIM} values, got shape {s.shape}"]
    if not np.all(np.isfinite(s)):
        return ["non-finite values"]
    errors = []
    limits = P.joint_range()
    joints = s[P.JOINT_SLICE]
    bad = (joints < limits[:, 0] - JOINT_TOLERANCE) | (joints > limits[:, 1] + JOINT_TOLERANCE)
    for i in np.flatnonzero(bad):
        errors.append(f"{P.JOINTS[i]} angle {joints[i]:.3f} outside [{limits[i, 0]:.3f}, {limits[i, 1]:.3f}]")
    if not ROOTZ_BOUNDS[0] <= s[P.ROOTZ] <= ROOTZ_BOUNDS[1]:
        errors.append(f"root height {s[P.ROOTZ]:.3f} outside {ROOTZ_BOUNDS}")
    if abs(s[P.DX]) > MAX_DX:
        errors.append(f"displacement {s[P.DX]:.3f} m in one step (at most {MAX_DX})")
    if np.any(np.abs(s[P.VX:P.VZ + 1]) > MAX_ROOT_SPEED):
        errors.append(f"root velocity {np.round(s[P.VX:P.VZ + 1], 2)} beyond {MAX_ROOT_SPEED} m/s")
    if abs(s[P.VZ + 1]) > MAX_PITCH_RATE:
        errors.append(f"pitch rate {s[P.VZ + 1]:.2f} beyond {MAX_PITCH_RATE} rad/s")
    if np.any(np.abs(s[P.VZ + 2:]) > MAX_JOINT_RATE):
        errors.append(f"joint rates beyond {MAX_JOINT_RATE} rad/s")
    if not errors and P.lowest_point(s) < MIN_LOWEST_POINT:
        errors.append(f"a body part {-P.lowest_point(s):.3f} m inside the floor")
    return errors


def legal_rows(states: np.ndarray) -> np.ndarray:
    """Whether each row of ``(N, 18)`` states has no :func:`legality_errors` (``(N,)`` bool;
    non-finite rows are illegal): the same checks as array code, for imagined batches."""
    s = np.asarray(states, dtype=np.float64)
    legal = np.isfinite(s).all(axis=1)
    s = np.where(legal[:, None], s, 0.0)
    limits = P.joint_range()
    joints = s[:, P.JOINT_SLICE]
    legal &= ~np.any((joints < limits[:, 0] - JOINT_TOLERANCE) | (joints > limits[:, 1] + JOINT_TOLERANCE), axis=1)
    legal &= (ROOTZ_BOUNDS[0] <= s[:, P.ROOTZ]) & (s[:, P.ROOTZ] <= ROOTZ_BOUNDS[1])
    legal &= ~(np.abs(s[:, P.DX]) > MAX_DX)
    legal &= ~np.any(np.abs(s[:, P.VX:P.VZ + 1]) > MAX_ROOT_SPEED, axis=1)
    legal &= ~(np.abs(s[:, P.VZ + 1]) > MAX_PITCH_RATE)
    legal &= ~np.any(np.abs(s[:, P.VZ + 2:]) > MAX_JOINT_RATE, axis=1)
    if legal.any():  # the floor test only where nothing else failed, as per row
        legal[legal] = ~(P.lowest_points(s[legal]) < MIN_LOWEST_POINT)
    return legal


def _direction(task: Task) -> float:
    """The sign a task's rules read: ``first`` for sequences, ``sign`` for runs and directed jumps
    (jumping in place reads none)."""
    if task.family == "sequence":
        return float(task.params["first"])
    if task.family == "jump_in_place":
        return 0.0
    return float(task.params["sign"])


class HalfCheetahDomain(Domain):
    """gymnasium's MuJoCo HalfCheetah running and jumping to instructions (see :mod:`.env`).

    The progress record is :data:`.success.PROGRESS_LAYOUT` (steps, net displacement, the
    first half's displacement, jumps, flight flag, furthest distance).
    """

    env_id: ClassVar[str] = "HalfCheetah-v0"
    state_dim: ClassVar[int] = P.STATE_DIM
    horizon: ClassVar[int] = S.HORIZON
    discrete_actions: ClassVar[bool] = False
    action_dim: ClassVar[int] = P.ACTION_DIM
    state_layout: ClassVar[tuple[str, ...]] = P.STATE_LAYOUT
    progress_layout: ClassVar[tuple[str, ...]] = S.PROGRESS_LAYOUT
    transition_tolerance: ClassVar[float] = 0.5
    """Over angles (rad), velocities (m/s, rad/s) and ``dx`` (m); ``set_state`` is exact (set-state +
    step matches the live env to < 1e-6; on 21,876 real train transitions the mean error is 1.6e-6),
    so the tolerance only sets how far an imagined state may stray.  On the shipped rephrase rollouts
    (9,891 transitions) the largest per-entry error has median 3.4 (joint rates): the imagined
    velocities are off by about a real step's change, so 0% pass at 0.5 and 10% at 2.0; the fault is
    the imagined dynamics, not the tolerance (notes/halfcheetah_imagination.md)."""
    paper_episodes: ClassVar[Mapping[str, int]] = MappingProxyType(
        {"real": 16_000, "rephrase": 10_000, "easy": 6_000, "hard": 9_000})
    """The paper's dataset sizes (docs/benchmark.md §3.6): real rollouts and imaginary rollouts per level."""
    algo_defaults: ClassVar[Mapping[str, Mapping[str, object]]] = MappingProxyType(
        {"td3bc": MappingProxyType({"alpha": 0.25})})
    """TD3+BC weighs its Q term at alpha 0.25, as on Meta-World's and LIBERO's cards: with the paper's
    2.5 its Real upper bound on hard (2,000 real hard episodes beside the train set) learned 4.4%
    (jump in place only), leaving 3.3 points of room over real only; at 0.25 it learns 18.9%
    (16.7 / 20.0 / 20.0: jump in place 50-60%, the two direction changes still 0; train level 95-98% in
    the same runs), and real only learns 93.3% of the train level (was 92.5).
    notes/halfcheetah_imagination.md "Session 59"."""
    trained_experts: ClassVar[str | None] = "imaginebench.experts.halfcheetah:EXPERTS"
    """Its expert is seven SAC policies (:mod:`.training`), not a script."""

    def _build_tasks(self) -> Mapping[str, Sequence[Task]]:
        return build_tasks()

    def initial_progress(self, task: Task, state: np.ndarray) -> np.ndarray:
        return S.initial_progress()

    def outcome(
        self,
        task: Task,
        state: np.ndarray,
        action: np.ndarray | int,
        next_state: np.ndarray,
        progress: np.ndarray,
    ) -> StepOutcome:
        before = np.asarray(progress, dtype=np.float64)
        # only the jump tasks read flights: the others skip the forward kinematics
        in_air = S.airborne(next_state) if task.family in S.JUMP_FAMILIES else False
        after = S.advance(before, next_state, in_air)
        terms = S.reward_terms(task.family, task.params, np.asarray(action), next_state, before, in_air)
        return StepOutcome(success=S.succeeded(task.family, task.params, after),
                           reward=float(sum(terms.values())), progress=after, terms=terms)

    def outcome_batch(
        self,
        tasks: Sequence[Task],
        states: np.ndarray,
        actions: np.ndarray,
        next_states: np.ndarray,
        progress: Sequence[np.ndarray],
    ) -> BatchOutcome:
        """:meth:`outcome` of every row as array code (generation scores thousands of imagined
        steps at once); forward kinematics runs on the jump tasks' rows only, as per row."""
        _, actions, next_states = self._check_batch(tasks, states, actions, next_states, progress)
        n = len(tasks)
        before = np.asarray(progress, dtype=np.float64)
        if n == 0:
            before = before.reshape(0, len(S.PROGRESS_LAYOUT))
        if before.shape != (n, len(S.PROGRESS_LAYOUT)):
            raise ValueError(f"{self.env_id}: expected progress of shape ({n}, {len(S.PROGRESS_LAYOUT)}), "
                             f"got {before.shape}")
        distinct, rows = index_tasks(tasks)
        family = S.family_codes([t.family for t in distinct])[rows]
        direction = np.array([_direction(t) for t in distinct], dtype=np.float64)[rows]
        with np.errstate(invalid="ignore", over="ignore"):  # per row, Python floats do not warn
            in_air = np.zeros(n, dtype=bool)
            jumps = (family == S.JUMP) | (family == S.JUMP_IN_PLACE)
            if jumps.any():
                in_air[jumps] = S.airborne_rows(next_states[jumps])
            after = S.advance_rows(before, next_states, in_air)
            success = S.succeeded_rows(family, direction, after)
            reward = S.reward_rows(family, direction, actions, next_states, before, in_air)
        return BatchOutcome(success=success, reward=reward, progress=list(after))

    def holds(self, task: Task, state: np.ndarray) -> bool:
        """No HalfCheetah task can hold at the start (every rule needs steps taken)."""
        return False

    def constrain_step(self, previous: np.ndarray, actions: np.ndarray, states: np.ndarray) -> np.ndarray:
        """Imagined next states with the physics prior imposed (``imagine generate --physics-prior``):
        joints stopped at their limits, the body out of the floor (:func:`.physics_prior.constrain_step`)."""
        return physics_prior.constrain_step(previous, actions, states)

    def unpowered(self, states: np.ndarray, actions: np.ndarray) -> bool:
        """The rollout's first actions, replayed through a dynamics model fit on real train data
        from its initial state, do not move the cheetah the way its states do
        (:func:`.propulsion.unpowered`: the imagined "gliders")."""
        states = self._check_states("states", states, len(actions) + 1)
        return propulsion.unpowered(states, np.asarray(actions, np.float64).reshape(len(actions), P.ACTION_DIM))

    def is_legal_batch(self, states: np.ndarray) -> np.ndarray:
        """:meth:`is_legal` of every row of an ``(N, 18)`` array, as array code."""
        return legal_rows(self._check_states("states", states, None))

    def legality_errors(self, state: np.ndarray) -> list[str]:
        """Why ``state`` is illegal (empty when legal)."""
        return legality_errors(state)
