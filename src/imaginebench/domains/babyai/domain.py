"""The BabyAI domain: state layout, tasks and the pure success/reward/legality functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from imaginebench.domains.babyai import batch as B
from imaginebench.domains.babyai import causality
from imaginebench.domains.babyai import layout as L
from imaginebench.domains.babyai import relations as REL
from imaginebench.domains.babyai import success as S
from imaginebench.domains.babyai import symmetry as SYM
from imaginebench.domains.babyai.legality import legality_errors
from imaginebench.domains.babyai.tasks import build_tasks
from imaginebench.domains.babyai.transitions import paper_transition_ok
from imaginebench.domains.base import BatchOutcome, Domain, StepOutcome, Task


class BabyAIDomain(Domain):
    """One 8×8 minigrid room with a ball, a box, a key and a door (see :mod:`.env`)."""

    env_id: ClassVar[str] = "BabyAI-v0"
    state_dim: ClassVar[int] = L.STATE_DIM
    horizon: ClassVar[int] = 128
    discrete_actions: ClassVar[bool] = True
    action_dim: ClassVar[int] = L.NUM_ACTIONS
    state_layout: ClassVar[tuple[str, ...]] = L.STATE_LAYOUT
    progress_layout: ClassVar[tuple[str, ...]] = ("steps", "door_opened", "key_carried")
    """Names of the progress record's entries (see :mod:`.success`)."""
    paper_quality: ClassVar[Mapping[str, tuple[float, float, float]]] = MappingProxyType(
        {"rephrase": (0.880, 0.960, 0.985), "easy": (0.438, 0.822, 0.811), "hard": (0.258, 0.729, 0.668)})
    """The original's BabyAI quality (consistency, transition, legality; docs/benchmark.md §6)."""
    transition_tolerance: ClassVar[float] = 0.5
    """Cells and codes are integers, so 0.5 means "equal after rounding"."""
    paper_episodes: ClassVar[Mapping[str, int]] = MappingProxyType(
        {"real": 19_200, "rephrase": 19_200, "easy": 18_000, "hard": 18_000})
    """The paper's dataset sizes (docs/benchmark.md §3.6): real rollouts and imaginary rollouts per level."""
    profile_sizes: ClassVar[Mapping[str, Mapping[str, int]]] = MappingProxyType(
        {"small": MappingProxyType({"real": 19_200, "train_steps": 40_000})})
    """``small`` learns the train level only at the paper's real size and twice the usual steps
    (DiscreteBC, 3 seeds, train-level success at 20,000 steps, last-five mean: 1,920 episodes 52%,
    6,400 75%, 19,200 80% and still rising, 82-89% at the last checkpoint); notes/babyai.md
    "Learning curve" (session 40)."""

    def __init__(self) -> None:
        super().__init__()
        self._last: tuple[str, list[float], list[float], float] | None = None
        """(task name, state, progress, distance) of the latest next state (see :meth:`outcome`)."""

    def _build_tasks(self) -> Mapping[str, Sequence[Task]]:
        return build_tasks()

    def state_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Colours 0..5, rows/cols 0..7 (walls included), door state 0..2, carried type 0..3 and
        colour -1..5 (see :mod:`.layout`)."""
        last = L.ROOM_SIZE - 1
        high = np.array([L.NUM_COLORS - 1, last, last] * 3 + [L.NUM_COLORS - 1, last, last, L.DOOR_LOCKED]
                        + [last, last, len(L.OBJECT_TYPES), L.NUM_COLORS - 1], dtype=np.float64)
        low = np.zeros(L.STATE_DIM)
        low[L.CARRIED_COLOR] = L.NO_COLOR
        return low, high

    def complete_states(self, states: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
        """The carried record is defined by the carried object (:mod:`.layout`): with
        ``carried_type`` 1..3 the carried colour is that object's colour and the object's cell
        is the agent's; with 0 the carried colour is -1.  Other ``carried_type`` values are left
        alone (still illegal)."""
        out = np.array(states, dtype=np.float32 if np.asarray(states).dtype != np.float64 else np.float64)
        kind = out[:, L.CARRIED_TYPE]
        out[kind == L.NOTHING, L.CARRIED_COLOR] = L.NO_COLOR
        for name, code in L.CARRIED_CODE.items():
            rows = kind == code
            slot = L.OBJECT_SLOT[name]
            out[rows, L.CARRIED_COLOR] = out[rows, slot]
            out[rows, slot + 1] = out[rows, L.AGENT_ROW]
            out[rows, slot + 2] = out[rows, L.AGENT_COL]
        return out

    def relation_features(self, states: np.ndarray) -> np.ndarray:
        """Agent on / beside each object, at the door's front or in the doorway, objects beside each
        other, what is carried (:mod:`.relations`)."""
        return REL.relation_features(states)

    def symmetries(self) -> tuple[str, ...]:
        """The room's eight rotations and reflections (:mod:`.symmetry`)."""
        return SYM.SYMMETRY_NAMES

    def transform_episode(self, states: np.ndarray, actions: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
        if name not in SYM.SYMMETRIES:
            return super().transform_episode(states, actions, name)
        return SYM.transform_episode(states, actions, name)

    def initial_progress(self, task: Task, state: np.ndarray) -> np.ndarray:
        return S.initial_progress(np.asarray(state, dtype=np.float64))

    def outcome(
        self,
        task: Task,
        state: np.ndarray,
        action: np.ndarray | int,
        next_state: np.ndarray,
        progress: np.ndarray,
    ) -> StepOutcome:
        # Plain lists: the rules read single entries, which is much faster than from numpy.
        s = np.asarray(state, dtype=np.float64).tolist()
        ns = np.asarray(next_state, dtype=np.float64).tolist()
        p = np.asarray(progress, dtype=np.float64).tolist()
        next_p = S.advance_progress_list(p, ns)
        success_fn, distance_fn = S.RULES[task.family]
        success = bool(success_fn(task.params, s, ns, p, next_p))
        # One-entry memo: in a rollout, this step's ``state`` is the last step's ``next_state``.
        # It is keyed by the exact inputs and keeps the state's own distance, so a later
        # transition from it reads the same number as a fresh call (storing the 0 of a success
        # made rewards depend on call order).
        last = self._last
        if last is not None and last[0] == task.name and last[1] == s and last[2] == p:
            before = last[3]
        else:
            before = distance_fn(task.params, s, p)
        remaining = distance_fn(task.params, ns, next_p)
        self._last = (task.name, ns, next_p, remaining)
        shaping = S.SHAPING_SCALE * float(before - (0.0 if success else remaining))  # done: nothing left
        bonus = S.success_bonus(next_p[S.P_STEPS], self.task_horizon(task)) if success else 0.0
        return StepOutcome(
            success=success,
            reward=shaping + bonus,
            progress=np.array(next_p, dtype=np.float64),
            terms={"shaping": shaping, "success_bonus": bonus},
        )

    def holds(self, task: Task, state: np.ndarray, progress: np.ndarray | None = None) -> bool:
        """Whether ``task`` already counts as done in ``state`` (a transition that changes
        nothing would succeed).  Resets resample until this is false."""
        s = np.asarray(state, dtype=np.float64).tolist()
        p = self.initial_progress(task, s) if progress is None else np.asarray(progress, dtype=np.float64)
        return bool(S.RULES[task.family][0](task.params, s, s, p, p))

    def distance(self, task: Task, state: np.ndarray, progress: np.ndarray) -> float:
        """The task distance the shaping reward is built from (in agent steps)."""
        s = np.asarray(state, dtype=np.float64).tolist()
        return float(S.RULES[task.family][1](task.params, s, np.asarray(progress, dtype=np.float64)))

    def paper_transition_ok(self, state: np.ndarray, next_state: np.ndarray) -> bool:
        """The paper's rule: wrong only when a vector is non-finite or the agent moves more than
        two cells at once (:mod:`.transitions`)."""
        return paper_transition_ok(state, next_state)

    def legality_errors(self, state: np.ndarray) -> list[str]:
        """Why ``state`` is illegal (empty when legal)."""
        return legality_errors(state)

    def outcome_batch(
        self,
        tasks: Sequence[Task],
        states: np.ndarray,
        actions: np.ndarray,
        next_states: np.ndarray,
        progress: Sequence[np.ndarray],
    ) -> BatchOutcome:
        """:meth:`outcome` of every row, vectorised per task family (see :mod:`.batch`).

        Every family is array code.  Rows the array code cannot read like the per-row code
        (non-finite or huge entries; ``line``/``pile`` rows with cells off the grid) go
        through :meth:`outcome`.  Unlike :meth:`outcome`, nothing is memoised between calls:
        the distance before each transition is always recomputed.
        """
        states, actions, next_states = self._check_batch(tasks, states, actions, next_states, progress)
        p = np.asarray(progress, dtype=np.float64)
        if len(tasks) == 0:
            p = p.reshape(0, S.PROGRESS_DIM)
        if p.shape != (len(tasks), S.PROGRESS_DIM):
            raise ValueError(f"{self.env_id}: expected progress of shape ({len(tasks)}, {S.PROGRESS_DIM}), "
                             f"got {p.shape}")
        success, reward, next_p, handled = B.outcome_arrays(tasks, states, next_states, p, self.horizon)
        records = list(next_p)
        for i in np.flatnonzero(~handled):
            row = self.outcome(tasks[i], states[i], actions[i], next_states[i], progress[i])
            success[i], reward[i], records[i] = row.success, row.reward, row.progress
        return BatchOutcome(success=success, reward=reward, progress=records)

    def untouched_steps(self, states: np.ndarray) -> np.ndarray:
        """Steps whose change no single action makes (:func:`.causality.uncaused_steps`): a pick-up
        from another cell, the door opened from afar, two changes at once, a floor object moving."""
        return causality.uncaused_steps(self._check_states("states", states, None))

    def unpowered(self, states: np.ndarray, actions: np.ndarray) -> bool:
        """A step whose change is not the one its action makes (:func:`.causality.unpowered`)."""
        return causality.unpowered(self._check_states("states", states, None), actions)

    def is_legal_batch(self, states: np.ndarray) -> np.ndarray:
        """:meth:`is_legal` of every row of an ``(N, 17)`` array, as array code."""
        return B.legal_rows(self._check_states("states", states, None))
