"""The task model shared by every domain: domain -> levels -> tasks.

A :class:`Task` is data (name, family, parameters, instruction banks).  A :class:`Domain`
owns the pure state functions: ``outcome`` (success + reward + progress) and ``is_legal``.
Environments, real data, imaginary data and quality metrics all call these same functions.

Domains are the ground floor of the package: nothing in here imports another stage.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, ClassVar, Mapping, Sequence, TypeVar

import numpy as np

from imaginebench.errors import choice_error

T = TypeVar("T")

LEVELS: tuple[str, ...] = ("train", "rephrase", "easy", "hard")
"""Evaluation levels, in order of increasing distance from the real data."""

TASK_LEVELS: tuple[str, ...] = ("train", "easy", "hard")
"""Levels that own tasks; ``rephrase`` reuses the ``train`` tasks with held-out phrasings."""


def check_level(level: str) -> str:
    """Return ``level`` if it is one of :data:`LEVELS`, else raise ``ValueError``."""
    if level not in LEVELS:
        raise choice_error("level", level, LEVELS)
    return level


@dataclass(frozen=True)
class Task:
    """One goal of a domain, with the phrasings that describe it.

    Attributes:
        name: unique within its domain, e.g. ``"red_left_of_blue"``.
        family: the kind of task, e.g. ``"relational"``; success functions dispatch on it.
        level: ``"train"`` (shared by the train and rephrase levels), ``"easy"`` or ``"hard"``.
        params: read-only task parameters that the success and reward functions read.
        instructions: phrasings used for this task's level (for train tasks: the real-data bank).
        rephrasings: held-out paraphrases of a train task (empty for easy/hard tasks).
        horizon: episode length for this task; ``None`` means the domain's horizon.
    """

    name: str
    family: str
    level: str
    params: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    instructions: tuple[str, ...] = ()
    rephrasings: tuple[str, ...] = ()
    horizon: int | None = None

    def __post_init__(self) -> None:
        if self.level not in TASK_LEVELS:
            raise choice_error("task level", self.level, TASK_LEVELS)
        if not self.instructions:
            raise ValueError(f"Task {self.name!r} has no instructions.")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def bank(self, level: str) -> tuple[str, ...]:
        """The instruction phrasings used for this task at evaluation ``level``."""
        check_level(level)
        if level == "rephrase":
            if not self.rephrasings:
                raise ValueError(f"Task {self.name!r} has no rephrase phrasings.")
            return self.rephrasings
        return self.instructions

    def __repr__(self) -> str:
        return f"Task({self.name!r}, family={self.family!r}, level={self.level!r})"


@dataclass(slots=True)
class StepOutcome:
    """What the domain's pure functions say about one transition.

    Attributes:
        success: the task holds after this transition.
        reward: total reward of the transition (sum of ``terms``).
        progress: the updated progress record (for staged/history-dependent tasks).
        terms: named reward terms, e.g. ``{"shaping": 0.1, "success_bonus": 1.0}``.

    Not frozen: a frozen dataclass's ``__init__`` costs ~0.4 µs more, on every env step.
    """

    success: bool
    reward: float
    progress: np.ndarray
    terms: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchOutcome:
    """What the domain's pure functions say about a batch of ``N`` transitions.

    Attributes:
        success: ``(N,)`` bool, the task holds after each transition.
        reward: ``(N,)`` float64, total reward of each transition.
        progress: the updated progress record of each row.
    """

    success: np.ndarray
    reward: np.ndarray
    progress: list[np.ndarray]


def index_tasks(tasks: Sequence[Task]) -> tuple[list[Task], np.ndarray]:
    """The distinct tasks of a batch (by name, in first-seen order) and each row's index into them.

    Like :meth:`Domain.task`, this identifies a task by its name (unique within a domain).
    """
    slot: dict[str, int] = {}
    codes = [slot.setdefault(task.name, len(slot)) for task in tasks]
    by_name = {task.name: task for task in tasks}
    return [by_name[name] for name in slot], np.asarray(codes, dtype=np.intp)


def per_task_cache(build: Callable[[Task], T], size: int = 4096) -> Callable[[Task], T]:
    """``build(task)`` memoised per task object (identity; the object is kept to check it).

    The cache is cleared when it holds more than ``size`` tasks.
    """
    cache: dict[int, tuple[Task, T]] = {}

    def cached(task: Task) -> T:
        hit = cache.get(id(task))
        if hit is not None and hit[0] is task:
            return hit[1]
        if len(cache) > size:
            cache.clear()
        value = build(task)
        cache[id(task)] = (task, value)
        return value

    return cached


@dataclass(frozen=True)
class TrainedExperts:
    """A domain's learned expert policies, for ``imaginebench experts``.

    Attributes:
        env_id: the domain's env id.
        policies: the policy names (usually task names).
        default_steps: environment steps each shipped policy was trained for.
        path: ``policy -> file`` the expert loads.
        train: ``(policy, steps, seed, out, eval_episodes, progress) -> metadata`` trains one
            policy and writes it (``out`` ``None``: :attr:`path`).
        info: ``policy -> metadata`` of a shipped file (training settings, measured success).
    """

    env_id: str
    policies: tuple[str, ...]
    default_steps: Mapping[str, int]
    path: Callable[[str], Any]
    train: Callable[..., dict[str, Any]]
    info: Callable[[str], dict[str, Any]]


def trained_experts_of(domain_cls: Any) -> TrainedExperts | None:
    """The :class:`TrainedExperts` a domain class's card names, or ``None`` (scripted expert)."""
    import importlib

    entry = getattr(domain_cls, "trained_experts", None)
    if entry is None:
        return None
    module_name, attr = entry.split(":")
    return getattr(importlib.import_module(module_name), attr)


class Domain(abc.ABC):
    """A domain: its state layout, its tasks per level and its pure state functions.

    The domain contract: subclasses set the class attributes (the domain's card) and implement
    :meth:`_build_tasks`, :meth:`outcome`, :meth:`holds` and :meth:`legality_errors`
    (:meth:`is_legal` follows from it); they may override :meth:`distance`,
    :meth:`initial_progress`, :meth:`state_bounds` and the batched :meth:`outcome_batch` /
    :meth:`is_legal_batch` (which must equal the per-row functions; the conformance suite checks
    it).  Everything takes and returns plain numpy vectors so the same code scores live
    episodes, stored real rollouts and imaginary rollouts.  The env (:class:`~.env_base.
    InstructionEnv`) adds the simulator; nothing outside the domain's folder but one registry line
    (:data:`imaginebench.envs.registry.ENV_SPECS`) names a domain.
    """

    env_id: ClassVar[str]
    """Public id without namespace, e.g. ``"CLEVR-v0"``."""
    state_dim: ClassVar[int]
    horizon: ClassVar[int]
    discrete_actions: ClassVar[bool]
    action_dim: ClassVar[int]
    """Number of actions (discrete) or the action vector's length (continuous)."""
    state_layout: ClassVar[tuple[str, ...]]
    """One name per state dimension."""
    transition_tolerance: ClassVar[float] = 0.05
    """Largest |re-simulated − stored| over the state entries for a transition to count as
    correct (``imagine quality``); a domain sets it from measured re-simulation of its real data."""
    paper_episodes: ClassVar[Mapping[str, int]] = MappingProxyType({})
    """The paper's dataset sizes (rollouts): ``"real"`` and one per novel level (imaginary);
    the profiles scale them (:mod:`imaginebench.config`).  Empty: sizes must be given."""
    profile_sizes: ClassVar[Mapping[str, Mapping[str, int]]] = MappingProxyType({})
    """Sizes a profile takes from this card instead of scaling the paper's: ``{profile name:
    {key: n}}``, keys ``real`` (real train episodes), ``upper_bound`` (expert episodes of a novel
    level), ``rephrase``/``easy``/``hard`` (imaginary episodes) and ``train_steps`` (offline RL
    gradient steps).  Each entry is chosen by a measured learning curve named next to it; the
    profile's explicit per-env sizes still come first (:meth:`imaginebench.config.Profile.episodes`)."""
    algo_defaults: ClassVar[Mapping[str, Mapping[str, Any]]] = MappingProxyType({})
    """Settings a reference algorithm takes on this domain instead of its defaults: ``{algorithm
    registry name: {config field: value}}`` (e.g. ``{"bc": {"lr_decay": "cosine"}}``).  Each entry
    is chosen by a measurement named next to it; a run's own ``--set`` options still come last
    (:meth:`imaginebench.training.spec.ResolvedRun.config`)."""
    paper_quality: ClassVar[Mapping[str, tuple[float, float, float]]] = MappingProxyType({})
    """The original paper's quality of its imagined rollouts per novel level (consistency,
    transition, legality), shown beside ours in the report; empty where it published none."""
    eval_envs: ClassVar[int | None] = None
    """Most environments one evaluator keeps open at once (``None``: no cap beyond the
    evaluator's pool): for simulators whose environments are large in memory, since a 3-seed
    run holds an evaluator per seed and level."""
    trained_experts: ClassVar[str | None] = None
    """``"module:attribute"`` of the domain's :class:`TrainedExperts` when its expert is made of
    learned policies (``imaginebench experts`` trains and lists them); ``None``: a scripted expert.
    Imported only when asked for, so the card stays free of training code."""

    def __init__(self) -> None:
        built = self._build_tasks()
        self._tasks: dict[str, tuple[Task, ...]] = {lv: tuple(built.get(lv, ())) for lv in TASK_LEVELS}
        self._by_name: dict[str, Task] = {}
        for lv, tasks in self._tasks.items():
            for task in tasks:
                if task.name in self._by_name:
                    raise ValueError(f"{self.env_id}: duplicate task name {task.name!r}")
                if task.level != lv:
                    raise ValueError(f"{self.env_id}: task {task.name!r} listed under {lv!r}")
                self._by_name[task.name] = task

    @abc.abstractmethod
    def _build_tasks(self) -> Mapping[str, Sequence[Task]]:
        """Tasks keyed by ``"train"``, ``"easy"`` and ``"hard"``."""

    def tasks(self, level: str) -> tuple[Task, ...]:
        """Tasks evaluated at ``level`` (``rephrase`` shares the ``train`` tasks)."""
        check_level(level)
        return self._tasks["train" if level == "rephrase" else level]

    def task(self, name: str, level: str | None = None) -> Task:
        """Look a task up by name (optionally restricted to ``level``'s tasks)."""
        pool = {t.name: t for t in self.tasks(level)} if level is not None else self._by_name
        if name not in pool and name in self._by_name:
            raise ValueError(f"{self.env_id} task {name!r} belongs to the {self._by_name[name].level!r} level, "
                             f"not {level!r}; make the env with level={self._by_name[name].level!r}.")
        if name not in pool:
            raise choice_error(f"{self.env_id} task", name, sorted(pool))
        return pool[name]

    def instruction_bank(self, level: str) -> tuple[str, ...]:
        """Every phrasing an episode at ``level`` can be given (sorted, each once)."""
        return tuple(sorted({text for task in self.tasks(level) for text in task.bank(level)}))

    def task_horizon(self, task: Task) -> int:
        return task.horizon if task.horizon is not None else self.horizon

    def state_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lowest and highest value of each state entry that the simulator produces (the env's
        observation space); unbounded (±inf) unless a domain knows its bounds."""
        high = np.full(self.state_dim, np.inf)
        return -high, high

    def initial_progress(self, task: Task, state: np.ndarray) -> np.ndarray:
        """Progress record at the start of an episode (default: the initial state)."""
        return np.asarray(state, dtype=np.float64).copy()

    @abc.abstractmethod
    def outcome(
        self,
        task: Task,
        state: np.ndarray,
        action: np.ndarray | int,
        next_state: np.ndarray,
        progress: np.ndarray,
    ) -> StepOutcome:
        """Success, reward and new progress of ``state --action--> next_state``. Pure."""

    @abc.abstractmethod
    def holds(self, task: Task, state: np.ndarray) -> bool:
        """Whether ``task``'s goal already holds in ``state`` alone (a reset never starts where it
        does; tasks whose rules need history hold nowhere at the start). Pure."""

    def distance(self, task: Task, state: np.ndarray, progress: np.ndarray) -> float:
        """How far ``state`` is from ``task``'s goal (0 on the success set), given the episode's
        progress record; the reward's shaping term is its decrease.  Domains whose rules are not a
        distance (e.g. average speeds) do not provide one."""
        raise NotImplementedError(f"{self.env_id} has no task distance: its success rules are not distances.")

    @abc.abstractmethod
    def legality_errors(self, state: np.ndarray) -> list[str]:
        """Why ``state`` is not physically valid (bounds, overlaps, discrete values); empty when
        it is. Pure."""

    def is_legal(self, state: np.ndarray) -> bool:
        """Whether ``state`` is physically valid: :meth:`legality_errors` is empty (domains may
        override it with a faster test that gives the same answer). Pure."""
        return not self.legality_errors(state)

    def paper_transition_ok(self, state: np.ndarray, next_state: np.ndarray) -> bool | None:
        """The original benchmark's own (looser) test of an imagined transition, where it had one
        (``imagine quality`` reports it beside ours); ``None``: no such test."""
        return None

    def complete_states(self, states: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
        """``(N, D)`` states with the entries that the layout *defines* as functions of other
        entries recomputed from those (e.g. a carried object's colour and cell), or that it fixes
        for a whole episode given the episode's real initial state (``starts``, ``(N, D)``, row
        for row: e.g. which entities exist); identity by default.  Real states are unchanged;
        generation applies it to imagined states so that a model is not asked to regress a copy.
        Pure; never reads the simulator or the task."""
        return np.asarray(states)

    def relation_features(self, states: np.ndarray) -> np.ndarray | None:
        """``(..., D)`` states -> ``(..., F)`` 0/1 facts about which entities' cells coincide or
        touch (e.g. the agent stands on an object): equalities of entries, which a linear state
        embedding cannot express.  The rollout model can add them to its state embedding
        (``imagine train --relations``).  ``None`` (the default): the domain has none.  Pure."""
        return None

    def symmetries(self) -> tuple[str, ...]:
        """Names of maps that turn any real episode of a train task into another exact episode
        of the same task and instruction (e.g. a rotation of a square room); none by default.
        The rollout model's fine-tuning can draw them as data augmentation."""
        return ()

    def transform_episode(self, states: np.ndarray, actions: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
        """The image of an episode's states and actions under symmetry ``name``."""
        raise choice_error(f"{self.env_id} symmetry", name, self.symmetries())

    def outcome_batch(
        self,
        tasks: Sequence[Task],
        states: np.ndarray,
        actions: np.ndarray,
        next_states: np.ndarray,
        progress: Sequence[np.ndarray],
    ) -> BatchOutcome:
        """:meth:`outcome` of ``N`` rows at once: row ``i`` is ``states[i] --actions[i]-->
        next_states[i]`` for ``tasks[i]`` with ``progress[i]``.

        ``states`` and ``next_states`` are ``(N, state_dim)``; ``actions`` is ``(N,)`` for
        discrete domains and ``(N, action_dim)`` otherwise.  This default calls
        :meth:`outcome` once per row; domains override it with array code that gives the
        same answers.
        """
        states, actions, next_states = self._check_batch(tasks, states, actions, next_states, progress)
        rows = [
            self.outcome(task, states[i], actions[i], next_states[i], progress[i])
            for i, task in enumerate(tasks)
        ]
        return BatchOutcome(
            success=np.array([row.success for row in rows], dtype=bool),
            reward=np.array([row.reward for row in rows], dtype=np.float64),
            progress=[row.progress for row in rows],
        )

    def _outcome_batch_by_task(
        self,
        tasks: Sequence[Task],
        states: np.ndarray,
        actions: np.ndarray,
        next_states: np.ndarray,
        progress: Sequence[np.ndarray],
        progress_dim: int,
        score_rows: Callable[[Task, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]],
    ) -> BatchOutcome:
        """:meth:`outcome_batch` for domains whose rules are array code per task: rows grouped by
        task (a group shares its family and parameters), each group scored by
        ``score_rows(task, states, next_states, progress) -> (success, reward, next progress)``,
        results in the rows' order; progress records of ``progress_dim`` values each."""
        states, _, next_states = self._check_batch(tasks, states, actions, next_states, progress)
        n = len(tasks)
        p = np.asarray(progress, dtype=np.float64)
        if p.ndim == 0 or len(p) != n or p.size != n * progress_dim:  # each record reshapes, as per row
            raise ValueError(f"{self.env_id}: expected progress of shape ({n}, {progress_dim}), got {p.shape}")
        p = p.reshape(n, progress_dim)
        success = np.zeros(n, dtype=bool)
        reward = np.zeros(n, dtype=np.float64)
        next_p = np.zeros((n, progress_dim), dtype=np.float64)
        distinct, codes = index_tasks(tasks)
        for k, task in enumerate(distinct):
            rows = slice(None) if len(distinct) == 1 else np.flatnonzero(codes == k)
            success[rows], reward[rows], next_p[rows] = score_rows(task, states[rows], next_states[rows], p[rows])
        return BatchOutcome(success=success, reward=reward, progress=list(next_p))

    def is_legal_batch(self, states: np.ndarray) -> np.ndarray:
        """:meth:`is_legal` of every row of ``states`` (``(N, state_dim)``) as an ``(N,)`` bool
        array; rows with a non-finite value are illegal.  This default calls :meth:`is_legal`
        once per finite row."""
        states = self._check_states("states", states, None)
        legal = np.isfinite(states).all(axis=1)
        for i in np.flatnonzero(legal):
            legal[i] = bool(self.is_legal(states[i]))
        return legal

    def untouched_steps(self, states: np.ndarray) -> np.ndarray:
        """``(T,)`` bool over a rollout's ``(T+1, state_dim)`` states: which steps are not
        physically possible given the rollout so far, beyond each state being legal (e.g. an
        object moves with nothing touching it) — a pure function of the states.  The honest
        filter rejects a rollout with any.  None by default: the domain's rules are per state."""
        states = self._check_states("states", states, None)
        return np.zeros(max(len(states) - 1, 0), dtype=bool)

    def unpowered(self, states: np.ndarray, actions: np.ndarray) -> bool:
        """Whether a rollout's own actions could not have produced its motion, judged without the
        simulator (e.g. by a dynamics model fit on real train data).  The honest filter rejects a
        rollout for which this holds.  ``False`` by default: the domain has no such check."""
        return False

    def _check_states(self, what: str, states: np.ndarray, n: int | None) -> np.ndarray:
        """``states`` as a float64 ``(n, state_dim)`` array (any ``n`` when ``None``), else ``ValueError``."""
        arr = np.asarray(states, dtype=np.float64)
        if arr.shape == (0,) and not n:  # an empty list
            arr = arr.reshape(0, self.state_dim)
        rows = n if n is not None else len(arr) if arr.ndim == 2 else -1
        if arr.shape != (rows, self.state_dim):
            expected = f"({'N' if n is None else n}, {self.state_dim})"
            raise ValueError(f"{self.env_id}: expected {what} of shape {expected}, got {arr.shape}")
        return arr

    def _check_batch(
        self,
        tasks: Sequence[Task],
        states: np.ndarray,
        actions: np.ndarray,
        next_states: np.ndarray,
        progress: Sequence[np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Validated ``(states, actions, next_states)`` of a batch of ``len(tasks)`` rows."""
        n = len(tasks)
        states = self._check_states("states", states, n)
        next_states = self._check_states("next_states", next_states, n)
        actions = np.asarray(actions)
        expected = (n,) if self.discrete_actions else (n, self.action_dim)
        if actions.size == 0 and n == 0:
            actions = actions.reshape(expected)
        if actions.shape != expected:
            raise ValueError(f"{self.env_id}: expected actions of shape {expected}, got {actions.shape}")
        if len(progress) != n:
            raise ValueError(f"{self.env_id}: expected progress of length {n}, got {len(progress)}")
        return states, actions, next_states

    def score_rollout(
        self, task: Task, states: np.ndarray, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rewards and per-step success of a rollout of ``T`` actions and ``T+1`` states."""
        states = np.asarray(states)
        n = len(actions)
        if states.shape != (n + 1, self.state_dim):
            raise ValueError(
                f"{self.env_id}: expected states of shape ({n + 1}, {self.state_dim}) for "
                f"{n} actions, got {states.shape}"
            )
        progress = self.initial_progress(task, states[0])
        rewards = np.zeros(n, dtype=np.float32)
        success = np.zeros(n, dtype=bool)
        for t in range(n):
            out = self.outcome(task, states[t], actions[t], states[t + 1], progress)
            rewards[t], success[t], progress = out.reward, out.success, out.progress
        return rewards, success

    def __repr__(self) -> str:
        counts = ", ".join(f"{lv}={len(self.tasks(lv))}" for lv in TASK_LEVELS)
        return f"{type(self).__name__}({self.env_id}: {counts})"
